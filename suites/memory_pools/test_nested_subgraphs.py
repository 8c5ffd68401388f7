"""FLOW-4: referenced subgraphs that reference others in turn, compared with the reference: an IF
inside a WHILE's body and a WHILE inside an IF's branch (two deep), which a driver declaring IF
and WHILE prepares and runs.

A test file of its own: a driver that refuses nesting runs the flat models of
`test_control_flow` right, and a run for FLOW-4 collects only this file.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.hal import OperationType
from harness.integration.skips import not_applicable
from harness.judging.oracle import assert_scenario_conforms
from harness.strategies import scenarios
from harness.strategies.control_flow import buildable, control_flow_models

Op = OperationType


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
