"""Feature switches drawn once per example (swarm testing), each labelled so a failure explains itself.

A generator that reaches further (every dtype, containers at their limits, many threads, long
sequences) costs more per example and is rarely where a short run's bug is.  So each reach is a
switch drawn per example, on in one example of ``one_in``: a `ci` run of a dozen examples mostly
draws the ordinary cases and stays as cheap as before, a nightly run of a thousand meets every
switch many times.  A switch that is on is `note`d (the failure's report says which reach it
needed) and counted as an `event` (the fuzz statistics say how often each was drawn).
"""

from __future__ import annotations

import functools

from hypothesis import event, note
from hypothesis import strategies as st

__all__ = ["rarely", "switch"]


@functools.lru_cache(maxsize=64)
def rarely(one_in: int) -> st.SearchStrategy[bool]:
    """True in about one example of ``one_in`` (``one_in`` >= 2).

    Hypothesis draws the ends of an integer range, and 0 above all (where it shrinks), far more
    often than their share: the switch is on at a value in the middle of the range, so it is as
    rare as asked, and a failing example shrinks with it kept on."""
    if one_in < 2:
        raise ValueError(f"one_in={one_in!r}: a switch on in one example of fewer than 2 is no switch")
    middle = one_in // 2
    return st.integers(0, one_in - 1).map(middle.__eq__)


def switch(draw, name: str, one_in: int) -> bool:
    """Draw the switch ``name`` (on in about one example of ``one_in``); say so when it is on."""
    on = draw(rarely(one_in), label=name)
    if on:
        note(f"swarm switch on: {name}")
        event(f"swarm: {name}")
    return on
