"""CTS's accuracy criteria (test_generator's TestHarness), applied to one output.

Per element: |actual - expected| <= atol + rtol * |expected|, with
- TENSOR_FLOAT32: atol 1e-5, rtol 5 ULP of float32; with the relaxed flag, or any TENSOR_FLOAT16
  operand in the model, float16's criterion instead;
- TENSOR_FLOAT16: atol = rtol = 5 ULP of float16 (5 * 2**-10);
- every quantized type: atol 1;
- TENSOR_INT32 and TENSOR_BOOL8: exact.  (CTS allows TENSOR_INT32 one unit; SPEC CHOICE-7 says
  integer results are exact, and one unit is exactly what truncating DIV gets wrong.)
Expected values that are NaN or infinite, above 1e3 in float32 or above 1e2 in float16, are not
compared (CTS skips them).  CTS sets no bias or mean-squared-error bound for generated tests,
and neither does this.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.api.hal import OperandType

__all__ = ["Criterion", "Mismatch", "compare", "criterion_for"]

_F16_ULP = 0.0009765625
_F32_ULP = 1.1920928955078125e-7


@dataclass(frozen=True)
class Criterion:
    atol: float
    rtol: float = 0.0
    skip_above: float = float("inf")


@dataclass(frozen=True)
class Mismatch:
    """The first elements out of tolerance, for the failure message."""

    count: int
    compared: int
    first: tuple[tuple[int, float, float], ...]  # (flat index, expected, actual)
    criterion: Criterion

    def describe(self) -> str:
        shown = ", ".join(f"[{i}] expected {e:g} got {a:g}" for i, e, a in self.first)
        return (f"{self.count} of {self.compared} elements beyond atol {self.criterion.atol:g} + rtol "
                f"{self.criterion.rtol:g} x |expected|: {shown}")


def criterion_for(operand_type: OperandType, relaxed: bool, has_float16: bool) -> Criterion:
    float16 = Criterion(5 * _F16_ULP, 5 * _F16_ULP, 1e2)
    if operand_type == OperandType.TENSOR_FLOAT16:
        return float16
    if operand_type == OperandType.TENSOR_FLOAT32:
        return Criterion(float16.atol, float16.rtol, 1e3) if relaxed or has_float16 else Criterion(1e-5, 5 * _F32_ULP, 1e3)
    if operand_type in (OperandType.TENSOR_BOOL8, OperandType.TENSOR_INT32, OperandType.INT32):
        return Criterion(0.0)
    return Criterion(1.0)


def compare(expected: np.ndarray, actual: np.ndarray, criterion: Criterion) -> Mismatch | None:
    want = np.asarray(expected, np.float64).reshape(-1)
    got = np.asarray(actual, np.float64).reshape(-1)
    if want.shape != got.shape:
        return Mismatch(max(want.size, got.size), want.size, (), criterion)
    compared = np.isfinite(want) & (np.abs(want) <= criterion.skip_above)
    tolerance = criterion.atol + criterion.rtol * np.abs(want)
    with np.errstate(invalid="ignore"):
        bad = compared & ~(np.abs(got - want) <= tolerance)
    if not bad.any():
        return None
    where = np.flatnonzero(bad)[:5]
    return Mismatch(int(bad.sum()), int(compared.sum()), tuple((int(i), float(want[i]), float(got[i])) for i in where), criterion)
