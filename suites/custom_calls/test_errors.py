"""CC-6: a failure reported through the status reaches the caller with its exact message,
and a failing target never takes the caller down."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.integration.custom_calls import targets_where
from harness.strategies.values import integers

from ._calls import call_and_check


@pytest.mark.requirement("CC-6")
@pytest.mark.targets(failing=True)
@given(data=st.data())
def test_status_failures_reach_the_caller_with_their_message(custom_calls, target, data) -> None:
    call_and_check(data, custom_calls, target, "CC-6")


@pytest.mark.requirement("CC-6")
@pytest.mark.targets(failing=True)
@given(data=st.data())
def test_the_caller_keeps_working_after_failures(custom_calls, custom_call_targets, target, data) -> None:
    working = targets_where(custom_call_targets, failing=False)
    for _ in range(data.draw(integers(1, 3), label="failures first")):
        call_and_check(data, custom_calls, target, "CC-6")
    call_and_check(data, custom_calls, data.draw(st.sampled_from(working), label="then a working target"), "CC-6")
