"""FLOW-1 to FLOW-3: IF and WHILE running referenced subgraphs, compared with the reference, and
a WHILE that never ends cut off by the loop timeout its execution sets (HAL 1.3's
loopTimeoutDuration).

The models (`harness.strategies.control_flow`) compute exact TENSOR_INT32 values, so a wrong
branch or a wrong number of iterations is a wrong output.  A wrong output here fails the test's
own rule, not the value rule `culprit` would name: the operations inside are right wherever the
families' tests draw them, and what differs is which of them ran, and how often.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.hal import Capabilities, DriverError, ErrorStatus, Model, OperandType, OperationType
from harness.integration.skips import not_applicable
from harness.judging.builders import ModelBuilder, pack_request
from harness.judging.oracle import assert_scenario_conforms, checking
from harness.judging.verdict import require
from harness.strategies import scenarios
from harness.strategies.control_flow import buildable, control_flow_models

Op = OperationType
I32, BOOL8 = OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
#: The loop timeout the test's execution sets (HAL 1.3's loopTimeoutDuration): short, so that a
#: correct driver's run of the endless loop costs little, and far below NNAPI's default of 2 s, so
#: that a driver applying the default whatever the execution asks is seen too.
LOOP_TIMEOUT_S = 0.2
#: How long after the loop timeout the execution may end: a loop timeout is fuzzy (NeuralNetworks.h),
#: and the machine may be loaded.
LOOP_TIMEOUT_GRACE_S = 1.0
#: The statuses of an execution aborted for a deadline (HAL 1.3): the loop timeout is one.
LOOP_TIMEOUT_STATUSES = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)


def _require(capabilities: Capabilities, *ops: OperationType) -> None:
    for op in ops:
        if op not in capabilities.operations:
            not_applicable("operations", f"the driver does not declare {op.name}")
        if not buildable(capabilities, op):
            not_applicable("operand_types", f"the driver declares {op.name}, but not what its models are built of: "
                                            "TENSOR_BOOL8 and TENSOR_INT32, with ADD, SUB or MUL (and LESS for "
                                            "WHILE) on TENSOR_INT32")


@pytest.mark.requirement("FLOW-1")
@pytest.mark.operations(Op.IF)
@given(data=st.data())
def test_if_runs_the_branch_its_condition_chooses(driver, reference, capabilities, data) -> None:
    _require(capabilities, Op.IF)
    scenario = data.draw(scenarios(capabilities, models=control_flow_models(capabilities, "if")), label="scenario")
    assert_scenario_conforms("FLOW-1", scenario, reference, driver, attributed=False)


@pytest.mark.requirement("FLOW-2")
@pytest.mark.operations(Op.WHILE)
@given(data=st.data())
def test_while_runs_its_body_while_its_condition_holds(driver, reference, capabilities, data) -> None:
    _require(capabilities, Op.WHILE)
    scenario = data.draw(scenarios(capabilities, models=control_flow_models(capabilities, "while")), label="scenario")
    assert_scenario_conforms("FLOW-2", scenario, reference, driver, attributed=False)


def endless_while() -> Model:
    """WHILE i < n: i = i + d, with d an input-only operand: given d = 0 and i < n, it never ends."""
    cond = ModelBuilder()
    i, n, _ = cond.input(I32, (1,)), cond.input(I32, (1,)), cond.input(I32, (1,))
    cond.operation(Op.LESS, [i, n], BOOL8, (1,))
    body = ModelBuilder()
    i, _, d = body.input(I32, (1,)), body.input(I32, (1,)), body.input(I32, (1,))
    body.operation(Op.ADD, [i, d, body.scalar(0)], I32, (1,))
    main = ModelBuilder()
    main.values = body.values  # the body's constant (its activation) among the model's operandValues
    condition, loop = main.reference(0), main.reference(1)
    start, bound, step = main.input(I32, (1,)), main.input(I32, (1,)), main.input(I32, (1,))
    main.operation(Op.WHILE, [condition, loop, start, bound, step], I32, (1,))
    return main.build(referenced=(cond.subgraph(), body.subgraph()))


@pytest.mark.requirement("FLOW-3")
@pytest.mark.operations(Op.WHILE)
def test_a_while_that_never_ends_is_cut_off_by_the_loop_timeout(driver, capabilities) -> None:
    if Op.WHILE not in capabilities.operations:
        not_applicable("operations", "the driver does not declare WHILE")
    if not {I32, BOOL8} <= capabilities.types_of(Op.WHILE) or Op.LESS not in capabilities.operations or \
            Op.ADD not in capabilities.operations:
        not_applicable("operand_types", "the endless loop is built of LESS and ADD on TENSOR_INT32, with a "
                                        "TENSOR_BOOL8 condition, which the driver does not all declare")
    model = endless_while()
    packed, _, _ = pack_request(model, [np.asarray([0], np.int32), np.asarray([1], np.int32),
                                        np.asarray([0], np.int32)])
    request = dataclasses.replace(packed, loop_timeout_ns=int(LOOP_TIMEOUT_S * 1e9))
    try:
        # a driver that runs the loop on hangs the call: its deadline fails this requirement (SVC-2)
        with checking("FLOW-3"):
            prepared = driver.prepare_model(model)
            started = time.monotonic()
            try:
                prepared.execute(request)
                status = ErrorStatus.NONE
            except DriverError as error:
                status = error.status
            elapsed = time.monotonic() - started
    finally:
        for memory in (*model.pools, *request.pools):
            memory.close()
    allowed = " or ".join(s.name for s in LOOP_TIMEOUT_STATUSES)
    require(status in LOOP_TIMEOUT_STATUSES, "FLOW-3",
            f"a WHILE that never ends gave {status.name}; NNAPI's loop timeout aborts it with {allowed}")
    bound = LOOP_TIMEOUT_S + LOOP_TIMEOUT_GRACE_S
    require(elapsed <= bound, "FLOW-3", f"the endless WHILE was cut off after {elapsed:.1f} s, past the "
                                        f"execution's loop timeout of {LOOP_TIMEOUT_S:g} s (allowed: {bound:g} s)")
