"""Models of the normalizations (L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION,
INSTANCE_NORMALIZATION), CHANNEL_SHUFFLE, the reductions (MEAN, REDUCE_SUM, REDUCE_PROD,
REDUCE_MAX, REDUCE_MIN, REDUCE_ALL, REDUCE_ANY), ARGMAX and ARGMIN, FILL and RANK.

One family per kind of signature (`FAMILIES`); each model is one operation of a type NNAPI gives
it and the driver declares, its parameters as constants of types the driver declares too.  Axes
are drawn counted from either end (a negative axis is where counting bugs are), reductions name
one or several axes, repeated sometimes, and keep or drop them.  REDUCE_PROD's values have
magnitudes in [1, 1.125): a product of up to 81 of them stays within float16's range.  ARGMAX's
and ARGMIN's values take a few levels only, so that ties, where the first index must win, are
common.  LOCAL_RESPONSE_NORMALIZATION's bias and alpha are positive, as its uses have them.
INSTANCE_NORMALIZATION's epsilon is one of 1e-3, 1e-2, 0.1 and 1, small values as NNAPI's CTS
examples use: at least 1e-3 because epsilon is all that keeps the division sane where a plane's
variance is about 0 (a plane of equal values, a plane of one element), and a correct driver's
variance (one-pass, in float16) may be that far off, so a smaller one would leave such planes
unjudged (`bounds.instance_normalization_magnitudes`) or divide by a rounding error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from harness.api.hal import Capabilities, OperandType, OperationType

from .models import ModelCase, _Case, _Choices, _narrowed_to, _operation_and_type_of, _start
from .values import FLOAT_TYPES, QUANT_TYPES, arrays, usable_types

Op = OperationType
I32, BOOL8 = OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
F16 = OperandType.TENSOR_FLOAT16
INT32, BOOL = OperandType.INT32, OperandType.BOOL
_FLOAT_QUANT = FLOAT_TYPES + QUANT_TYPES
#: NeuralNetworks.h's data types of each operation (HAL 1.3); FILL's are its output's.
OPERATION_TYPES: dict[OperationType, tuple[OperandType, ...]] = {
    Op.L2_NORMALIZATION: _FLOAT_QUANT, Op.LOCAL_RESPONSE_NORMALIZATION: FLOAT_TYPES,
    Op.INSTANCE_NORMALIZATION: FLOAT_TYPES, Op.CHANNEL_SHUFFLE: _FLOAT_QUANT,
    Op.MEAN: _FLOAT_QUANT, Op.REDUCE_SUM: FLOAT_TYPES, Op.REDUCE_PROD: FLOAT_TYPES, Op.REDUCE_MAX: _FLOAT_QUANT,
    Op.REDUCE_MIN: _FLOAT_QUANT, Op.REDUCE_ALL: (BOOL8,), Op.REDUCE_ANY: (BOOL8,),
    Op.ARGMAX: _FLOAT_QUANT + (I32,), Op.ARGMIN: _FLOAT_QUANT + (I32,),
    Op.FILL: FLOAT_TYPES + (I32,), Op.RANK: _FLOAT_QUANT + (I32, BOOL8),
}
FAMILIES: dict[str, tuple[OperationType, ...]] = {
    "l2_normalization": (Op.L2_NORMALIZATION,),
    "local_response_normalization": (Op.LOCAL_RESPONSE_NORMALIZATION,),
    "instance_normalization": (Op.INSTANCE_NORMALIZATION,),
    "channel_shuffle": (Op.CHANNEL_SHUFFLE,),
    "reduction": (Op.MEAN, Op.REDUCE_SUM, Op.REDUCE_PROD, Op.REDUCE_MAX, Op.REDUCE_MIN, Op.REDUCE_ALL, Op.REDUCE_ANY),
    "arg": (Op.ARGMAX, Op.ARGMIN),
    "fill": (Op.FILL,),
    "rank": (Op.RANK,),
}
#: NeuralNetworks.h: a quantized L2_NORMALIZATION's output quantization.
_L2_OUTPUT = {OperandType.TENSOR_QUANT8_ASYMM: (1 / 128, 128), OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (1 / 128, 0)}
_FILL_VALUE = {OperandType.TENSOR_FLOAT32: OperandType.FLOAT32, F16: OperandType.FLOAT16, I32: INT32}


def _companions(op: OperationType, type: OperandType) -> frozenset[OperandType]:
    """The operand types a model of ``op`` on ``type`` needs besides it (its parameters' and output's)."""
    if op == Op.LOCAL_RESPONSE_NORMALIZATION:  # radius, axis; bias, alpha, beta of the input's float type
        return frozenset({INT32, OperandType.FLOAT16 if type == F16 else OperandType.FLOAT32})
    if op == Op.INSTANCE_NORMALIZATION:  # gamma, beta, epsilon of the input's float type; the layout flag
        return frozenset({BOOL, OperandType.FLOAT16 if type == F16 else OperandType.FLOAT32})
    if op in (Op.L2_NORMALIZATION, Op.CHANNEL_SHUFFLE, Op.RANK):
        return frozenset({INT32})
    if op == Op.MEAN:
        return frozenset({I32, INT32})
    if op in FAMILIES["reduction"]:
        return frozenset({I32, BOOL})
    if op in FAMILIES["arg"]:
        return frozenset({INT32, I32})
    return frozenset({I32, _FILL_VALUE[type]})  # FILL


@functools.lru_cache(maxsize=1024)
def operation_types(caps: Capabilities, op: OperationType) -> tuple[OperandType, ...]:
    """The data types a model of ``op`` can have for this driver: NNAPI's, declared, with companions declared."""
    declared = caps.types_of(op)
    return tuple(t for t in usable_types(OPERATION_TYPES[op], declared) if _companions(op, t) <= declared)


def operations(caps: Capabilities, family: str) -> tuple[OperationType, ...]:
    """The operations of ``family`` a model can be built of for this driver (declared, on a type it declares)."""
    return tuple(op for op in FAMILIES[family] if op in caps.operations and operation_types(caps, op))


def _operation_and_type(c: _Choices, caps: Capabilities, family: str) -> tuple[OperationType, OperandType]:
    return _operation_and_type_of(c, operations(caps, family), functools.partial(operation_types, caps))


def _axis(c: _Choices, rank: int, label: str) -> tuple[int, int]:
    """An axis (from 0) and how the model names it: from 0 or from the end."""
    axis = c.integer(0, rank - 1, label)
    return axis, axis - rank if c.boolean(f"{label} from the end") else axis


def _values(draw, type: OperandType, shape: tuple[int, ...], label: str) -> np.ndarray:
    if type == BOOL8:
        return (draw(arrays(OperandType.TENSOR_FLOAT32, shape), label=label) > 0).astype(np.uint8)
    return draw(arrays(type, shape), label=label)


@st.composite
def l2_normalization_models(draw, caps: Capabilities) -> ModelCase:
    """L2_NORMALIZATION along an axis (or the last, the axis left out); a quantized output with
    NNAPI's fixed quantization."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "l2_normalization")
    shape = c.shape("shape")
    case = _Case(c)
    x = case.operand(type, _values(draw, type, shape, "x"), c.quantization(type, "x"), label="x")
    inputs = [x]
    if c.choice((True, True, False), "axis given"):
        inputs.append(case.b.scalar(_axis(c, len(shape), "axis")[1]))
    case.output(op, inputs, type, shape, _L2_OUTPUT.get(type, (0.0, 0)))
    return case.done([shape], f"L2_NORMALIZATION {type.name}{'' if len(inputs) > 1 else ' last axis'}")


@st.composite
def local_response_normalization_models(draw, caps: Capabilities) -> ModelCase:
    """LOCAL_RESPONSE_NORMALIZATION with a radius up to 3 (past the axis's length sometimes), bias,
    alpha and beta, along an axis (or the last, the axis left out)."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "local_response_normalization")
    shape = c.shape("shape", max_side=6)
    case = _Case(c)
    x = case.operand(type, _values(draw, type, shape, "x"), label="x")
    scalar_type = OperandType.FLOAT16 if type == F16 else OperandType.FLOAT32
    radius = c.choice((1, 2, 0, 3), "radius")
    parameters = [case.b.constant(scalar_type, c.choice(options, name))
                  for name, options in (("bias", (1.0, 2.0, 0.5)), ("alpha", (1.0, 0.5, 0.125)),
                                        ("beta", (0.5, 0.75, 1.0)))]
    inputs = [x, case.b.scalar(radius), *parameters]
    if c.choice((True, True, False), "axis given"):
        inputs.append(case.b.scalar(_axis(c, len(shape), "axis")[1]))
    case.output(op, inputs, type, shape)
    return case.done([shape], f"LOCAL_RESPONSE_NORMALIZATION {type.name} radius {radius}")


@st.composite
def instance_normalization_models(draw, caps: Capabilities) -> ModelCase:
    """INSTANCE_NORMALIZATION of a 4-D tensor of planes up to 6 by 6, NHWC or NCHW, with gamma
    (negative sometimes), beta and epsilon of the input's float type."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "instance_normalization")
    shape = tuple(c.integer(1, side, f"shape axis {axis}") for axis, side in enumerate((2, 6, 6, 3)))
    nchw = c.boolean("NCHW")
    if nchw:  # the same sizes, the channels moved ahead of the plane
        shape = (shape[0], shape[3], shape[1], shape[2])
    case = _Case(c)
    x = case.operand(type, _values(draw, type, shape, "x"), label="x")
    scalar_type = OperandType.FLOAT16 if type == F16 else OperandType.FLOAT32
    parameters = [case.b.constant(scalar_type, c.choice(options, name))
                  for name, options in (("gamma", (1.0, 0.5, -2.0, 1.5)), ("beta", (0.0, 0.5, -1.0, 3.0)),
                                        ("epsilon", (1e-3, 1e-2, 0.1, 1.0)))]
    case.output(op, [x, *parameters, case.b.constant(BOOL, nchw)], type, shape)
    return case.done([shape], f"INSTANCE_NORMALIZATION {type.name} {'NCHW' if nchw else 'NHWC'}")


@st.composite
def channel_shuffle_models(draw, caps: Capabilities) -> ModelCase:
    """CHANNEL_SHUFFLE of an axis of 2 to 12 channels into a number of groups that divides them
    (1 and all of them included); the output keeps the input's quantization."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "channel_shuffle")
    shape = list(c.shape("shape", max_side=3))
    axis, named = _axis(c, len(shape), "axis")
    shape[axis] = c.choice((6, 4, 12, 8, 9, 2, 3), "channels")
    groups = c.choice(tuple(g for g in (2, 3, 4, 1, 6) if shape[axis] % g == 0 and g <= shape[axis]), "groups")
    shape_t = tuple(shape)
    case = _Case(c)
    quant = c.quantization(type, "x and output")
    x = case.operand(type, _values(draw, type, shape_t, "x"), quant, label="x")
    case.output(op, [x, case.b.scalar(groups), case.b.scalar(named)], type, shape_t, quant)
    return case.done([shape_t], f"CHANNEL_SHUFFLE {type.name} {shape[axis]} channels in {groups} groups")


def _product_safe(value: np.ndarray) -> np.ndarray:
    """Magnitudes in [1, 1.125) with the value's sign: products of many stay finite in float16."""
    x = value.astype(np.float64)
    return (np.where(x < 0, -1.0, 1.0) * (1 + np.abs(x) / 64)).astype(value.dtype)


@st.composite
def reduction_models(draw, caps: Capabilities) -> ModelCase:
    """MEAN (a quantized output quantized its own way), REDUCE_SUM, REDUCE_PROD, REDUCE_MAX,
    REDUCE_MIN (a quantized output keeps the input's quantization), REDUCE_ALL and REDUCE_ANY
    over one or more axes, named from either end and sometimes twice, the axes kept or dropped."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "reduction")
    shape = c.shape("shape", max_side=3 if op == Op.REDUCE_PROD else 4)
    rank = len(shape)
    named = []
    for k in range(c.integer(1, rank, "axes")):
        named.append(_axis(c, rank, f"axis {k}")[1])
    if c.integer(0, 3, "an axis repeated") == 0:
        named.append(named[0])
    axes = sorted({a % rank for a in named})
    keep = c.boolean("keep_dims")
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        (tuple(d for i, d in enumerate(shape) if i not in axes) or (1,))
    value = _values(draw, type, shape, "x")
    if op == Op.REDUCE_PROD:
        value = _product_safe(value)
    case = _Case(c)
    in_quant = c.quantization(type, "x")
    out_quant = c.quantization(type, "output") if op == Op.MEAN else in_quant
    x = case.operand(type, value, in_quant, label="x")
    given = case.b.constant(I32, np.asarray(named, np.int32))
    flag = case.b.scalar(int(keep)) if op == Op.MEAN else case.b.constant(BOOL, keep)
    case.output(op, [x, given, flag], type, kept, out_quant)
    return case.done([kept], f"{op.name} {type.name} axes {named}{' kept' if keep else ''}")


def _few_levels(value: np.ndarray, type: OperandType) -> np.ndarray:
    """Five levels (equal elements common): floats rounded to multiples of 4, stored quantized and
    integer values to multiples of 64, 1000 apart."""
    if type in FLOAT_TYPES:
        return (np.round(value.astype(np.float64) / 4) * 4).astype(value.dtype)
    if type == I32:
        return ((value.astype(np.int64) % 5 - 2) * 1000).astype(value.dtype)
    return (value.astype(np.int64) // 64 * 64).astype(value.dtype)


@st.composite
def arg_models(draw, caps: Capabilities) -> ModelCase:
    """ARGMAX and ARGMIN along an axis named from either end, on values with ties; TENSOR_INT32 out,
    the axis removed ([1] from a 1-D input)."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "arg")
    shape = c.shape("shape")
    axis, named = _axis(c, len(shape), "axis")
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis) or (1,)
    case = _Case(c)
    x = case.operand(type, _few_levels(_values(draw, type, shape, "x"), type), c.quantization(type, "x"), label="x")
    case.output(op, [x, case.b.scalar(named)], I32, out_shape)
    return case.done([out_shape], f"{op.name} {type.name}")


@st.composite
def fill_models(draw, caps: Capabilities) -> ModelCase:
    """FILL of a shape given as a constant or a request input, with a value of the output's type."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "fill")
    shape = c.shape("shape")
    value = _values(draw, type, (1,), "value")[0]
    case = _Case(c)
    dims = case.operand(I32, np.asarray(shape, np.int32), how=c.choice(("copy", "input"), "dims given as"), label="dims")
    filled = case.b.constant(_FILL_VALUE[type], value)
    case.output(op, [dims, filled], type, shape)
    return case.done([shape], f"FILL {type.name}")


@st.composite
def rank_models(draw, caps: Capabilities) -> ModelCase:
    """RANK of a tensor of rank 1 to 4, given as a request input."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "rank")
    shape = c.shape("shape")
    case = _Case(c)
    x = case.operand(type, _values(draw, type, shape, "x"), c.quantization(type, "x"), label="x")
    case.output(op, [x], INT32, (), dims=())
    return case.done([()], f"RANK {type.name} rank {len(shape)}")


MAKERS: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    "l2_normalization": l2_normalization_models,
    "local_response_normalization": local_response_normalization_models,
    "instance_normalization": instance_normalization_models,
    "channel_shuffle": channel_shuffle_models,
    "reduction": reduction_models,
    "arg": arg_models,
    "fill": fill_models,
    "rank": rank_models,
}


@functools.lru_cache(maxsize=256)
def single_operation_models(caps: Capabilities, op: OperationType) -> st.SearchStrategy[ModelCase]:
    """Models of ``op`` alone (of one of `FAMILIES`): the driver's declarations narrowed to it."""
    return _narrowed_to(op, FAMILIES, MAKERS, caps)
