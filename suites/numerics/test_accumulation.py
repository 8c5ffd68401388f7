"""Long sums: FULLY_CONNECTED with hundreds of terms and cancelling results (CHOICE-7).

A correct driver may sum in float32 in any order, with fused multiply-adds, or in float16 for
FLOAT16; the judge bounds each element by the number and magnitude of its terms, never by the
result alone.  Here the bias cancels the first row's sum, so results near zero have large
terms behind them: a judge relative to the result would fail a correct driver, and a driver
that loses a term or accumulates in a narrower type than its operands is still far outside.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.judging.builders import ModelBuilder
from harness.api.hal import OperandType, OperationType
from harness.judging.oracle import assert_scenario_conforms
from harness.judging.scenario import Scenario
from harness.integration.skips import not_applicable
from harness.strategies.domains import request
from harness.strategies.models import family_types
from harness.strategies.values import integers, sampled

TERMS = {OperandType.TENSOR_FLOAT32: (256, 576), OperandType.TENSOR_FLOAT16: (16, 96)}


@pytest.mark.requirement("POOL-2")
@given(data=st.data())
def test_long_sums_are_judged_by_their_terms(driver, reference, capabilities, data) -> None:
    types = family_types("fully_connected", capabilities, tuple(TERMS))  # with the INT32 scalar of the activation
    if OperationType.FULLY_CONNECTED not in capabilities.operations or not types:
        not_applicable("operations" if OperationType.FULLY_CONNECTED not in capabilities.operations else "operand_types",
                       "the driver declares no FULLY_CONNECTED on a float type (with INT32 for its activation)")
    type = data.draw(sampled(tuple(types)), label="type")
    size = data.draw(integers(*TERMS[type]), label="terms")
    batch, units = data.draw(integers(1, 3), label="batch"), data.draw(integers(1, 4), label="units")
    rng = np.random.default_rng(data.draw(integers(0, 2**32 - 1), label="value seed"))
    dtype = np.float32 if type == OperandType.TENSOR_FLOAT32 else np.float16
    x = rng.normal(0, 1, (batch, size)).astype(dtype)
    w = rng.normal(0, 1, (units, size)).astype(dtype)
    cancel = data.draw(st.booleans(), label="bias cancels the first row")
    bias = (-(x[0].astype(np.float64) @ w.T.astype(np.float64)) if cancel else rng.normal(0, 1, units)).astype(dtype)
    event(f"{type.name} {size} terms{' cancelling' if cancel else ''}")
    builder = ModelBuilder()
    inputs = builder.input(type, (batch, size))
    weights = builder.constant(type, w)
    bias_operand = builder.constant(type, bias)
    builder.operation(OperationType.FULLY_CONNECTED, [inputs, weights, bias_operand, builder.scalar(0)], type, (batch, units))
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=(f"FULLY_CONNECTED {type.name} {size} terms",))
    scenario = request(model, [x], [batch * units * x.itemsize])
    assert_scenario_conforms("POOL-2", scenario, reference, driver)
