"""Each request mutation (harness/strategies/mutations.py) breaks the rule it names: the reference,
which reads like SPEC, refuses the mutated request citing that rule.  A mutation that broke
something else (an operation's own limit, say) would blame REQ-2 for what SPEC does not ask of a
request, and a correct driver that differs from the reference there would fail under REQ-2."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from harness.api.hal import ErrorStatus
from harness.judging.oracle import describe_scenario, run_scenario
from harness.strategies import scenarios
from harness.strategies.mutations import MUTATIONS, mutated_requests
from reference_driver import ReferenceDevice

_REFERENCE = ReferenceDevice()


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_request_is_refused_for_the_rule_its_mutation_names(mutation: str, data: st.DataObject) -> None:
    _, (name, requirement, mutated) = data.draw(
        mutated_requests(scenarios(_REFERENCE.capabilities(), allow_insufficient=False), (mutation,)),
        label="valid scenario and its mutation")
    note(describe_scenario(mutated))
    outcome = run_scenario(_REFERENCE, mutated)
    # INVALID_ARGUMENT, or GENERAL_FAILURE where an output's given shape cannot hold the produced one
    assert outcome.status != ErrorStatus.NONE and outcome.rule == requirement, (
        f"mutation {name} names {requirement}; the reference answered {outcome.status.name} "
        f"[{outcome.rule or 'no rule'}] at {outcome.stage}: {outcome.message}")
