"""CC-3: f(stream, buffers, opaque, opaque_len): every operand leaf in pre-order, then the output's leaves."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.shapes import Leaf, TupleShape, leaves

from ._calls import call_and_check

# The seed's example: parameter 0 is (F32[32], (F32[64], F32[128]), F32[256]) and the output
# a tuple of two leaves, so `buffers` holds six pointers.
SEED_OPERAND = TupleShape((Leaf("float32", (32,)), TupleShape((Leaf("float32", (64,)), Leaf("float32", (128,)))),
                           Leaf("float32", (256,))))


@pytest.mark.requirement("CC-3", "CC-5")
@pytest.mark.targets(conventions=("device", "device-status"), failing=False)
@given(data=st.data())
def test_device_targets_match_the_reference(custom_calls, target, data) -> None:
    call_and_check(data, custom_calls, target, "CC-3")


@pytest.mark.requirement("CC-3")
@pytest.mark.targets(conventions=("device",), names=("tuple_concat",))
@given(data=st.data())
def test_the_seeds_six_pointer_layout(custom_calls, target, data) -> None:
    # The target's own case builder (its declared CaseSpace), given the seed's operand.
    case = target.cases.build(operands=(SEED_OPERAND,))
    assert sum(1 for _ in leaves(SEED_OPERAND)) + sum(1 for _ in leaves(case.output)) == 6
    call_and_check(data, custom_calls, target, "CC-3", case=case)
