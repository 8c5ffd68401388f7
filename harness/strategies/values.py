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
#: The zeroPoints each quantized type allows (NeuralNetworks.h): the symmetric ones only 0.
ZERO_POINT_RANGE = {OperandType.TENSOR_QUANT8_ASYMM: (0, 255), OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
                    OperandType.TENSOR_QUANT8_SYMM: (0, 0), OperandType.TENSOR_QUANT16_ASYMM: (0, 65535),
                    OperandType.TENSOR_QUANT16_SYMM: (0, 0)}
#: The scales quantized operands are given: results stay within a few steps of exact.
SCALES = (0.05, 0.1, 0.25, 0.5, 1.0)


def operand_types(allowed: Collection[OperandType], supported: Collection[OperandType]) -> st.SearchStrategy[OperandType]:
    """A tensor type in both ``allowed`` (by the operation) and ``supported`` (by the driver)."""
    usable = usable_types(allowed, supported)
    return sampled(usable) if usable else st.nothing()


def usable_types(allowed: Collection[OperandType], supported: Collection[OperandType]) -> tuple[OperandType, ...]:
    """The tensor types in both ``allowed`` and ``supported``, in a fixed order."""
    return _usable(frozenset(allowed), frozenset(supported))


@functools.lru_cache(maxsize=256)
def _usable(allowed: frozenset[OperandType], supported: frozenset[OperandType]) -> tuple[OperandType, ...]:
    return tuple(sorted(allowed & supported))


# Strategies below are cached by their (hashable) arguments: models draw them many times per
# example, and hypothesis validates each new strategy object before its first draw.
@functools.lru_cache(maxsize=64, typed=True)
def quantization(operand_type: OperandType, *, scale_below: float = float("inf")) -> st.SearchStrategy[tuple[float, int]]:
    """(scale, zeroPoint): (0, 0) for non-quantized types; ``scale_below`` bounds the scale (a MUL
    whose inputs and output share one scale s needs s > s * s, NNAPI's output_scale rule)."""
    if not is_quantized_type(operand_type):
        return st.just((0.0, 0))
    low, high = ZERO_POINT_RANGE[operand_type]
    return st.tuples(st.sampled_from(tuple(s for s in SCALES if s < scale_below)), st.integers(low, high))


@functools.lru_cache(maxsize=1024)
def integers(low: int, high: int) -> st.SearchStrategy[int]:
    """``st.integers(low, high)``, one object per range: strategies are built inside examples, and
    hypothesis' own strategy cache costs about 20 µs a call, more than most draws."""
    return st.integers(low, high)


def sampled(choices: tuple) -> st.SearchStrategy:
    """``st.sampled_from(choices)``, one object per tuple of choices (see `integers`)."""
    # Keyed by the choices' types too: an IntEnum member equals its value and hashes alike, so
    # (OperationType.ADD,) and (0,) are one key to a plain cache, and a driver declaring ADD alone
    # would be given the strategy another test had made for index 0 (a false alarm in nightly runs).
    return _sampled(choices, tuple(map(type, choices)))


@functools.lru_cache(maxsize=1024)
def _sampled(choices: tuple, types: tuple[type, ...]) -> st.SearchStrategy:
    return st.sampled_from(choices)


BOOLEANS = st.booleans()


@functools.lru_cache(maxsize=64)
def shapes(min_rank: int = 1, max_rank: int = 4, max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_rank, max_dims=max_rank, min_side=1, max_side=max_side)


#: Bytes that encode one element, per type (see _decode).
_ENCODED_SIZE = {OperandType.TENSOR_FLOAT32: 4, OperandType.TENSOR_FLOAT16: 2, OperandType.TENSOR_INT32: 5,
                 OperandType.TENSOR_QUANT8_ASYMM: 1, OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 1,
                 OperandType.TENSOR_QUANT8_SYMM: 1, OperandType.TENSOR_QUANT16_ASYMM: 2, OperandType.TENSOR_QUANT16_SYMM: 2,
                 OperandType.TENSOR_BOOL8: 1}


@functools.lru_cache(maxsize=4096, typed=True)
def arrays(operand_type: OperandType, shape: tuple[int, ...], *, nonzero: bool = False) -> st.SearchStrategy[np.ndarray]:
    """Element values that keep float results exact enough to compare with tolerances; every
    element is its own value (no fill), so a bug that moves elements around shows.

    The whole array is one draw of bytes, decoded per element: a draw costs hypothesis about
    20 µs whatever its size, and arrays were a quarter of a scenario's draws.  All-zero bytes
    decode to all-zero elements (1 for a divisor), which is where shrinking goes."""
    count = int(np.prod(shape, dtype=np.int64))
    size = count * _ENCODED_SIZE[operand_type]
    return st.binary(min_size=size, max_size=size).map(
        functools.partial(_decode, operand_type, shape, nonzero))


def _decode(operand_type: OperandType, shape: tuple[int, ...], nonzero: bool, encoded: bytes) -> np.ndarray:
    match operand_type:
        case OperandType.TENSOR_FLOAT32 | OperandType.TENSOR_FLOAT16:
            # [-8, 8) in steps of 2**-28 (float32) or 2**-12 (float16, then rounded to it)
            bits = 32 if operand_type == OperandType.TENSOR_FLOAT32 else 16
            fixed = np.frombuffer(encoded, f"<i{bits // 8}").astype(np.float64) * 2.0 ** -(bits - 4)
            if nonzero:  # a divisor at least 0.25 away from zero
                fixed = np.where(np.abs(fixed) < 0.25, fixed + np.where(fixed < 0, -0.25, 0.25), fixed)
            values = fixed.astype(numpy_dtype(operand_type))
        case OperandType.TENSOR_INT32:
            # a class byte and a 32-bit value per element: small values, magnitudes past 2**24
            # (products well past 2**53), and the whole range; sums and products must wrap at 32 bits
            record = np.frombuffer(encoded, np.dtype([("kind", "u1"), ("value", "<i4")]))
            full = record["value"].astype(np.int64)
            small = (full + 1000) % 2001 - 1000
            big = np.where(full < 0, -1, 1) * (2**24 + np.abs(full) % (2**31 - 2**24))
            values = np.select([record["kind"] % 3 == 0, record["kind"] % 3 == 1], [small, big], full)
            if nonzero:  # no 0 (undefined in NNAPI), no -1 (-2**31 / -1 overflows: a trap in C)
                values = np.where(values == 0, 1, np.where(values == -1, -2, values))
            values = values.astype(np.int32)
        case OperandType.TENSOR_QUANT8_ASYMM:
            values = np.frombuffer(encoded, np.uint8)
        case OperandType.TENSOR_QUANT8_ASYMM_SIGNED | OperandType.TENSOR_QUANT8_SYMM:
            values = np.frombuffer(encoded, np.int8)
        case OperandType.TENSOR_QUANT16_ASYMM:
            values = np.frombuffer(encoded, "<u2").astype(np.uint16)
        case OperandType.TENSOR_QUANT16_SYMM:
            values = np.frombuffer(encoded, "<i2").astype(np.int16)
        case OperandType.TENSOR_BOOL8:  # NNAPI's true is any nonzero byte; the harness sends 0 and 1
            values = (np.frombuffer(encoded, np.uint8) & 1).astype(np.uint8)
        case _:
            raise ValueError(f"no element encoding for {operand_type!r}")
    return values.reshape(shape).copy()


@functools.lru_cache(maxsize=4096)
def declared_dimensions(shape: tuple[int, ...], *, allow_unknown_rank: bool = True) -> st.SearchStrategy[tuple[int, ...]]:
    """How a model declares a shape: fully, with some axes unknown (0), or with unknown rank,
    each about a third of the time.

    One integer per declaration (a draw per axis cost more than the rest of an operand): its
    high part picks the form, its low ``rank`` bits the axes left unknown; 0 is fully known."""
    return st.integers(0, declaration_codes(len(shape), allow_unknown_rank) - 1).map(
        functools.partial(declared_by_code, tuple(shape)))


def declaration_codes(rank: int, allow_unknown_rank: bool = True) -> int:
    """How many codes `declared_by_code` reads for a shape of ``rank``: a form (known, some axes
    unknown, and unknown rank if allowed) times a bit per axis."""
    return (3 if allow_unknown_rank else 2) * 2**rank


def declared_by_code(shape: tuple[int, ...], code: int) -> tuple[int, ...]:
    form, hidden = divmod(code, 2 ** len(shape))
    if form == 0:
        return shape
    if form == 1:
        return tuple(0 if hidden >> axis & 1 else d for axis, d in enumerate(shape))
    return ()
