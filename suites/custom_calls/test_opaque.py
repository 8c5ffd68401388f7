"""CC-4: opaque arrives byte-exact and length-delimited: empty, with NULs, large."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.judging.custom_calls import assert_call_conforms, run_case

from ._calls import OPAQUE_EDGE_CASES, call_and_check, echo_case


@pytest.mark.requirement("CC-4", "CC-5")
@pytest.mark.targets(names=("echo_opaque",))
@given(data=st.data())
def test_opaque_bytes_arrive_exactly(custom_calls, target, data) -> None:
    call_and_check(data, custom_calls, target, "CC-4")


@pytest.mark.requirement("CC-4")
@pytest.mark.parametrize("opaques", OPAQUE_EDGE_CASES.values(), ids=OPAQUE_EDGE_CASES.keys())
@pytest.mark.targets(names=("echo_opaque",))
def test_opaque_edge_cases(custom_calls, target, opaques) -> None:
    for opaque in opaques:
        case = echo_case(opaque)
        assert_call_conforms("CC-4", target, case, (), run_case(custom_calls, target, case, ()))
