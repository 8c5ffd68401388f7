"""The inputs a guided fuzz loop runs a hypothesis test on (`harness.integration.guided`).

An input is a *prefix of choices*: the values hypothesis' strategies drew (a boolean, an integer
in a range, a float, a string), in order.  The test replays the prefix and draws whatever it asks
for past its end from hypothesis' own generator, which is also what a fresh input is: an empty
prefix.  So every input is a well-formed test case, however it was changed, and a mutation acts
on the meaning of a draw, not on the bytes that encode it: a changed draw (another layout, one
more batch) keeps every draw before it, and the draws after it are replayed where they still fit
(hypothesis gives a draw that no longer fits its strategy the simplest value it allows) or drawn
anew.

The mutations are libFuzzer's and AFL's in choice space: most keep the draws up to a point and
draw the rest anew, or change one to three draws in place (a neighbouring value, a bound, the
simplest value, one at random) and keep the rest; some splice two inputs (one's start, the other's
end).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

__all__ = ["Choice", "mutated_choices"]

Choice = Any  # one of hypothesis' choice values: bool, int, float, str or bytes


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
    from hypothesis.errors import ChoiceTooLarge
    from hypothesis.internal.conjecture.choice import choice_from_index, choice_permitted, choice_to_index

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
