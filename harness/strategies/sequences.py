"""Sequences of executions on models prepared one after another, request memories reused between
them: where one model's or one execution's state could leak into the next (STATE-1, POOL-2).

A sequence is data: the models' shapes (each prepared once, in order, before any execution),
then the executions, each naming a model and the seed of its input values.  Two swarm switches
reach further: "request memories reused" (each model's executions share one memory, rewritten
before each: what a driver keyed on where its inputs are, not on what they hold, gets wrong) and
"long sequences" (`LONG_STEPS`, a range, of executions: an effect that needs several runs to show).
Short sequences stay at most `STEPS` executions, so the `ci` profile's cost is that of a few runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import note
from hypothesis import strategies as st

from .swarm import switch
from .values import integers, sampled

__all__ = ["LONG_ONE_IN", "LONG_STEPS", "MODEL_SHAPES", "REUSE_ONE_IN", "STEPS", "ExecutionSequence", "Step",
           "execution_sequences"]

#: The shapes of the models a sequence prepares: distinct, so that one model's state met by the
#: next is another size (a leak reads or writes out of place) or the same size (a leak reads stale).
MODEL_SHAPES = ((2, 2), (3,), (2, 3), (4,))
STEPS, LONG_STEPS = 3, (6, 12)
REUSE_ONE_IN, LONG_ONE_IN = 4, 8


@dataclass(frozen=True)
class Step:
    """One execution: of model ``model`` (an index into the sequence's models), inputs from ``seed``."""

    model: int
    seed: int


@dataclass(frozen=True)
class ExecutionSequence:
    models: tuple[tuple[int, ...], ...]
    steps: tuple[Step, ...]
    reuse_memories: bool

    def executions_of(self, model: int) -> int:
        return sum(1 for step in self.steps if step.model == model)


@st.composite
def execution_sequences(draw) -> ExecutionSequence:
    """Models (one to three, of `MODEL_SHAPES`, repeats allowed: the same graph prepared twice is
    two models) and the executions run on them in turn."""
    models = tuple(draw(st.lists(sampled(MODEL_SHAPES), min_size=1, max_size=3), label="models' shapes"))
    reuse = switch(draw, "request memories reused", REUSE_ONE_IN)
    long = switch(draw, "long sequences", LONG_ONE_IN)
    step = st.builds(Step, integers(0, len(models) - 1), integers(0, 7))
    low, high = LONG_STEPS if long else (1, STEPS)
    steps = tuple(draw(st.lists(step, min_size=low, max_size=high), label="executions"))
    note(f"{len(steps)} executions on {len(models)} models {models}{', memories reused' if reuse else ''}")
    return ExecutionSequence(models, steps, reuse)
