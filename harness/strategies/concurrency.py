"""Plans of Driver API calls made from several threads at once, every entry point among them.

A plan is data: how many threads, and the calls submitted to them in order.  Which entry points a
plan calls is a swarm draw (each on or off for the whole example, `allocate` and the buffer copies
among them), so some plans hammer one entry point from every thread and others mix them all.  A
plan is short (up to `CALLS`) unless the swarm switch "many calls at once" is on, in one example
of `MANY_ONE_IN`: then it has `MANY_CALLS` (a range) calls on up to `MANY_THREADS` threads,
allocations among them, enough to take a driver's tables past the sizes short runs never fill.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import note
from hypothesis import strategies as st

from .swarm import switch
from .values import integers, sampled

__all__ = ["CALLS", "ENTRY_POINTS", "MANY_CALLS", "MANY_ONE_IN", "MANY_THREADS", "THREADS", "CallPlan", "call_plans"]

#: Every Driver API entry point a plan calls: the device's, the prepared model's and the buffer's.
ENTRY_POINTS = ("get_supported_operations", "prepare_model", "allocate", "execute", "copy_from", "copy_to", "release")
#: Threads and calls of an ordinary plan, and of one drawn with "many calls at once" on.
THREADS, CALLS = 4, 10
MANY_THREADS, MANY_CALLS = 8, (24, 40)
MANY_ONE_IN = 16


@dataclass(frozen=True)
class CallPlan:
    """``calls`` (entry-point names, in the order they are submitted) spread over ``threads``."""

    threads: int
    calls: tuple[str, ...]

    def count(self, entry_point: str) -> int:
        return self.calls.count(entry_point)


@st.composite
def call_plans(draw, entry_points: tuple[str, ...] = ENTRY_POINTS) -> CallPlan:
    """A plan over a swarm-drawn subset of ``entry_points`` (never empty)."""
    chosen = tuple(point for point in entry_points if draw(st.booleans(), label=f"calls {point}"))
    if not chosen:
        chosen = (draw(sampled(entry_points), label="the one entry point called"),)
    many = switch(draw, "many calls at once", MANY_ONE_IN)
    if many and "allocate" in entry_points and "allocate" not in chosen:  # many calls fill tables: allocations
        chosen = (*chosen, "allocate")
    threads = draw(integers(2, MANY_THREADS if many else THREADS), label="threads")
    low, high = MANY_CALLS if many else (threads, CALLS)
    calls = draw(st.lists(sampled(chosen), min_size=low, max_size=high), label="calls")
    note(f"{len(calls)} calls on {threads} threads, of {', '.join(chosen)}")
    return CallPlan(threads, tuple(calls))
