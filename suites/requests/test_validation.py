"""REQ-1, REQ-2: every valid generated request, mutated one way at a time, judged as the reference judges it."""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from harness.judging.oracle import assert_scenario_conforms
from harness.strategies import scenarios
from harness.strategies.models import several_output_cases
from harness.strategies.mutations import MUTATIONS, mutated_requests

#: every test here runs generated models (none applies to a driver whose declarations build none)
pytestmark = pytest.mark.usefixtures("models_can_be_built")


@pytest.mark.requirement("REQ-1", "REQ-2")
@given(data=st.data())
def test_mutated_requests(driver, reference, capabilities, data) -> None:
    _, (name, requirement, mutated) = data.draw(mutated_requests(scenarios(capabilities, allow_insufficient=False)),
                                                label="valid scenario and its mutation")
    note(f"mutation {name} breaks {requirement}")
    assert_scenario_conforms(requirement, mutated, reference, driver)


@pytest.mark.requirement("REQ-1", "REQ-2")
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@given(data=st.data())
def test_each_mutation(driver, reference, capabilities, mutation, data) -> None:
    """Every mutation kind is tried in every run, not only when the draw picks it.  An argument is
    left out of models with two inputs and two outputs: leaving out a model's only one shows
    nothing of a driver that checks only that some argument is given (VTS leaves out each in turn)."""
    models = several_output_cases(capabilities) if mutation.startswith("remove-") else None
    _, (name, requirement, mutated) = data.draw(
        mutated_requests(scenarios(capabilities, allow_insufficient=False, models=models), (mutation,)),
        label="valid scenario and its mutation")
    assert_scenario_conforms(requirement, mutated, reference, driver)
