"""Quantized results: within one step of the reference per element, and unbiased (CHOICE-7).

A correct driver may round differently from the reference near ties (fixed-point multipliers,
float32 arithmetic), so each element may be one step off.  What it may not do is round one way
systematically: over a tensor large enough to tell (at least `harness.judging.bounds.BIAS_MIN_ELEMENTS`
elements) the mean signed error stays within `harness.judging.bounds.BIAS_LIMIT` of a step, as NNAPI
CTS's bias criterion requires.  A driver that truncates is half a step off on average.  The mean is
judged here only, over a uniform sample of values (`Scenario.sampled_values`): elsewhere values are
chosen by a search, and the mean over them says nothing the per-element step does not.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.judging.bounds import BIAS_MIN_ELEMENTS
from harness.api.hal import OperandType, OperationType, numpy_dtype
from harness.judging.oracle import assert_scenario_conforms
from harness.integration.skips import not_applicable
from harness.strategies import quantization
from harness.judging.builders import ModelBuilder
from harness.judging.scenario import Scenario
from harness.strategies.domains import request
from harness.strategies.models import family_types
from harness.strategies.values import integers, sampled

ARITHMETIC = (OperationType.ADD, OperationType.SUB, OperationType.MUL)
QUANTIZED = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


@pytest.mark.requirement("POOL-2")
@pytest.mark.operations(*ARITHMETIC)
@given(data=st.data())
def test_quantized_arithmetic_is_within_a_step_and_unbiased(driver, reference, capabilities, data) -> None:
    types = family_types("elementwise", capabilities, QUANTIZED)  # with the INT32 scalar of the activation
    ops = [op for op in ARITHMETIC if op in capabilities.operations]
    if not types or not ops:
        not_applicable("operand_types" if ops else "operations", "the driver declares no quantized arithmetic "
                       "(quantized types with ADD, SUB or MUL, and INT32 for its activation)")
    type = data.draw(sampled(tuple(types)), label="type")
    op = data.draw(sampled(tuple(ops)), label="operation")
    quant = data.draw(quantization(type), label="quantization")
    shape = (data.draw(integers(2 * BIAS_MIN_ELEMENTS, 8 * BIAS_MIN_ELEMENTS), label="length"),)
    # Values near the zero point, so that most results are rounded rather than saturated: a uniform
    # sample from a drawn seed, never values chosen one by one.  A correct driver may be a step off
    # at some values (CHOICE-7); a search that picked only those, or one of them many times, would
    # make any such driver look biased.
    low, high = np.iinfo(numpy_dtype(type)).min, np.iinfo(numpy_dtype(type)).max
    sample = np.random.default_rng(data.draw(integers(0, 2**32 - 1), label="values seed"))
    a, b = (sample.integers(max(low, quant[1] - 12), min(high, quant[1] + 12), shape, numpy_dtype(type), endpoint=True)
            for _ in range(2))
    # An output scale that is not the inputs': every result then has a fractional part to round.
    # MUL's is above the inputs' product, as NNAPI requires (output_scale > input1_scale * input2_scale).
    ratios = tuple(r for r in (0.3, 0.7, 1.3, 2.6) if op != OperationType.MUL or quant[0] * r > quant[0] ** 2)
    out_scale = quant[0] * data.draw(sampled(ratios), label="output scale / input scale")
    builder = ModelBuilder()
    x, y = builder.input(type, shape, *quant), builder.input(type, shape, *quant)
    builder.operation(op, [x, y, builder.scalar(0)], type, shape, out_scale, quant[1])
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=(f"{op.name} {type.name} scale={quant[0]:g}->{out_scale:g}",))
    scenario = replace(request(model, [a, b], [a.nbytes], label=f"{op.name} {type.name}"), sampled_values=True)
    assert_scenario_conforms("POOL-2", scenario, reference, driver)
