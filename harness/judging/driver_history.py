"""The lockstep calls a driver under test had since its process started.

One driver lives through a whole run: every test of the session talks to the same service
process.  A failure may then depend on calls made before its own call sequence, by an earlier test
or an earlier example of the same test (a buffer slot a refused allocation kept, a release that
corrupted the allocator), and that sequence alone passes on a fresh driver.  Every `Lockstep`
joins its driver's history when it starts, so that its verdict can carry the call sequences the
driver had before it (``ConformanceError.earlier``): the recorder replays those on a fresh driver,
and cuts them down, when the verdict's own calls do not fail alone
(`harness.integration.histories.replaying_steps`).

A test that asks the driver alone joins the history through `harness.judging.direct_calls`.  Calls
no history holds (a test's own threads at once, a vendor's test that calls the driver itself) leave
a failure that needs them labelled as not replaying.  A history holds about
`KEEP_STEPS` calls, dropping the oldest sequences first: replaying more, several times over while
it is cut down, would cost a failing test more than its own run.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any

from harness.service.proxies import DeviceProxy

__all__ = ["KEEP_STEPS", "DriverHistory", "EarlierSequence", "history_of", "lifetime_of"]

#: Calls a driver's history keeps (whole call sequences; the oldest go first).
KEEP_STEPS = 1500


@dataclass(frozen=True)
class EarlierSequence:
    """A call sequence the driver had before a verdict's own (a `ConformanceError`'s ``earlier``)."""

    steps: tuple  # of `harness.judging.lockstep.Step`
    ended_in_a_verdict: bool  # its last call failed: a replay through it stops there


class DriverHistory:
    """The call sequences (each a `Lockstep`'s own list of `Step`s, still growing while it runs)
    one driver had in its current process, oldest first."""

    def __init__(self) -> None:
        self._lifetime: int | None = None
        self._sequences: deque[list] = deque()
        self._ended_steps = 0  # steps in every sequence but the newest (those no longer grow)
        self._failed: set[int] = set()  # id() of sequences that ended in a verdict
        self._lock = threading.Lock()  # concurrency tests run locksteps on threads

    def join(self, steps: list, lifetime: int) -> None:
        """A lockstep starts on the driver, in the process ``lifetime`` (a new one: the history so
        far belongs to a process that is gone, and is forgotten)."""
        with self._lock:
            if lifetime != self._lifetime:
                self._lifetime = lifetime
                self._sequences.clear()
                self._failed.clear()
                self._ended_steps = 0
            if self._sequences:
                self._ended_steps += len(self._sequences[-1])
            self._sequences.append(steps)
            while self._ended_steps > KEEP_STEPS and len(self._sequences) > 1:
                dropped = self._sequences.popleft()
                self._ended_steps -= len(dropped)
                self._failed.discard(id(dropped))

    def ended_in_a_verdict(self, steps: list) -> None:
        with self._lock:
            self._failed.add(id(steps))

    def before(self, steps: list) -> tuple[EarlierSequence, ...]:
        """The sequences the driver had before ``steps`` (one that joined it), oldest first.  Empty
        when ``steps`` is no longer held (the driver's process was replaced meanwhile, or it was
        dropped): what came before it is not known."""
        with self._lock:
            for position in range(len(self._sequences) - 1, -1, -1):
                if self._sequences[position] is steps:
                    return tuple(EarlierSequence(tuple(earlier), id(earlier) in self._failed)
                                 for number, earlier in enumerate(self._sequences) if number < position and earlier)
            return ()


_HISTORIES: weakref.WeakKeyDictionary[Any, DriverHistory] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def lifetime_of(driver: Any) -> int:
    """Which process of its service serves ``driver`` now: a restart starts another (an in-process
    driver has one lifetime; a fresh one is another object)."""
    return driver.lifetime if isinstance(driver, DeviceProxy) else 0


def history_of(driver: Any) -> DriverHistory | None:
    """``driver``'s history (None for an object that cannot be weakly referenced: nothing is kept)."""
    with _REGISTRY_LOCK:
        try:
            history = _HISTORIES.get(driver)
            if history is None:
                history = _HISTORIES[driver] = DriverHistory()
        except TypeError:
            return None
    return history
