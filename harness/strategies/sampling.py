"""Models of RANDOM_MULTINOMIAL: samples of a categorical distribution.

Kept out of the families every suite draws from (`models.FAMILIES`): two correct drivers draw
different samples for the same seeds, so a model that passes them on (to another operation, to a
driver-managed buffer read back) would leave nothing comparable.  Its own test judges the samples
by their distribution (`harness.judging.distributions`).  Rows of 2 to 6 classes have logits in
[-8, 8), so that distributions far from uniform are common; 500 to 1000 samples a row keep the
judge's bound on each class's share (about 0.1) tight enough to tell them apart.
"""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

from harness.api.hal import Capabilities, OperandType, OperationType

from .models import ModelCase, _Case, _start
from .values import FLOAT_TYPES, arrays, usable_types

I32, INT32 = OperandType.TENSOR_INT32, OperandType.INT32


@functools.lru_cache(maxsize=64)
def logit_types(caps: Capabilities) -> tuple[OperandType, ...]:
    """The logits' types a model can have for this driver (its seeds and output TENSOR_INT32, its count INT32)."""
    if OperationType.RANDOM_MULTINOMIAL not in caps.operations or not {I32, INT32} <= caps.operand_types:
        return ()
    return usable_types(FLOAT_TYPES, caps.operand_types)


@functools.lru_cache(maxsize=64)
def random_multinomial_models(caps: Capabilities) -> st.SearchStrategy[ModelCase]:
    return _random_multinomial_models(caps)


@st.composite
def _random_multinomial_models(draw, caps: Capabilities) -> ModelCase:
    """RANDOM_MULTINOMIAL of 1 to 3 rows of logits, given or as request inputs, and seeds (0 and 0
    sometimes: NNAPI's fresh ones)."""
    c = _start(draw)
    types = logit_types(caps)
    if not types:
        reject()  # the driver declares no model of it: not an example
    type = c.choice(types, "type")
    rows, classes = c.integer(1, 3, "rows"), c.integer(2, 6, "classes")
    samples = 500 + 100 * c.integer(0, 5, "hundreds of samples past 500")
    seeds = np.zeros(2, np.int32) if c.integer(0, 3, "fresh seeds") == 0 else \
        np.asarray([c.integer(1, 255, "seed 0"), c.integer(0, 255, "seed 1")], np.int32)
    case = _Case(c)
    how = c.choice(("input", "copy"), "logits given as")
    logits = case.operand(type, draw(arrays(type, (rows, classes)), label="logits"), how=how, label="logits")
    case.output(OperationType.RANDOM_MULTINOMIAL, [logits, case.b.scalar(samples), case.b.constant(I32, seeds)], I32,
                (rows, samples))
    return case.done([(rows, samples)], f"RANDOM_MULTINOMIAL {type.name} {rows}x{classes}")
