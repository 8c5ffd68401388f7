"""What the example database keeps of verdicts judged across runs (`harness.integration.histories`):
a leak's sequence is stored, replaced by its shrunk form, kept to the shortest few, and in a
replay run played again: a failing one raises, a passing one is deleted, an unreadable one stops
the test as the harness's fault."""

from __future__ import annotations

import pytest
from hypothesis.database import InMemoryExampleDatabase

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, OperandType, OperationType
from harness.integration.histories import KEEP_AT_MOST, StoredHistories
from harness.judging.lockstep import Lockstep, Step
from harness.judging.stored_steps import decode_steps
from harness.strategies.domains import Flavor
from reference_driver import ReferenceDevice

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)
KEY = b"driver-harness-history/suites/memory_domains/test_state_machine.py::test"


def _sequence(buffers: int) -> tuple[Step, ...]:
    """Buffers allocated and released on the reference, then one judged as served before."""
    step = Lockstep(ReferenceDevice(), ReferenceDevice())
    pair = step.prepare(FLAVOR.model((2, 2)))
    for number in range(buffers):
        step.allocate(f"buffer{number}", BufferDesc(), [pair], [BufferRole(0, 0)], [])
        step.release(f"buffer{number}")
    step.allocate("judged", BufferDesc(), [pair], [BufferRole(0, 0)], [])
    step.served_again("judged", "at the start of an earlier run")
    step.close()
    return tuple(step.steps)


def _histories(database, replaying: bool, counted: list) -> StoredHistories:
    return StoredHistories(database, KEY, replaying, lambda: counted.append(1))


def test_the_shortest_few_sequences_are_kept_and_a_shrunk_one_replaces_its_original() -> None:
    database, counted = InMemoryExampleDatabase(), []
    histories = _histories(database, False, counted)
    for buffers in range(KEEP_AT_MOST + 3):
        histories.keep(_sequence(buffers + 1))
    kept = sorted((decode_steps(v) for v in database.fetch(KEY)), key=len)
    assert [len(s) for s in kept] == [len(_sequence(b + 1)) for b in range(KEEP_AT_MOST)]
    histories.replace(kept[-1], _sequence(0))
    lengths = sorted(len(decode_steps(v)) for v in database.fetch(KEY))
    assert lengths[0] == len(_sequence(0)) and len(kept[-1]) not in lengths and len(lengths) == KEEP_AT_MOST


def test_a_replay_run_raises_what_still_fails_and_deletes_what_passes(leaky) -> None:
    database, counted = InMemoryExampleDatabase(), []
    _histories(database, False, counted).keep(_sequence(1))
    replaying = _histories(database, True, counted)
    with pytest.raises(ConformanceError) as still:
        replaying.replay_stored(leaky(0), ReferenceDevice())
    assert still.value.requirement == "DOM-ALLOC-3" and len(list(database.fetch(KEY))) == 1
    assert replaying.replay_stored(ReferenceDevice(), ReferenceDevice()) == 1  # fixed: it passes ...
    assert list(database.fetch(KEY)) == [] and len(counted) == 2  # ... and is gone; each counted as an example
    assert _histories(None, True, counted).replay_stored(ReferenceDevice(), ReferenceDevice()) == 0


def test_nothing_is_stored_by_a_replay_run_or_without_a_database() -> None:
    database, counted = InMemoryExampleDatabase(), []
    _histories(database, True, counted).keep(_sequence(1))
    _histories(None, False, counted).keep(_sequence(1))
    assert list(database.fetch(KEY)) == []


def test_an_unreadable_stored_sequence_is_the_harness_fault_naming_the_database() -> None:
    database, counted = InMemoryExampleDatabase(), []
    database.save(KEY, b"\x80\x04 not a sequence")
    with pytest.raises(RuntimeError, match="unreadable: not compressed JSON"):
        _histories(database, True, counted).replay_stored(ReferenceDevice(), ReferenceDevice())
