"""Call sequences a test judged across its runs, kept in the example database beside hypothesis'
own examples, so that ``harness replay`` runs them again (the ``stored_histories`` fixture).

Hypothesis stores an example that fails by itself.  A leak (DOM-ALLOC-3) is judged across every
run of one test call, after them, so no single example of hypothesis' fails and its database
keeps nothing of it.  The test keeps the verdict's call sequence here instead: in the database
the run uses, under the test's own key (per driver, as every example is), as data
(`harness.judging.stored_steps`).  A replay run plays each stored sequence on the driver again:
one that still fails raises its verdict, one that passes is deleted, as hypothesis does with
examples that no longer fail.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import Device
from harness.judging.lockstep import NEXT_RUN, Step, last_run_start, replay
from harness.judging.shrinking import shortest_failing
from harness.judging.stored_steps import StoredStepsError, decode_steps, encode_steps

__all__ = ["KEEP_AT_MOST", "SHRINK_SECONDS", "StoredHistories", "fails_on_a_fresh_driver", "replaying_steps",
           "scenario_fails_on_a_fresh_driver", "shortest_history", "stored_histories"]

#: How long a verdict judged across runs may be shrunk (a failing test's time only).
SHRINK_SECONDS = 10.0
#: Sequences kept per test and driver: a night of rounds finds the same leak again and again.
KEEP_AT_MOST = 8


class StoredHistories:
    """The call sequences stored for one test of one driver."""

    def __init__(self, database: Any, key: bytes, replaying: bool, count_example: Callable[[], None]) -> None:
        self.database = database  # hypothesis' database for this run (None: the profile keeps none)
        self.key = key
        self.replaying = replaying
        self._count_example = count_example

    def keep(self, steps: tuple[Step, ...]) -> None:
        """Store a failing call sequence (before its verdict is raised: nothing is lost)."""
        if self.database is not None and not self.replaying and steps:
            self.database.save(self.key, encode_steps(steps))
            self._trim()

    def _trim(self) -> None:
        """Keep the `KEEP_AT_MOST` shortest sequences of this test."""
        assert self.database is not None
        for value in sorted(self.database.fetch(self.key), key=len)[KEEP_AT_MOST:]:
            self.database.delete(self.key, value)

    def replace(self, kept: tuple[Step, ...], shorter: tuple[Step, ...]) -> None:
        """Store ``shorter`` in place of ``kept`` (which fails the same way)."""
        if self.database is not None and not self.replaying and shorter != kept:
            self.database.save(self.key, encode_steps(shorter))  # first: a death between the two loses nothing
            self.database.delete(self.key, encode_steps(kept))
            self._trim()

    def replay_stored(self, driver: Device, reference: Device) -> int:
        """In a replay run, play every stored sequence on ``driver`` again; the first that still
        fails raises its verdict.  Those that pass are deleted.  The number played."""
        if self.database is None or not self.replaying:
            return 0
        played = 0
        for value in sorted(self.database.fetch(self.key), key=len):  # the shortest first
            try:
                steps = decode_steps(value)
            except StoredStepsError as error:  # not the driver's doing: the run is incomplete, and says why
                raise RuntimeError(f"a call sequence stored for this test in {self.database!r} is unreadable: {error}") from None
            self._count_example()
            played += 1
            replay(steps, driver, reference).close()  # raises the verdict while the driver still has the bug
            self.database.delete(self.key, value)
        return played


def fails_on_a_fresh_driver(fresh_device: Callable[[], Device], reference: Device, steps: tuple[Step, ...],
                            requirement: str, in_last_run: bool = False) -> bool:
    """Whether ``steps``, replayed from the start on ``fresh_device()`` (its service's process
    replaced), fail with ``requirement`` (``in_last_run``: in the calls after the last `NEXT_RUN`,
    not in an earlier sequence).  Any other end (a broken sequence) is not that failure."""
    try:
        replay(steps, fresh_device(), reference).close()
    except ConformanceError as error:
        # A replay's own steps are every call so far, without the NEXT_RUN marks.
        return error.requirement == requirement and (not in_last_run or len(error.steps) > _calls_before_last_run(steps))
    except Exception:  # noqa: BLE001 -- see above
        return False
    return False


def scenario_fails_on_a_fresh_driver(fresh_device: Callable[[], Device], reference: Device, verdict: ConformanceError) -> bool:
    """Whether the verdict's scenario, run on ``fresh_device()`` (its service's process replaced)
    beside the reference, fails with the verdict's requirement.  A driver whose failure needed
    calls made before the scenario (a mapping an earlier memory left, say) passes it."""
    from harness.judging.oracle import assert_conforms, run_on_both

    try:
        expected, actual = run_on_both(reference, fresh_device(), verdict.scenario)
        assert_conforms(verdict.requirement, verdict.scenario, expected, actual)
    except ConformanceError as error:
        return error.requirement == verdict.requirement
    except Exception:  # noqa: BLE001 -- any other end (the harness's own error) is not that failure
        return False
    return False


def _calls_before_last_run(steps: tuple[Step, ...]) -> int:
    return sum(step.method != NEXT_RUN for step in steps[:last_run_start(steps)])


def replaying_steps(fresh_device: Callable[[], Device], reference: Device, verdict: ConformanceError,
                    deadline: float) -> tuple[Step, ...] | None:
    """A call sequence that fails on a fresh driver as ``verdict`` did: its own steps when they do;
    else the sequences the driver had before them (``verdict.earlier``: earlier tests' and examples')
    followed by its last run, cut down by `shortest_failing` until ``deadline``; None when neither
    fails so, in that last run.

    Sequences that ended in a verdict of their own are left out first (a replay would stop at
    that verdict, not this one); all of them are tried when that does not fail."""
    if fails_on_a_fresh_driver(fresh_device, reference, verdict.steps, verdict.requirement):
        return verdict.steps
    if not verdict.earlier:
        return None
    own = verdict.steps[last_run_start(verdict.steps):]

    def fails(candidate: tuple[Step, ...]) -> bool:
        return fails_on_a_fresh_driver(fresh_device, reference, candidate, verdict.requirement, in_last_run=True)

    passed = [sequence.steps for sequence in verdict.earlier if not sequence.ended_in_a_verdict]
    every = [sequence.steps for sequence in verdict.earlier]
    for earlier in (passed, every) if len(passed) < len(every) else (every,):
        history = tuple(step for sequence in earlier for step in (*sequence, Step(NEXT_RUN, ()))) + tuple(own)
        if time.monotonic() < deadline and fails(history):
            return shortest_failing(history, fails, deadline, in_last_run=True)
    return None


@pytest.fixture
def stored_histories(request: pytest.FixtureRequest, example_counter: Callable[[], None]) -> StoredHistories:
    """The call sequences stored for this test (see the module's docstring)."""
    from hypothesis import settings

    from harness.integration.plugin import canonical_id

    key = b"driver-harness-history/" + canonical_id(request.node).encode("utf-8")
    return StoredHistories(settings().database, key, bool(request.config.getoption("harness_replay")), example_counter)


@pytest.fixture
def shortest_history(pytestconfig: pytest.Config, reference: Device) -> Callable[..., tuple[Step, ...]]:
    """``shortest_history(verdict, earlier=())``: a shorter call sequence that fails with the verdict's
    requirement, replayed from the start on a fresh driver each time (`harness.judging.shrinking`,
    which may start from ``earlier``, a shorter history that failed so before); the verdict's own
    steps when none is found within `SHRINK_SECONDS`, or when the run shrinks nothing (--harness-no-shrink)."""
    from harness.integration.plugin import state_of

    state = state_of(pytestconfig)
    as_found = bool(pytestconfig.getoption("harness_no_shrink"))

    def shortest(verdict: ConformanceError, earlier: tuple[Step, ...] = ()) -> tuple[Step, ...]:
        if as_found:
            return verdict.steps

        def fails(candidate: tuple[Step, ...]) -> bool:
            return fails_on_a_fresh_driver(state.fresh_device, reference, candidate, verdict.requirement)

        return shortest_failing(verdict.steps, fails, time.monotonic() + SHRINK_SECONDS, earlier)

    return shortest
