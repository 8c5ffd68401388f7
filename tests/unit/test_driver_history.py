"""A failure that needs calls made before its own call sequence (an earlier test's, or an earlier
example's) replays with them: every lockstep joins its driver's history, and a verdict carries the
sequences before it (`harness.judging.driver_history`, `harness.integration.histories.replaying_steps`)."""

from __future__ import annotations

import time

import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, DriverError, ErrorStatus, OperandType, OperationType
from harness.integration.histories import fails_on_a_fresh_driver, replaying_steps
from harness.judging import driver_history
from harness.judging.direct_calls import DirectCalls
from harness.judging.driver_history import DriverHistory
from harness.judging.lockstep import ALONE, NEXT_RUN, Lockstep, Step, replay
from harness.judging.scenario import MemorySpec
from harness.drivers.registry import load_registry
from harness.strategies.domains import Flavor
from reference_driver import ReferenceDevice

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)


def refuses_after_release():
    """A new instance of mutant-refuses-after-release (a fresh driver)."""
    return load_registry().resolve("mutant-refuses-after-release").create()


def _released_buffer(driver, reference) -> None:
    """A sequence that passes: a buffer allocated and released."""
    step = Lockstep(driver, reference)
    pair = step.prepare(FLAVOR.model((2, 2)))
    assert step.allocate("buffer", BufferDesc(), [pair], [BufferRole(0, 0)], []) is not None
    step.close()


def _invalid_allocation(driver, reference) -> ConformanceError:
    """A sequence whose allocation SPEC refuses with INVALID_ARGUMENT (a role of probability 0);
    mutant-refuses-after-release refuses it with GENERAL_FAILURE once any buffer was released."""
    step = Lockstep(driver, reference)
    pair = step.prepare(FLAVOR.model((2, 2)))
    with pytest.raises(ConformanceError) as failure:
        step.allocate("invalid", BufferDesc(), [pair], [BufferRole(0, 0, 0.0)], [])
    return failure.value


def _passes_alone(steps: tuple[Step, ...]) -> bool:
    return not fails_on_a_fresh_driver(refuses_after_release, ReferenceDevice(), steps, "DOM-ALLOC-1")


def test_a_failure_that_needs_earlier_sequences_replays_with_them_cut_down() -> None:
    driver, reference = refuses_after_release(), ReferenceDevice()
    for number in range(6):
        if number == 3:
            _released_buffer(driver, reference)
        else:  # sequences that do not matter: a model prepared
            Lockstep(driver, reference).prepare(FLAVOR.model((number + 1,)))
    verdict = _invalid_allocation(driver, reference)
    assert verdict.requirement == "DOM-ALLOC-1" and _passes_alone(verdict.steps)
    assert [len(sequence.steps) for sequence in verdict.earlier] == [1, 1, 1, 3, 1, 1]

    steps = replaying_steps(refuses_after_release, ReferenceDevice(), verdict, time.monotonic() + 30)
    assert steps is not None and steps is not verdict.steps
    # One earlier sequence is all it needs: a release, then the failing sequence's own calls.
    assert [step.method for step in steps] == ["prepare", "allocate", "release", NEXT_RUN, "prepare", "allocate"]
    with pytest.raises(ConformanceError) as again:
        replay(steps, refuses_after_release(), ReferenceDevice())
    assert again.value.requirement == "DOM-ALLOC-1"


def test_a_failure_that_replays_alone_is_its_own_steps() -> None:
    driver, reference = refuses_after_release(), ReferenceDevice()
    step = Lockstep(driver, reference)
    pair = step.prepare(FLAVOR.model((2, 2)))
    step.allocate("buffer", BufferDesc(), [pair], [BufferRole(0, 0)], [])
    step.release("buffer")
    with pytest.raises(ConformanceError) as failure:
        step.allocate("invalid", BufferDesc(), [pair], [BufferRole(0, 0, 0.0)], [])
    verdict = failure.value
    assert verdict.earlier == ()
    assert replaying_steps(refuses_after_release, ReferenceDevice(), verdict, time.monotonic() + 30) is verdict.steps


def test_an_earlier_sequence_that_failed_is_left_out_when_the_failure_needs_no_part_of_it() -> None:
    # The first failure's sequence is in the history of the second: a replay through it would stop
    # at the first verdict, which is not the second's.
    driver, reference = refuses_after_release(), ReferenceDevice()
    _released_buffer(driver, reference)
    first = _invalid_allocation(driver, reference)
    second = _invalid_allocation(driver, reference)
    assert [sequence.ended_in_a_verdict for sequence in second.earlier] == [False, True]
    assert first.earlier == second.earlier[:1]
    steps = replaying_steps(refuses_after_release, ReferenceDevice(), second, time.monotonic() + 30)
    assert steps is not None
    assert [step.method for step in steps] == ["prepare", "allocate", "release", NEXT_RUN, "prepare", "allocate"]


def test_a_failure_whose_history_passes_too_does_not_replay() -> None:
    # The release came from a call on the driver itself (not through DirectCalls), which no history
    # holds: the label stays.
    driver, reference = refuses_after_release(), ReferenceDevice()
    prepared = driver.prepare_model(FLAVOR.model((2, 2)).build_model())
    buffer, _ = driver.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    buffer.release()
    _released_buffer(ReferenceDevice(), reference)  # another driver's history is not this one's
    verdict = _invalid_allocation(driver, reference)
    assert verdict.earlier == ()
    assert replaying_steps(refuses_after_release, ReferenceDevice(), verdict, time.monotonic() + 30) is None


def test_a_failure_after_direct_calls_replays_with_them() -> None:
    # A test that asks the driver alone (DirectCalls) keeps its calls as lockstep steps: the release
    # that broke the driver is replayed, on both drivers, before the failing sequence's calls.
    driver, reference = refuses_after_release(), ReferenceDevice()
    calls = DirectCalls(driver)
    prepared = calls.prepare(FLAVOR.model((2, 2)))
    buffer, token = calls.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    calls.copy_from(buffer, MemorySpec("ashmem", bytes(16)))
    assert calls.copy_to(buffer, 16) == bytes(16) and token > 0
    calls.release(buffer)
    verdict = _invalid_allocation(driver, reference)
    [direct] = verdict.earlier
    assert [step.method for step in direct.steps] == [ALONE, "prepare", "allocate", "copy_from", "copy_to", "release"]
    assert direct.steps[2].args[0] == direct.steps[-1].args[0] == "direct-1" and direct.steps[2].args[2] == ("model-1",)
    steps = replaying_steps(refuses_after_release, ReferenceDevice(), verdict, time.monotonic() + 30)
    assert steps is not None
    assert [step.method for step in steps if step.method != ALONE] == ["prepare", "allocate", "release", NEXT_RUN,
                                                                         "prepare", "allocate"]


def test_direct_calls_replay_unjudged_for_the_state_they_leave() -> None:
    # The direct test took any refusal of an invalid allocation; lockstep would judge this one's
    # GENERAL_FAILURE (SPEC says INVALID_ARGUMENT).  Replayed, the direct calls judge nothing, and
    # the verdict comes where it came in the run: the last call, in the last run.
    driver, reference = refuses_after_release(), ReferenceDevice()
    calls = DirectCalls(driver)
    prepared = calls.prepare(FLAVOR.model((2, 2)))
    buffer, _ = calls.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    calls.release(buffer)
    with pytest.raises(DriverError) as refused:
        calls.allocate(BufferDesc(), [prepared], [BufferRole(0, 0, 0.0)], [])
    assert refused.value.status == ErrorStatus.GENERAL_FAILURE
    verdict = _invalid_allocation(driver, reference)
    history = (*verdict.earlier[0].steps, Step(NEXT_RUN, ()), *verdict.steps)
    with pytest.raises(ConformanceError) as again:
        replay(history, refuses_after_release(), ReferenceDevice())
    assert again.value.requirement == "DOM-ALLOC-1" and len(again.value.steps) == len(history) - 1
    judged = [step.method for step in history if step.method != NEXT_RUN]
    with pytest.raises(ConformanceError) as at_once:  # the same calls, judged: the direct test's refusal fails first
        replay([step for step in history if step.method != ALONE], refuses_after_release(), ReferenceDevice())
    assert len(at_once.value.steps) < len(judged) - 1


def test_direct_calls_name_only_what_they_made() -> None:
    driver = ReferenceDevice()
    elsewhere = driver.prepare_model(FLAVOR.model((2, 2)).build_model())
    calls = DirectCalls(driver)
    with pytest.raises(ValueError, match="not made through these direct calls"):
        calls.allocate(BufferDesc(), [elsewhere], [BufferRole(0, 0)], [])
    calls.prepare(FLAVOR.model((2, 2)))
    after = Lockstep(driver, ReferenceDevice())
    [sequence] = driver_history.history_of(driver).before(after.steps)
    assert [step.method for step in sequence.steps] == [ALONE, "prepare"]


def test_a_new_process_starts_a_new_history_and_old_sequences_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    history = DriverHistory()
    first, second, third = [Step("release", ("a",))], [Step("release", ("b",))], []
    history.join(first, lifetime=1)
    history.join(second, lifetime=1)
    assert [sequence.steps for sequence in history.before(second)] == [tuple(first)]
    history.join(third, lifetime=2)  # the service was restarted: what came before is gone with it
    assert history.before(third) == () and history.before(second) == ()

    monkeypatch.setattr(driver_history, "KEEP_STEPS", 2)
    sequences = [[Step("release", (str(number),))] for number in range(5)]
    for sequence in sequences:
        history.join(sequence, lifetime=2)
    assert [sequence.steps for sequence in history.before(sequences[-1])] == [tuple(s) for s in sequences[2:4]]
