"""CC-2: f(out, ins): one pointer per operand, a tuple operand as its array of element pointers (nested)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ._calls import call_and_check


@pytest.mark.requirement("CC-2", "CC-5")
@pytest.mark.targets(conventions=("host", "host-unified"), failing=False)
@given(data=st.data())
def test_host_targets_match_the_reference(custom_calls, target, data) -> None:
    call_and_check(data, custom_calls, target, "CC-2")
