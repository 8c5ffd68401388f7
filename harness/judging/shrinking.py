"""Shrinking a call sequence judged across runs to a short one that still fails.

Hypothesis shrinks each example, but a leak (DOM-ALLOC-3) is judged after a test call's runs, over
all of them, and any failure of a run may depend on what the driver was asked in the runs before
it: a verdict's steps are every run up to the one that saw it.  Most of those calls do not matter,
so the sequence is cut down here, in the same spirit as hypothesis' shrinker: the last run alone,
the shortest failing prefix, then candidates that delete whole runs (many at once first), then calls that create no
buffer (copies, executions), then an allocation with its own release.  A candidate is kept when
it still fails, replayed from the start on a fresh driver, with the same requirement.

Every candidate is checked by ``fails(candidate)``; the caller bounds the work with ``deadline``
(a driver that hangs costs a whole call deadline per candidate).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from harness.judging.lockstep import NEXT_RUN, Step, last_run_start

__all__ = ["shortest_failing"]

#: Calls that name a buffer without creating or freeing one: deleting them keeps the names consistent.
_USES = frozenset({"copy_from", "copy_to", "execute"})


def _runs(steps: Sequence[Step]) -> list[list[Step]]:
    runs: list[list[Step]] = [[]]
    for step in steps:
        if step.method == NEXT_RUN:
            runs.append([])
        else:
            runs[-1].append(step)
    return runs


def _joined(runs: Sequence[Sequence[Step]]) -> tuple[Step, ...]:
    steps: list[Step] = []
    for number, run in enumerate(runs):
        if number:
            steps.append(Step(NEXT_RUN, ()))
        steps.extend(run)
    return tuple(steps)


def _deletable_with(run: Sequence[Step], index: int) -> tuple[int, ...] | None:
    """The positions to delete with the allocation at ``run[index]``: itself and its release, or
    itself alone when nothing later names its buffer (one the driver refused, say); None when
    a later call still needs it."""
    name = run[index].args[0]
    for later in range(index + 1, len(run)):
        if run[later].args[:1] != (name,):
            continue
        if run[later].method == "release":
            return (index, later)
        return None  # used, judged (served_again) or allocated again under the same name: it stays
    return (index,)


def shortest_failing(steps: Sequence[Step], fails: Callable[[tuple[Step, ...]], bool], deadline: float,
                     earlier: Sequence[Step] = (), in_last_run: bool = False) -> tuple[Step, ...]:
    """The shortest sequence found before ``deadline`` (``time.monotonic()``) for which ``fails``
    holds, starting from ``steps`` (which must fail); ``steps`` itself when none is shorter.
    ``earlier``: a shorter history that failed the same way before (the first run that did, where
    ``steps`` end with the run hypothesis shrank it to).  ``in_last_run``: ``fails`` holds only for
    a failure in the last run, so no prefix that ends before it is tried."""
    # A last run that fails by itself (one hypothesis shrank, say) needs none before it: one replay.
    # Else the earlier history, when it still fails: every run hypothesis made while shrinking
    # comes after it.
    for start in (tuple(_runs(steps)[-1]), tuple(earlier)):
        if start and len(start) < len(steps) and time.monotonic() < deadline and fails(start):
            steps = start
            break
    # Then the shortest failing prefix: a replay stops at the first failure, so every prefix
    # longer than that one fails too, and a binary search finds it.
    failing = len(steps)
    passing = last_run_start(steps) if in_last_run else 0  # a prefix with no call of the last run cannot fail in it
    while failing - passing > 1 and time.monotonic() < deadline:
        middle = (failing + passing) // 2
        if fails(tuple(steps[:middle])):
            failing = middle
        else:
            passing = middle
    runs = _runs(steps[:failing])

    def try_runs(candidate: list[list[Step]]) -> bool:
        nonlocal runs
        if time.monotonic() >= deadline or not fails(_joined(candidate)):
            return False
        runs = candidate
        return True

    # Whole runs first (the last one saw the failure, and stays): all earlier runs at once, then
    # halves of them, quarters, and so on down to each one (a history of earlier tests has
    # hundreds of runs, and few of them matter).
    chunk = len(runs) - 1
    while chunk >= 1 and time.monotonic() < deadline:
        number = 0
        while number < len(runs) - 1 and time.monotonic() < deadline:
            if not try_runs(runs[:number] + runs[min(number + chunk, len(runs) - 1):]):
                number += chunk
        chunk //= 2
    # Then, in each run, the calls that only use buffers, and allocations with their releases.
    # From the end backwards: a deletion removes only the step at ``index`` and ones after it.
    for run_number in range(len(runs)):
        index = len(runs[run_number]) - 1
        while index >= 0 and time.monotonic() < deadline:
            run = runs[run_number]
            method = run[index].method
            positions = (index,) if method in _USES else _deletable_with(run, index) if method == "allocate" else None
            if positions is not None:
                shorter = [s for position, s in enumerate(run) if position not in positions]
                try_runs([*runs[:run_number], shorter, *runs[run_number + 1:]])
            index -= 1
    return _joined(runs)
