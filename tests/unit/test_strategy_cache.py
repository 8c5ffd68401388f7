"""The cached strategy helpers keep choices of different types apart: an IntEnum member equals its
value and hashes alike, so a cache keyed by value alone handed a driver declaring ADD alone the
strategy another test had made for the index 0 (a false alarm in nightly fuzzing)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.api.hal import OperationType
from harness.strategies.values import sampled


def test_choices_equal_in_value_but_not_in_type_get_their_own_strategy() -> None:
    indexes, operations = sampled((0,)), sampled((OperationType.ADD,))
    assert indexes is not operations and sampled((0,)) is indexes  # still one object per tuple of choices

    @given(index=indexes, operation=operations)
    def draws(index, operation) -> None:
        assert type(index) is int and type(operation) is OperationType

    draws()


@given(st.data())
def test_a_drawn_operation_keeps_its_name(data) -> None:
    declared = (OperationType.ADD, OperationType.MUL)
    sampled(tuple(int(op) for op in declared))  # a test elsewhere drew indexes of the same values first
    operation = data.draw(sampled(declared))
    assert operation.name in ("ADD", "MUL")
