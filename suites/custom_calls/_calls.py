"""The step every custom-call test shares: draw a target, a case and operands; call; check."""

from __future__ import annotations

from hypothesis import event, note
from hypothesis import strategies as st

from harness.judging.custom_calls import assert_call_conforms, describe_case, run_case
from harness.strategies.custom_calls import call_cases, operand_values


def call_and_check(data: st.DataObject, custom_calls, target, requirement: str, case=None):
    case = case if case is not None else data.draw(call_cases(target.cases), label="case")
    values = data.draw(operand_values(case.operands), label="operand values")
    event(f"{target.name} on {target.platform}")
    note(describe_case(target, case))
    outcome = run_case(custom_calls, target, case, values)
    assert_call_conforms(requirement, target, case, values, outcome)
    return outcome
