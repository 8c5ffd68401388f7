"""CC-5: outputs hold what the call wrote, scratch leaves may hold anything, and nothing is
written outside the output buffers (red zones around every leaf; inputs mapped read-only)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ._calls import call_and_check


@pytest.mark.requirement("CC-5")
@pytest.mark.targets(failing=False)
@given(data=st.data())
def test_nothing_is_written_outside_outputs(custom_calls, target, data) -> None:
    call_and_check(data, custom_calls, target, "CC-5")
