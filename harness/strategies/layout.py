"""Models of the shape and layout operations: SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, SPACE_TO_DEPTH,
DEPTH_TO_SPACE, TRANSPOSE, PAD, PAD_V2, STRIDED_SLICE, SLICE, GATHER, SQUEEZE, EXPAND_DIMS, TILE,
SPLIT and TOPK_V2 (the last two with several outputs).

One family per kind of signature (`FAMILIES`); each model is one operation on an input, its
parameters constants (in the model's values or in a pool), of a type NNAPI gives the operation
and the driver declares, with the parameter types it needs declared too.  Parameters are drawn
where a bug shows: blocks that are not square, several batches and channels, permutations that
are not their own inverse, masks and negative indexes and strides, axes counted from the end,
padding of a quantized tensor with a zeroPoint that is not 0.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

from harness.api.hal import (Capabilities, DataLocation, Operand, OperandLifeTime, OperandType, Operation, OperationType,
                              Subgraph)

from .models import ModelCase, _Case, _Choices, _narrowed_to, _operation_and_type_of, _start
from .values import FLOAT_TYPES, QUANT_TYPES, arrays, usable_types

Op = OperationType
I32, INT32, BOOL = OperandType.TENSOR_INT32, OperandType.INT32, OperandType.BOOL
F16 = OperandType.TENSOR_FLOAT16

_MOVED = FLOAT_TYPES + QUANT_TYPES
#: NeuralNetworks.h's data types of each operation (HAL 1.3).
OPERATION_TYPES: dict[OperationType, tuple[OperandType, ...]] = {
    **{op: _MOVED for op in (Op.SPACE_TO_BATCH_ND, Op.BATCH_TO_SPACE_ND, Op.SPACE_TO_DEPTH, Op.DEPTH_TO_SPACE,
                             Op.TRANSPOSE, Op.PAD, Op.PAD_V2, Op.STRIDED_SLICE, Op.SQUEEZE)},
    **{op: _MOVED + (I32,) for op in (Op.SLICE, Op.GATHER, Op.EXPAND_DIMS, Op.TILE, Op.SPLIT, Op.TOPK_V2)},
}
FAMILIES: dict[str, tuple[OperationType, ...]] = {
    "space_batch": (Op.SPACE_TO_BATCH_ND, Op.BATCH_TO_SPACE_ND),
    "space_depth": (Op.SPACE_TO_DEPTH, Op.DEPTH_TO_SPACE),
    "transpose": (Op.TRANSPOSE,),
    "pad": (Op.PAD, Op.PAD_V2),
    "slice": (Op.STRIDED_SLICE, Op.SLICE),
    "gather": (Op.GATHER,),
    "rank_change": (Op.SQUEEZE, Op.EXPAND_DIMS),
    "tile": (Op.TILE,),
    "several_outputs": (Op.SPLIT, Op.TOPK_V2),
}
#: One family per operation above; then two operations in a row: one of a single output, its result a
#: temporary that a TRANSPOSE reads (the first operation's output shape unknown to the model half the time).
SINGLE_FAMILIES = dict(FAMILIES)
FAMILIES["chained"] = tuple(op for name, ops in SINGLE_FAMILIES.items() if name != "several_outputs" for op in ops)
#: The parameter types each operation's models need declared besides the data type.
_COMPANIONS: dict[OperationType, frozenset[OperandType]] = {
    Op.SPACE_TO_BATCH_ND: frozenset({I32}), Op.BATCH_TO_SPACE_ND: frozenset({I32}),
    Op.SPACE_TO_DEPTH: frozenset({INT32}), Op.DEPTH_TO_SPACE: frozenset({INT32}),
    Op.TRANSPOSE: frozenset({I32}), Op.PAD: frozenset({I32}), Op.PAD_V2: frozenset({I32}),
    Op.STRIDED_SLICE: frozenset({I32, INT32}), Op.SLICE: frozenset({I32}), Op.GATHER: frozenset({I32, INT32}),
    Op.SQUEEZE: frozenset({I32}), Op.EXPAND_DIMS: frozenset({INT32}), Op.TILE: frozenset({I32}),
    Op.SPLIT: frozenset({INT32}), Op.TOPK_V2: frozenset({I32, INT32}),
}
_PAD_VALUE = {OperandType.TENSOR_FLOAT32: OperandType.FLOAT32, F16: OperandType.FLOAT16}


def _companions(op: OperationType, type: OperandType) -> frozenset[OperandType]:
    if op == Op.PAD_V2:
        return _COMPANIONS[op] | {_PAD_VALUE.get(type, INT32)}
    return _COMPANIONS[op]


@functools.lru_cache(maxsize=1024)
def operation_types(caps: Capabilities, op: OperationType) -> tuple[OperandType, ...]:
    """The data types a model of ``op`` can have for this driver: NNAPI's, declared, with its parameters' types declared."""
    declared = caps.types_of(op)
    return tuple(t for t in usable_types(OPERATION_TYPES[op], declared) if _companions(op, t) <= declared)


def operations(caps: Capabilities, family: str) -> tuple[OperationType, ...]:
    """The operations of ``family`` a model can be built of for this driver (declared, on a type it declares)."""
    if family == "chained" and not (Op.TRANSPOSE in caps.operations and operation_types(caps, Op.TRANSPOSE)):
        return ()
    return tuple(op for op in FAMILIES[family] if op in caps.operations and operation_types(caps, op))


def _operation_and_type(c: _Choices, caps: Capabilities, family: str) -> tuple[OperationType, OperandType]:
    return _operation_and_type_of(c, operations(caps, family), functools.partial(operation_types, caps))


class _Model:
    """One operation's model under construction: the data input, its parameters as constants."""

    def __init__(self, draw, c: _Choices, type: OperandType) -> None:
        self.draw, self.c, self.type, self.case = draw, c, type, _Case(c)
        self.quant = c.quantization(type, "input and output")
        self.x = -1

    def input(self, shape: tuple[int, ...], distinct_rows: bool = False) -> np.ndarray:
        value = self.draw(arrays(self.type, shape), label="input")
        if distinct_rows:  # each last-axis row a permutation of distinct values, in the drawn values' order
            ranks = np.argsort(np.argsort(value, axis=-1, kind="stable"), axis=-1, kind="stable")
            value = (ranks * 0.5 - 1 if self.type in FLOAT_TYPES else ranks - (0 if self.type == OperandType.TENSOR_QUANT8_ASYMM
                                                                                else 1)).astype(value.dtype)
        self.x = self.case.operand(self.type, value, self.quant, label="input")
        return value

    def constant(self, type: OperandType, value, label: str) -> int:
        how = self.c.choice(("copy", "reference"), f"{label} given as")
        return self.case.b.constant(type, value, by_reference=how == "reference")

    def ints(self, value, label: str) -> int:
        return self.constant(I32, np.asarray(value, np.int32), label)

    def scalar(self, value: int) -> int:
        return self.case.b.scalar(value)

    def flag(self, nchw: bool | None) -> list[int]:
        return [] if nchw is None else [self.case.b.constant(BOOL, nchw)]

    def done(self, op: OperationType, inputs: list[int], shape: tuple[int, ...], label: str) -> ModelCase:
        self.case.output(op, [self.x, *inputs], self.type, shape, self.quant)
        return self.case.done([shape], label)


def _layout(c: _Choices, caps: Capabilities) -> bool | None:
    """The optional layout flag: omitted, NHWC or NCHW (when BOOL is declared)."""
    if BOOL not in caps.operand_types:
        return None
    return c.choice((None, False, True), "layout")


def _nchw(shape: tuple[int, ...], nchw: bool | None) -> tuple[int, ...]:
    n, h, w, c = shape
    return (n, c, h, w) if nchw else shape


def _from_end(c: _Choices, axis: int, rank: int, label: str) -> int:
    """``axis``, or the same axis counted from the end."""
    return axis - rank if c.boolean(f"{label} from the end") else axis


@st.composite
def space_batch_models(draw, caps: Capabilities) -> ModelCase:
    """SPACE_TO_BATCH_ND (blocks of 1 to 3 a side, not always square, padding each side 0 to 2, a
    quantized tensor padded with its zeroPoint) and BATCH_TO_SPACE_ND, either layout."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "space_batch")
    bh, bw = c.integer(1, 3, "block height"), c.integer(1, 3, "block width")
    n, depth = c.integer(1, 2, "batches"), c.integer(1, 3, "depth")
    pads = [0, 0, 0, 0]
    if op == Op.SPACE_TO_BATCH_ND:
        h, w = c.integer(1, 5, "height"), c.integer(1, 5, "width")
        top, left = c.integer(0, 2, "padding top"), c.integer(0, 2, "padding left")
        # the bottom and right padding that make the padded size a multiple of the block, or one block more
        bottom = (-(h + top)) % bh + bh * c.integer(0, 1, "padding bottom block")
        right = (-(w + left)) % bw + bw * c.integer(0, 1, "padding right block")
        pads = [top, bottom, left, right]
        in_shape = (n, h, w, depth)
        out = (n * bh * bw, (h + pads[0] + pads[1]) // bh, (w + pads[2] + pads[3]) // bw, depth)
    else:
        h, w = c.integer(1, 3, "height"), c.integer(1, 3, "width")
        in_shape, out = (n * bh * bw, h, w, depth), (n, h * bh, w * bw, depth)
    nchw = _layout(c, caps)
    m = _Model(draw, c, type)
    m.input(_nchw(in_shape, nchw))
    params = [m.ints([bh, bw], "block shape")]
    if op == Op.SPACE_TO_BATCH_ND:
        params.append(m.ints(np.reshape(pads, (2, 2)), "paddings"))
    return m.done(op, [*params, *m.flag(nchw)], _nchw(out, nchw),
                  f"{op.name} {type.name} block {bh}x{bw}{' NCHW' if nchw else ''}")


@st.composite
def space_depth_models(draw, caps: Capabilities) -> ModelCase:
    """SPACE_TO_DEPTH and DEPTH_TO_SPACE, blocks of 1 to 3, several channels, either layout."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "space_depth")
    b, n = c.integer(1, 3, "block size"), c.integer(1, 2, "batches")
    h, w, depth = c.integer(1, 3, "height"), c.integer(1, 3, "width"), c.integer(1, 3, "depth")
    if op == Op.SPACE_TO_DEPTH:
        in_shape, out = (n, h * b, w * b, depth), (n, h, w, depth * b * b)
    else:
        in_shape, out = (n, h, w, depth * b * b), (n, h * b, w * b, depth)
    nchw = _layout(c, caps)
    m = _Model(draw, c, type)
    m.input(_nchw(in_shape, nchw))
    return m.done(op, [m.scalar(b), *m.flag(nchw)], _nchw(out, nchw), f"{op.name} {type.name} block {b}{' NCHW' if nchw else ''}")


_PERMUTATIONS = {rank: tuple(tuple(int(a) for a in p) for p in np.array(np.meshgrid(*[range(rank)] * rank)).T.reshape(-1, rank)
                             if len(set(p)) == rank) for rank in range(1, 5)}


@st.composite
def transpose_models(draw, caps: Capabilities) -> ModelCase:
    """TRANSPOSE of rank 1 to 4 by any permutation (most not their own inverse), or with the
    permutation omitted (the axes reversed)."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "transpose")
    shape = c.shape("shape", max_side=3)
    omitted = c.integer(0, 4, "permutation omitted") == 0
    perm = tuple(reversed(range(len(shape)))) if omitted else c.choice(_PERMUTATIONS[len(shape)], "permutation")
    m = _Model(draw, c, type)
    m.input(shape)
    params = [] if omitted else [m.ints(perm, "permutation")]
    return m.done(op, params, tuple(shape[a] for a in perm), f"TRANSPOSE {type.name} {'reversed' if omitted else perm}")


@st.composite
def pad_models(draw, caps: Capabilities) -> ModelCase:
    """PAD (a quantized tensor padded with its zeroPoint) and PAD_V2 (its own pad value), 0 to 2
    elements before and after each axis of a rank-1 to 4 tensor."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "pad")
    shape = c.shape("shape", max_side=3)
    pads = [(c.integer(0, 2, f"axis {a} before"), c.integer(0, 2, f"axis {a} after")) for a in range(len(shape))]
    m = _Model(draw, c, type)
    m.input(shape)
    params = [m.ints(pads, "paddings")]
    if op == Op.PAD_V2:
        if type in _PAD_VALUE:
            params.append(m.case.b.constant(_PAD_VALUE[type], c.choice((1.5, -2.0, 0.25), "pad value")))
        else:  # a stored value of the quantized type
            low, high = (0, 255) if type == OperandType.TENSOR_QUANT8_ASYMM else (-128, 127)
            params.append(m.scalar(c.integer(low, high, "pad value")))
    out = tuple(d + before + after for d, (before, after) in zip(shape, pads))
    return m.done(op, params, out, f"{op.name} {type.name}")


def _strided_count(size: int, begin: int, end: int, stride: int, begin_masked: bool, end_masked: bool) -> int:
    """How many elements STRIDED_SLICE takes on one axis (NeuralNetworks.h; indexes counted from the
    end when negative, then clamped to where the stride's direction can reach)."""
    def clamp(index: int) -> int:
        index = index + size if index < 0 else index
        return min(max(index, 0), size) if stride > 0 else min(max(index, -1), size - 1)

    start = (0 if stride > 0 else size - 1) if begin_masked else clamp(begin)
    stop = (size if stride > 0 else -1) if end_masked else clamp(end)
    return max(0, math.ceil((stop - start) / stride))


@st.composite
def slice_models(draw, caps: Capabilities) -> ModelCase:
    """STRIDED_SLICE (begins and ends negative or past the axis, strides of either sign, the begin
    and end masks, shrinking axes of one element) and SLICE (sizes of -1 included)."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "slice")
    shape = c.shape("shape", max_side=4)
    m = _Model(draw, c, type)
    m.input(shape)
    if op == Op.SLICE:
        begins = [c.integer(0, d - 1, f"axis {a} begin") for a, d in enumerate(shape)]
        sizes = [c.integer(0, d - b, f"axis {a} size") or -1 for a, (d, b) in enumerate(zip(shape, begins))]
        out = tuple(d - b if s == -1 else s for d, b, s in zip(shape, begins, sizes))
        return m.done(op, [m.ints(begins, "begin"), m.ints(sizes, "size")], out, f"SLICE {type.name}")
    begins = [c.integer(-d - 1, d, f"axis {a} begin") for a, d in enumerate(shape)]
    ends = [c.integer(-d - 1, d + 1, f"axis {a} end") for a, d in enumerate(shape)]
    strides = [c.choice((1, 2, -1, 3, -2), f"axis {a} stride") for a in range(len(shape))]
    begin_mask, end_mask = c.integer(0, 2 ** len(shape) - 1, "begin mask"), c.integer(0, 2 ** len(shape) - 1, "end mask")
    shrink = 0
    for axis, d in enumerate(shape):  # an axis of one element taken with stride 1 may be shrunk
        if c.integer(0, 3, f"axis {axis} shrunk") == 0:
            begins[axis], strides[axis] = c.integer(-d, d - 1, f"axis {axis} shrunk at"), 1
            ends[axis] = begins[axis] + 1 if begins[axis] != -1 else d
            begin_mask &= ~(1 << axis)
            end_mask &= ~(1 << axis)
            shrink |= 1 << axis
    kept = [_strided_count(d, begins[a], ends[a], strides[a], bool(begin_mask >> a & 1), bool(end_mask >> a & 1))
            for a, d in enumerate(shape) if not shrink >> a & 1]
    if not kept or 0 in kept:
        reject()  # nothing selected, or a scalar: no tensor output to compare
    params = [m.ints(begins, "begin"), m.ints(ends, "end"), m.ints(strides, "strides"),
              m.scalar(begin_mask), m.scalar(end_mask), m.scalar(shrink)]
    return m.done(op, params, tuple(kept), f"STRIDED_SLICE {type.name}")


@st.composite
def gather_models(draw, caps: Capabilities) -> ModelCase:
    """GATHER along any axis (counted from either end) of a rank-1 to 3 input, by indices of rank 1 or 2."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "gather")
    shape = c.shape("shape", max_rank=3, max_side=4)
    axis = c.integer(0, len(shape) - 1, "axis")
    index_shape = c.shape("indices", max_rank=2, max_side=3)
    indices = np.array([c.integer(0, shape[axis] - 1, f"index {i}") for i in range(int(np.prod(index_shape)))],
                       np.int32).reshape(index_shape)
    m = _Model(draw, c, type)
    m.input(shape)
    params = [m.scalar(_from_end(c, axis, len(shape), "axis")), m.ints(indices, "indices")]
    out = shape[:axis] + index_shape + shape[axis + 1:]
    return m.done(op, params, out, f"GATHER {type.name} axis {axis}")


@st.composite
def rank_change_models(draw, caps: Capabilities) -> ModelCase:
    """SQUEEZE (named axes of size 1, leaving other axes of size 1, or none named: every one) and
    EXPAND_DIMS (any axis, counted from either end)."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "rank_change")
    m = _Model(draw, c, type)
    if op == Op.EXPAND_DIMS:
        shape = c.shape("shape", max_rank=3)
        axis = c.integer(0, len(shape), "axis")
        m.input(shape)
        return m.done(op, [m.scalar(_from_end(c, axis, len(shape) + 1, "axis"))], shape[:axis] + (1,) + shape[axis:],
                      f"EXPAND_DIMS {type.name} axis {axis}")
    shape = tuple(1 if c.integer(0, 2, f"axis {a} of size 1") else c.integer(2, 3, f"axis {a} size")
                  for a in range(c.integer(1, 4, "rank")))
    units = [a for a, d in enumerate(shape) if d == 1]
    named: list[int] = []
    if units and c.integer(0, 3, "axes named"):
        # with two axes of size 1 or more, one is left unnamed: it stays, the rule a bug may miss
        kept = c.choice(units, "axis of size 1 kept") if len(units) > 1 else None
        named = [a for a in units if a != kept]
    squeezed = named or units
    out = tuple(d for a, d in enumerate(shape) if a not in squeezed) or (1,)
    m.input(shape)
    params = [m.ints([_from_end(c, a, len(shape), f"axis {a}") for a in named], "axes")] if named else []
    return m.done(op, params, out, f"SQUEEZE {type.name} {'axes ' + str(named) if named else 'every unit axis'}")


@st.composite
def tile_models(draw, caps: Capabilities) -> ModelCase:
    """TILE of a rank-1 to 4 tensor, each axis repeated 1 to 3 times."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "tile")
    shape = c.shape("shape", max_side=3)
    multiples = [c.integer(1, 3, f"axis {a} multiple") for a in range(len(shape))]
    m = _Model(draw, c, type)
    m.input(shape)
    return m.done(op, [m.ints(multiples, "multiples")], tuple(d * k for d, k in zip(shape, multiples)), f"TILE {type.name}")


@st.composite
def several_output_models(draw, caps: Capabilities) -> ModelCase:
    """SPLIT into 1 to 3 parts along any axis (counted from either end) and TOPK_V2 (k of the last
    axis, values and their TENSOR_INT32 indices): one output operand per result."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "several_outputs")
    m = _Model(draw, c, type)
    shape = c.shape("shape", max_side=3)
    if op == Op.SPLIT:
        axis = c.integer(0, len(shape) - 1, "axis")
        splits = c.integer(1, 3, "splits")
        shape = shape[:axis] + (shape[axis] * splits,) + shape[axis + 1:]
        m.input(shape)
        part = shape[:axis] + (shape[axis] // splits,) + shape[axis + 1:]
        outputs = [(type, c.declared(part, f"output {i}"), *m.quant) for i in range(splits)]
        inputs = [m.x, m.scalar(_from_end(c, axis, len(shape), "axis")), m.scalar(splits)]
        m.case.b.operation_outputs(op, inputs, outputs)
        return m.case.done([part] * splits, f"SPLIT {type.name} in {splits} on axis {axis}")
    m.input(shape, distinct_rows=True)  # equal values in a row: which index comes first is no rule of NNAPI's
    k = c.integer(1, shape[-1], "k")
    out = shape[:-1] + (k,)
    outputs = [(type, c.declared(out, "values"), *m.quant), (I32, c.declared(out, "indices"), 0.0, 0)]
    m.case.b.operation_outputs(op, [m.x, m.scalar(k)], outputs)
    return m.case.done([out, out], f"TOPK_V2 {type.name} k {k}")


@st.composite
def chained_models(draw, caps: Capabilities) -> ModelCase:
    """A model of any single-output family here whose output, a temporary, a TRANSPOSE then reads
    (on a type both take): each kernel's result is another's input, not only a request's output."""
    c = _start(draw)
    ops = tuple(op for op in operations(caps, "chained") if set(operation_types(caps, op)) & set(operation_types(caps, Op.TRANSPOSE)))
    if not ops:
        reject()  # no operation shares a type with TRANSPOSE for this driver: not an example
    first_op = c.choice(ops, "first operation")
    transposable = frozenset(operation_types(caps, Op.TRANSPOSE))
    narrowed = dataclasses.replace(caps, operations=frozenset({first_op}), operand_types=frozenset(
        t for t in caps.operand_types if t not in OPERATION_TYPES[first_op] or t in transposable))
    family = next(name for name, members in SINGLE_FAMILIES.items() if first_op in members)
    first = draw(MAKERS[family](narrowed), label="first operation's model")
    return _then_transpose(first, c)


def _then_transpose(first: ModelCase, c: _Choices) -> ModelCase:
    sub = first.subgraph
    middle = sub.output_indexes[0]
    shape = first.output_shapes[0]
    perm = c.choice(_PERMUTATIONS[len(shape)], "permutation")
    between = sub.operands[middle]
    dims = between.dimensions if c.boolean("temporary's shape declared") else tuple(0 for _ in between.dimensions)
    operands = list(sub.operands)
    operands[middle] = dataclasses.replace(between, dimensions=dims, lifetime=OperandLifeTime.TEMPORARY_VARIABLE)
    raw = np.asarray(perm, np.int32).tobytes()
    at = len(first.operand_values) + (-len(first.operand_values) % 8)
    operands.append(Operand(I32, (len(perm),), 0.0, 0, OperandLifeTime.CONSTANT_COPY, DataLocation(0, at, len(raw))))
    out_shape = tuple(shape[a] for a in perm)
    operands.append(Operand(between.type, c.declared(out_shape, "TRANSPOSE output"), between.scale, between.zero_point,
                            OperandLifeTime.SUBGRAPH_OUTPUT))
    operations = (*sub.operations, Operation(Op.TRANSPOSE, (middle, len(operands) - 2), (len(operands) - 1,)))
    subgraph = Subgraph(tuple(operands), operations, sub.input_indexes, (len(operands) - 1,))
    values = first.operand_values + b"\0" * (at - len(first.operand_values)) + raw
    return dataclasses.replace(first, subgraph=subgraph, operand_values=values, output_shapes=(out_shape,),
                               label=f"{first.label} then TRANSPOSE {perm}", choices=first.choices + tuple(c.made))


MAKERS: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    "space_batch": space_batch_models,
    "space_depth": space_depth_models,
    "transpose": transpose_models,
    "pad": pad_models,
    "slice": slice_models,
    "gather": gather_models,
    "rank_change": rank_change_models,
    "tile": tile_models,
    "several_outputs": several_output_models,
    "chained": chained_models,
}


@functools.lru_cache(maxsize=256)
def single_operation_models(caps: Capabilities, op: OperationType) -> st.SearchStrategy[ModelCase]:
    """Models of ``op`` alone (of one of `FAMILIES`): the driver's declarations narrowed to it."""
    return _narrowed_to(op, SINGLE_FAMILIES, MAKERS, caps)
