"""Operand types, quantization parameters, shapes and element values."""

from __future__ import annotations

import functools
from collections.abc import Collection

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.api.hal import OperandType, is_quantized_type, numpy_dtype

FLOAT_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)
QUANT_TYPES = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)
_ZERO_POINT_RANGE = {OperandType.TENSOR_QUANT8_ASYMM: (0, 255), OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127)}


def operand_types(allowed: Collection[OperandType], supported: Collection[OperandType]) -> st.SearchStrategy[OperandType]:
    """A tensor type in both ``allowed`` (by the operation) and ``supported`` (by the driver)."""
    return _types_in(frozenset(allowed) & frozenset(supported))


# Strategies below are cached by their (hashable) arguments: models draw them many times per
# example, and hypothesis validates each new strategy object before its first draw.
@functools.lru_cache(maxsize=256)
def _types_in(usable: frozenset[OperandType]) -> st.SearchStrategy[OperandType]:
    choices = sorted(usable)
    if not choices:
        return st.nothing()
    return st.sampled_from(choices)


@functools.lru_cache(maxsize=64)
def quantization(operand_type: OperandType) -> st.SearchStrategy[tuple[float, int]]:
    """(scale, zeroPoint): (0, 0) for non-quantized types."""
    if not is_quantized_type(operand_type):
        return st.just((0.0, 0))
    low, high = _ZERO_POINT_RANGE[operand_type]
    return st.tuples(st.sampled_from([0.05, 0.1, 0.25, 0.5, 1.0]), st.integers(low, high))


def shapes(min_rank: int = 1, max_rank: int = 4, max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_rank, max_dims=max_rank, min_side=1, max_side=max_side)


@functools.lru_cache(maxsize=64)
def elements(operand_type: OperandType, *, nonzero: bool = False) -> st.SearchStrategy:
    """Element values that keep float results exact enough to compare with tolerances."""
    match operand_type:
        case OperandType.TENSOR_FLOAT32 | OperandType.TENSOR_FLOAT16:
            base = st.floats(-8, 8, width=32 if operand_type == OperandType.TENSOR_FLOAT32 else 16, allow_subnormal=False)
            return base.filter(lambda v: abs(v) >= 0.25) if nonzero else base
        case OperandType.TENSOR_INT32:
            # Small values, and the full range: products and sums must wrap around at 32 bits.
            big = st.one_of(st.integers(-2**31, -2**24), st.integers(2**24, 2**31 - 1))  # products well past 2**53
            values = st.one_of(st.integers(-1000, 1000), big, st.integers(-2**31, 2**31 - 1))
            # a divisor: no 0 (undefined in NNAPI), and no -1, whose quotient of -2**31 overflows (a trap in C)
            return values.filter(lambda v: v not in (0, -1)) if nonzero else values
        case OperandType.TENSOR_QUANT8_ASYMM:
            return st.integers(0, 255)
        case OperandType.TENSOR_QUANT8_ASYMM_SIGNED:
            return st.integers(-128, 127)
    raise ValueError(f"no element strategy for {operand_type!r}")


@functools.lru_cache(maxsize=4096)
def arrays(operand_type: OperandType, shape: tuple[int, ...], *, nonzero: bool = False) -> st.SearchStrategy[np.ndarray]:
    # No fill value: every element is drawn, so a bug that moves elements around shows.
    return hnp.arrays(np.dtype(numpy_dtype(operand_type)), shape, elements=elements(operand_type, nonzero=nonzero),
                      fill=st.nothing())


@functools.lru_cache(maxsize=4096)
def declared_dimensions(shape: tuple[int, ...], *, allow_unknown_rank: bool = True) -> st.SearchStrategy[tuple[int, ...]]:
    """How a model declares a shape: fully, with some axes unknown (0), or with unknown rank."""
    partial = st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)).map(
        lambda hide: tuple(0 if h else d for h, d in zip(hide, shape))
    )
    options = [st.just(tuple(shape)), partial]
    if allow_unknown_rank:
        options.append(st.just(()))
    return st.one_of(options)
