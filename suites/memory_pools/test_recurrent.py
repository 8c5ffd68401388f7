"""POOL-2: each recurrent operation (RNN, SVDF, the sequence RNNs, the LSTMs) on its own, compared
with the reference; STATE-1: a recurrent operation's state passes only through its operands.

The families' tests (`test_layouts.test_each_operation_family`) share a run's examples among every
family; here every recurrent operation the driver declares gets examples of its own, so each rule
of a cell (a gate's weights, CIFG, peepholes, projection, clipping, layer normalization) and of its
run over time (time-major or not, the backward direction) is checked in every run.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from harness.api.hal import numpy_dtype
from harness.integration.skips import not_applicable
from harness.judging.oracle import assert_conforms, assert_scenario_conforms, checking, execute_scenario, run_scenario
from harness.strategies import request_layouts, scenarios
from harness.strategies.recurrent import (FAMILIES, STATE_INPUTS, operation_types, single_operation_models,
                                          stateful_models, stateful_operations)

OPERATIONS = [op for ops in FAMILIES.values() for op in ops]
#: Executions of one prepared model, each fed the state the one before returned.
STEPS = 3


def _declared(capabilities, op) -> None:
    if op not in capabilities.operations:
        not_applicable("operations", f"the driver does not declare {op.name}")
    if not operation_types(capabilities, op):
        not_applicable("operand_types", f"the driver declares {op.name} on no type NNAPI gives it (TENSOR_FLOAT32 or "
                                        "TENSOR_FLOAT16 with the INT32, BOOL and clip scalars it needs besides; "
                                        "the quantized LSTMs: the quantized types and scalars NeuralNetworks.h "
                                        "gives them)")


@pytest.mark.requirement("POOL-2")
@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
@given(data=st.data())
def test_each_recurrent_operation(driver, reference, capabilities, op, data) -> None:
    _declared(capabilities, op)
    scenario = data.draw(scenarios(capabilities, models=single_operation_models(capabilities, op)), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)


@pytest.mark.requirement("STATE-1")
@pytest.mark.parametrize("op", list(STATE_INPUTS), ids=lambda op: op.name)
@given(data=st.data())
def test_state_passes_only_through_operands(driver, reference, capabilities, op, data) -> None:
    """One prepared model executed step by step as an app runs a recurrent network: each execution
    a new input, its state inputs the state outputs of the execution before (the reference's, so
    that each step is judged on its own); each step is compared with the reference, then the first
    request is executed again and must give what it gave first (STATE-1: nothing of the steps
    between stays in the prepared model)."""
    _declared(capabilities, op)
    if op not in stateful_operations(capabilities):
        not_applicable("operations", f"the driver declares {op.name} on no type a model of it can be built with")
    stateful = data.draw(stateful_models(capabilities, op, STEPS), label="model")
    states: dict[int, np.ndarray] = {}
    requests = []
    for number in range(1, STEPS + 1):
        case = stateful.step(number, states)
        scenario = data.draw(request_layouts(case, capabilities, allow_insufficient=False), label=f"request {number}")
        expected = run_scenario(reference, scenario)
        if not expected.ok:  # the reference refuses no model of these strategies: a harness error, shown
            raise AssertionError(f"the reference failed step {number}: {expected.summary()}")
        requests.append((scenario, expected))
        outputs = scenario.subgraph.output_indexes
        states = {at: np.frombuffer(expected.outputs[out] or b"", numpy_dtype(scenario.subgraph.operands[outputs[out]].type))
                  .reshape(case.output_shapes[out]).copy() for at, out in stateful.feedback}
    model = requests[0][0].build_model()
    try:
        with checking("STATE-1"):
            prepared = driver.prepare_model(model)
        again = requests[:1]
        for number, (scenario, expected) in enumerate([*requests, *again], 1):
            note(f"execution {number} of one prepared model"
                 f"{' (the first request again)' if number > STEPS else ''}")
            with checking("STATE-1"):
                actual = execute_scenario(prepared, scenario)
            # no culprit's run (devices): what the prepared model kept is on trial, which a fresh one lacks
            assert_conforms("STATE-1", scenario, expected, actual)
    finally:
        for pool in model.pools:
            pool.close()
