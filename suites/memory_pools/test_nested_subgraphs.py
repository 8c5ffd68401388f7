"""FLOW-4: referenced subgraphs that reference others in turn, compared with the reference: an IF
inside a WHILE's body and a WHILE inside an IF's branch (two deep), which a driver declaring IF
and WHILE prepares and runs; and the references NNAPI refuses, a cycle and a branch whose inputs
IF does not pass.

A test file of its own: a driver that refuses nesting runs the flat models of
`test_control_flow` right, and a run for FLOW-4 collects only this file.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.hal import Capabilities, Device, DriverError, ErrorStatus, Model, OperandType, OperationType, Subgraph
from harness.integration.skips import not_applicable
from harness.judging.builders import ModelBuilder
from harness.judging.oracle import assert_scenario_conforms, checking
from harness.judging.verdict import require
from harness.strategies import scenarios
from harness.strategies.control_flow import buildable, control_flow_models

Op = OperationType
I32, BOOL8 = OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8


@pytest.mark.requirement("FLOW-4")
@pytest.mark.operations(Op.IF, Op.WHILE)
@pytest.mark.parametrize("kind", ["if_in_while", "while_in_if"])
@given(data=st.data())
def test_nested_subgraphs_run_as_the_reference_runs_them(driver, reference, capabilities, kind, data) -> None:
    for op in (Op.IF, Op.WHILE):
        if op not in capabilities.operations:
            not_applicable("operations", f"the driver does not declare {op.name}")
        if not buildable(capabilities, op):
            not_applicable("operand_types", f"the driver declares {op.name}, but not what the models are built of: "
                                            "TENSOR_BOOL8 and TENSOR_INT32, with ADD, SUB or MUL and LESS on "
                                            "TENSOR_INT32")
    scenario = data.draw(scenarios(capabilities, models=control_flow_models(capabilities, kind)), label="scenario")
    # a wrong value fails FLOW-4 itself: the branch and loop rules have tests of their own (FLOW-1, FLOW-2)
    assert_scenario_conforms("FLOW-4", scenario, reference, driver, attributed=False)


def _if_model(branches: tuple[Subgraph, ...], then: int, otherwise: int) -> Model:
    """IF(c, then, otherwise, c, x) of a TENSOR_BOOL8 [1] c and a TENSOR_INT32 [1] x, giving a
    TENSOR_INT32 [1], over the referenced subgraphs ``branches``."""
    main = ModelBuilder()
    c, x = main.input(BOOL8, (1,)), main.input(I32, (1,))
    main.operation(Op.IF, [c, main.reference(then), main.reference(otherwise), c, x], I32, (1,))
    return main.build(referenced=branches)


def _branch(inner: tuple[int, int] | None = None, *, inputs: int = 2) -> Subgraph:
    """A branch of inputs (c, x), or (c, x, x) with ``inputs`` 3, giving x + x, or an IF of ``inner``
    (its then and else references) on (c, x)."""
    b = ModelBuilder()
    c, x = b.input(BOOL8, (1,)), b.input(I32, (1,))
    for _ in range(inputs - 2):
        b.input(I32, (1,))
    if inner is None:
        b.operation(Op.ADD, [x, x, b.scalar(0)], I32, (1,))
    else:
        b.operation(Op.IF, [c, b.reference(inner[0]), b.reference(inner[1]), c, x], I32, (1,))
    return b.subgraph()


def _prepared_status(driver: Device, model: Model) -> ErrorStatus:
    try:
        with checking("FLOW-4"):
            driver.prepare_model(model)
        return ErrorStatus.NONE
    except DriverError as error:
        return error.status
    finally:
        for pool in model.pools:
            pool.close()


def _require_if(capabilities: Capabilities) -> None:
    if Op.IF not in capabilities.operations:
        not_applicable("operations", "the driver does not declare IF")
    if not {I32, BOOL8} <= capabilities.types_of(Op.IF) or Op.ADD not in capabilities.operations or \
            I32 not in capabilities.types_of(Op.ADD):
        not_applicable("operand_types", "the models are built of IF with TENSOR_BOOL8 and TENSOR_INT32 operands "
                                        "and ADD on TENSOR_INT32, which the driver does not all declare")


@pytest.mark.requirement("FLOW-4")
@pytest.mark.operations(Op.IF)
def test_subgraphs_referencing_each_other_in_a_cycle_are_invalid(driver, capabilities) -> None:
    _require_if(capabilities)
    # subgraph 0's IF runs subgraph 1, whose IF runs subgraph 0: recursion, which NNAPI forbids
    model = _if_model((_branch((1, 1)), _branch((0, 0))), 0, 0)
    status = _prepared_status(driver, model)
    require(status == ErrorStatus.INVALID_ARGUMENT, "FLOW-4",
            f"a model whose referenced subgraphs 0 and 1 reference each other was prepared with {status.name}; "
            "a cycle of references is INVALID_ARGUMENT")


@pytest.mark.requirement("FLOW-4")
@pytest.mark.operations(Op.IF)
def test_a_branch_taking_other_inputs_than_if_passes_is_invalid(driver, capabilities) -> None:
    _require_if(capabilities)
    # the else branch takes three inputs where IF passes two
    model = _if_model((_branch(), _branch(inputs=3)), 0, 1)
    status = _prepared_status(driver, model)
    require(status == ErrorStatus.INVALID_ARGUMENT, "FLOW-4",
            f"an IF passing 2 inputs to an else branch of 3 was prepared with {status.name}; a branch whose inputs "
            "do not match IF's is INVALID_ARGUMENT")
