"""A leak's call sequence (every run of a test call up to the one that saw it) is shrunk to a
short one that still fails the same way on a fresh driver (`harness.judging.shrinking`)."""

from __future__ import annotations

import time

import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, OperandType, OperationType
from harness.judging.lockstep import NEXT_RUN, Lockstep, Step, replay
from harness.judging.scenario import MemorySpec
from harness.judging.shrinking import shortest_failing
from harness.strategies.domains import Flavor, values_for
from harness.suites.memory_domains.test_state_machine import AcrossRuns
from reference_driver import ReferenceDevice

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)


def _run(across: AcrossRuns, driver, reference, number: int) -> None:
    """A run as the state machine makes one: a model, a buffer with copies in and out, released."""
    step = Lockstep(driver, reference, leaks=across.leaks, before=across.history)
    pair = step.prepare(FLAVOR.model((2, 2)))
    if step.allocate("buffer1", BufferDesc((2, 2)), [pair], [BufferRole(0, 0)], []) is None:
        step.served_again("buffer1", "at the start of an earlier run")
    else:
        for seed in range(3):
            step.copy_from("buffer1", MemorySpec("ashmem", values_for(FLAVOR.type, (2, 2), seed + number).tobytes()), (2, 2))
            step.copy_to("buffer1", 16)
    step.close()
    across.end_run(step.steps)


def _fails_on(fresh_driver):
    """Whether a candidate fails with DOM-ALLOC-3, replayed on ``fresh_driver()``."""
    return lambda candidate: _fails(candidate, fresh_driver())


def _fails(candidate, driver) -> bool:
    try:
        replay(candidate, driver, ReferenceDevice()).close()
    except ConformanceError as error:
        return error.requirement == "DOM-ALLOC-3"
    except Exception:  # noqa: BLE001 -- any other end is not this failure
        return False
    return False


def _leak(driver) -> ConformanceError:
    across, reference = AcrossRuns(), ReferenceDevice()
    for number in range(3):
        _run(across, driver, reference, number)
    [leak] = across.leaks
    return leak


def test_a_leak_shrinks_to_the_calls_it_needs_and_still_fails_on_a_fresh_driver(leaky) -> None:
    leak, fails = _leak(leaky(2)), _fails_on(lambda: leaky(2))
    assert fails(leak.steps)
    shortest = shortest_failing(leak.steps, fails, time.monotonic() + 30)
    assert fails(shortest) and len(shortest) < len(leak.steps)
    methods = [step.method for step in shortest]
    assert not {"copy_from", "copy_to"} & set(methods), methods  # nothing a leak needs
    assert methods.count(NEXT_RUN) == 2 and methods.count("allocate") == 3, methods  # each run served or refused one
    with pytest.raises(ConformanceError) as again:
        replay(shortest, leaky(2), ReferenceDevice())
    assert again.value.requirement == "DOM-ALLOC-3"


def test_shrinking_stops_at_its_deadline_with_what_still_fails(leaky) -> None:
    leak = _leak(leaky(2))
    assert shortest_failing(leak.steps, _fails_on(lambda: leaky(2)), time.monotonic() - 1) == leak.steps


def test_a_judged_allocation_is_never_shrunk_away(leaky) -> None:
    # Without its allocation, a served_again step would judge a buffer the sequence never asked for.
    leak = _leak(leaky(2))
    judged = lambda candidate: any(step.method == "served_again" for step in candidate)  # noqa: E731
    shortest = shortest_failing(leak.steps, judged, time.monotonic() + 30)
    methods = [step.method for step in shortest]
    index = methods.index("served_again")
    assert methods[index - 1] == "allocate" and shortest[index - 1].args[0] == shortest[index].args[0]


def test_replaying_a_judgement_of_a_buffer_never_allocated_is_refused() -> None:
    with pytest.raises(ValueError, match="never allocated"):
        replay([Step("served_again", ("buffer9", "earlier"))], ReferenceDevice(), ReferenceDevice())


def test_a_last_run_that_fails_by_itself_is_shrunk_alone(leaky) -> None:
    # A driver that serves two allocations in its life fails the third run's first allocation
    # whatever came before; here a history of two runs in which it served both.
    leak = _leak(leaky(2))
    last_run_only = leak.steps[len(leak.steps) - [s.method for s in reversed(leak.steps)].index(NEXT_RUN):]
    on_a_fresh_driver = _fails_on(lambda: leaky(0))  # refuses from its first allocation: no history needed
    assert on_a_fresh_driver(tuple(last_run_only))
    shortest = shortest_failing(leak.steps, on_a_fresh_driver, time.monotonic() + 30)
    assert NEXT_RUN not in [step.method for step in shortest] and on_a_fresh_driver(shortest)


def test_shrinking_starts_from_an_earlier_history_that_failed_the_same_way(leaky) -> None:
    # A verdict's history ends with the run hypothesis shrank it to, after every run it made while
    # shrinking; the first history that failed is shorter, and shrinking goes on from there.
    leak = _leak(leaky(2))
    fails, tried = _fails_on(lambda: leaky(2)), []

    def counted(candidate: tuple[Step, ...]) -> bool:
        tried.append(len(candidate))
        return fails(candidate)

    again = (Step(NEXT_RUN, ()), *leak.steps)
    later = leak.steps + again + again  # as if hypothesis had run it all twice more
    shortest = shortest_failing(later, counted, time.monotonic() + 30, earlier=leak.steps)
    assert fails(shortest) and len(shortest) <= len(leak.steps)
    # the last run alone, then the earlier history; nothing longer than that after it
    assert tried[1] == len(leak.steps) and max(tried[2:]) <= len(leak.steps), tried
