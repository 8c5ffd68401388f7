"""The inputs a guided fuzz loop runs a hypothesis test on (`harness.integration.guided`).

An input is a *list of choices*: the values hypothesis' strategies drew (a boolean, an integer
in a range, a float, a string), in order.  The test is run with `ReplayingProvider`, which gives
each draw the input's value at its position when that value still fits the draw (its type, its
range) and otherwise draws anew from hypothesis' own generator, as it does past the input's end;
a fresh input is an empty list.  So every input is a well-formed test case, however it was
changed, and a mutation acts on the meaning of a draw, not on the bytes that encode it: a
changed draw (another layout, one more batch) keeps every draw before it, and the draws after it
are replayed where they still fit or drawn anew (hypothesis' own replay would give a draw that
no longer fits the simplest value, and a mutated input would drift towards the smallest tests,
where deep bugs are not).

The mutations are libFuzzer's and AFL's in choice space: most keep the draws up to a point and
draw the rest anew, or change one to three draws in place (a neighbouring value, a bound, the
simplest value, one at random) and keep the rest; some splice two inputs (one's start, the other's
end).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from hypothesis.errors import ChoiceTooLarge
from hypothesis.internal.conjecture.choice import choice_from_index, choice_permitted, choice_to_index
from hypothesis.internal.conjecture.providers import COLLECTION_DEFAULT_MAX_SIZE as _MAX_SIZE
from hypothesis.internal.conjecture.providers import HypothesisProvider

__all__ = ["Choice", "ReplayingProvider", "mutated_choices"]

Choice = Any  # one of hypothesis' choice values: bool, int, float, str or bytes
_NONE = object()  # no replayed value for a draw


def mutated_choices(rng: random.Random, nodes: Sequence[Any], other: Sequence[Choice]) -> list[Choice]:
    """A prefix made from a kept input's draws (``nodes``: hypothesis' choice nodes, each with its
    type and constraints) and, for splicing, another kept input's choices ``other``."""
    choices = [node.value for node in nodes]
    free = [i for i, node in enumerate(nodes) if not node.was_forced]
    if not free:
        return []
    roll = rng.random()
    if roll < 0.4:  # the draws up to a point kept, the rest drawn anew
        return choices[:_position(rng, free)]
    if roll < 0.9:  # a few draws changed in place, the rest replayed
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            i = _position(rng, free)
            choices[i] = _another_value(rng, nodes[i])
        if rng.random() < 0.2:  # and the input cut short after the change
            del choices[rng.randint(i + 1, len(choices)):]
        return choices
    if not other:
        return choices[:_position(rng, free)]
    cut = _position(rng, free)
    start = min(cut, len(other)) if rng.random() < 0.5 else rng.randrange(len(other) + 1)
    return choices[:cut] + list(other[start:])


def _position(rng: random.Random, free: Sequence[int]) -> int:
    """A draw that was not forced, nearer the end more often: the last draws are the least explored
    (a list's later elements, the values of a tensor whose shape came first)."""
    n = len(free)
    if rng.random() < 0.5:
        return free[n - 1 - min(int(rng.expovariate(4.0 / n)), n - 1)]
    return free[rng.randrange(n)]


def _another_value(rng: random.Random, node: Any) -> Choice:
    """A value for ``node``'s draw other than the one it had (when there is one), that its
    constraints allow: a neighbour by hypothesis' ordering of simplicity, the simplest, or one at
    random from the first thousand."""
    kind, constraints, value = node.type, node.constraints, node.value
    if kind == "boolean":
        flipped = not value
        return flipped if choice_permitted(flipped, constraints) else value
    if kind == "integer" and constraints["min_value"] is not None and constraints["max_value"] is not None:
        low, high = constraints["min_value"], constraints["max_value"]
        roll = rng.random()
        if roll < 0.4:
            return min(max(value + rng.choice((-2, -1, 1, 2)), low), high)
        if roll < 0.55:
            return rng.choice((low, high))
        return rng.randint(low, high)
    index = choice_to_index(value, constraints)
    roll = rng.random()
    if roll < 0.5:
        new = max(index + rng.choice((-3, -2, -1, 1, 2, 3)), 0)
    elif roll < 0.65:
        new = 0
    else:
        new = rng.randrange(1000)
    try:
        return choice_from_index(new, kind, constraints)
    except ChoiceTooLarge:
        return value


class ReplayingProvider(HypothesisProvider):
    """Hypothesis' generator, but each draw takes ``choices``' value at its position when that
    value fits it (a test case's draws are numbered in order, forced ones included)."""

    def __init__(self, conjecturedata: Any, /, *, choices: Sequence[Choice]) -> None:
        super().__init__(conjecturedata)
        self._choices = choices

    def _replayed(self, kind: type, constraints: dict[str, Any]) -> Any:
        assert self._cd is not None
        at = len(self._cd._nodes)  # the draws so far: this draw's position in the test case
        if at < len(self._choices):
            value = self._choices[at]
            if type(value) is kind and choice_permitted(value, constraints):  # type: ignore[arg-type]
                return value
        return _NONE

    def draw_boolean(self, p: float = 0.5) -> bool:
        value = self._replayed(bool, {"p": p})
        return super().draw_boolean(p) if value is _NONE else value

    def draw_integer(self, min_value: int | None = None, max_value: int | None = None, *,
                     weights: dict[int, float] | None = None, shrink_towards: int = 0) -> int:
        value = self._replayed(int, {"min_value": min_value, "max_value": max_value, "weights": weights,
                                     "shrink_towards": shrink_towards})
        if value is _NONE:
            return super().draw_integer(min_value, max_value, weights=weights, shrink_towards=shrink_towards)
        return value

    def draw_float(self, *, min_value: float = -math.inf, max_value: float = math.inf, allow_nan: bool = True,
                   smallest_nonzero_magnitude: float) -> float:
        value = self._replayed(float, {"min_value": min_value, "max_value": max_value, "allow_nan": allow_nan,
                                       "smallest_nonzero_magnitude": smallest_nonzero_magnitude})
        if value is _NONE:
            return super().draw_float(min_value=min_value, max_value=max_value, allow_nan=allow_nan,
                                      smallest_nonzero_magnitude=smallest_nonzero_magnitude)
        return value

    def draw_string(self, intervals: Any, *, min_size: int = 0, max_size: int = _MAX_SIZE) -> str:
        value = self._replayed(str, {"intervals": intervals, "min_size": min_size, "max_size": max_size})
        return super().draw_string(intervals, min_size=min_size, max_size=max_size) if value is _NONE else value

    def draw_bytes(self, min_size: int = 0, max_size: int = _MAX_SIZE) -> bytes:
        value = self._replayed(bytes, {"min_size": min_size, "max_size": max_size})
        return super().draw_bytes(min_size, max_size) if value is _NONE else value
