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
and neither does this.  A RANDOM_MULTINOMIAL example (``WithMultinomialDistributionTolerance``)
is judged by its samples' distribution instead (`multinomial_mismatch`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.api.hal import OperandType

__all__ = ["Criterion", "Mismatch", "compare", "criterion_for", "multinomial_mismatch"]

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


def multinomial_mismatch(logits: np.ndarray, samples: np.ndarray, tolerance: float) -> str | None:
    """CTS's check of a RANDOM_MULTINOMIAL example (``WithMultinomialDistributionTolerance``): per batch,
    each class's share of the samples is within ``tolerance`` of its probability, softmax of the
    input's logits.  None when it is; else what is not."""
    logits = np.asarray(logits, np.float64)
    samples = np.asarray(samples)
    if logits.ndim != 2 or samples.ndim != 2 or samples.shape[0] != logits.shape[0]:
        return f"samples of shape {samples.shape} for logits of shape {logits.shape}"
    classes, drawn = logits.shape[1], samples.shape[1]
    for batch in range(logits.shape[0]):
        row = samples[batch]
        outside = row[(row < 0) | (row >= classes)]
        if outside.size:
            return f"batch {batch}: class {int(outside[0])} drawn, of {classes} classes"
        counts = np.bincount(row.astype(np.int64), minlength=classes)
        expected = np.exp(logits[batch]) / np.exp(logits[batch]).sum()
        share = counts / max(drawn, 1)
        off = np.flatnonzero(np.abs(share - expected) > tolerance)
        if off.size:
            c = int(off[0])
            return (f"batch {batch}: class {c} drawn {int(counts[c])} of {drawn} times ({share[c]:.4f}), "
                    f"probability {expected[c]:.4f} (tolerance {tolerance:g}); {off.size} classes beyond it")
    return None
