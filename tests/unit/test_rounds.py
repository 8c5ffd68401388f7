"""The fuzz loop's rounds: how many examples a round gives, and what it hides from the collector."""

from __future__ import annotations

import gc
import weakref

import pytest

from harness.integration.rounds import _freeze_what_lives_on, round_examples


def test_rounds_double_up_to_the_profile_count() -> None:
    assert [round_examples(n, 25, 1000) for n in range(1, 8)] == [25, 50, 100, 200, 400, 800, 1000]
    assert round_examples(3, 2000, 1000) == 2000  # a first count above the profile's is kept


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def unfrozen_afterwards():
    yield
    gc.unfreeze()  # the rest of this session collects as usual


def test_garbage_is_collected_before_the_freeze(unfrozen_afterwards) -> None:
    """A cycle that is already garbage when a round starts would never be freed once frozen."""
    dead, alive = _Node(), _Node()
    dead.other, alive.other = _Node(), _Node()
    dead.other.other = dead
    alive.other.other = alive
    dead_ref, alive_ref = weakref.ref(dead), weakref.ref(alive)
    del dead
    frozen_before = gc.get_freeze_count()

    _freeze_what_lives_on()

    assert dead_ref() is None, "the dead cycle was frozen instead of collected"
    assert alive_ref() is alive
    assert gc.get_freeze_count() > frozen_before, "nothing was frozen"
