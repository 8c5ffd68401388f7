"""Quantized results are exact except at rounding ties.

The general oracle allows quantized outputs to differ by one step (rounding modes differ at
exact ties).  Away from ties there is no such freedom, so a driver that rounds one step off
in one direction must be caught: here every element whose real value is not within 1e-6
of a tie must equal the reference's byte for byte.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import ConformanceError
from harness.hal import OperandType, OperationType, numpy_dtype
from harness.oracle import assert_conforms, run_scenario
from harness.strategies import arrays, quantization
from harness.strategies.domains import binary_model, request
from harness.skips import not_applicable

UFUNCS = {OperationType.ADD: np.add, OperationType.SUB: np.subtract, OperationType.MUL: np.multiply}


@pytest.mark.requirement("POOL-2")
@given(data=st.data())
def test_quantized_arithmetic_is_exact_away_from_ties(driver, reference, capabilities, data) -> None:
    types = [t for t in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED) if t in capabilities.operand_types]
    ops = [op for op in UFUNCS if op in capabilities.operations]
    if not types or not ops:
        not_applicable("operand_types", "the driver declares no quantized arithmetic (quantized types with ADD, SUB or MUL)")
    type = data.draw(st.sampled_from(types), label="type")
    op = data.draw(st.sampled_from(ops), label="operation")
    quant = data.draw(quantization(type), label="quantization")
    shape = (data.draw(st.integers(4, 16), label="length"),)
    a, b = data.draw(arrays(type, shape), label="a"), data.draw(arrays(type, shape), label="b")
    model = binary_model(type, shape, quant, op)
    scenario = request(model, [a, b], [a.nbytes], label=f"{op.name} {type.name}")
    expected, actual = run_scenario(reference, scenario), run_scenario(driver, scenario)
    assert_conforms("POOL-2", scenario, expected, actual)
    scale, zero_point = quant
    real = UFUNCS[op]((a.astype(np.float64) - zero_point) * scale, (b.astype(np.float64) - zero_point) * scale) / scale
    away_from_ties = np.abs(np.abs(real - np.floor(real)) - 0.5) > 1e-6
    want = np.frombuffer(expected.outputs[0], numpy_dtype(type))
    got = np.frombuffer(actual.outputs[0], numpy_dtype(type))
    wrong = away_from_ties & (want != got)
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise ConformanceError(
            f"[POOL-2] {op.name} {type.name} scale={scale} zp={zero_point}: element {i} (real value {real[i]:.4f} "
            f"steps, not a tie) is {got[i]}, the reference's {want[i]}; {int(wrong.sum())} of {len(want)} differ")
