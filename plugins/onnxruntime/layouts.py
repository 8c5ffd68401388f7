"""The operations that move elements without computing on them: TRANSPOSE, SQUEEZE, EXPAND_DIMS,
TILE, GATHER, SLICE, STRIDED_SLICE, PAD, PAD_V2, SPLIT and TOPK_V2 (several outputs), DEPTH_TO_SPACE
and SPACE_TO_DEPTH, each translated to the ONNX operator that does the same move (Transpose, Squeeze,
Unsqueeze, Tile, Gather, Slice, Pad, Split, TopK, DepthToSpace, SpaceToDepth).

Types: TENSOR_FLOAT32, and TENSOR_INT32 where NeuralNetworks.h gives it to the operation (SLICE,
GATHER, EXPAND_DIMS, TILE, SPLIT, TOPK_V2); the 8-bit quantized types, the operations' own
(`OWN_TYPES`), for every operation but TOPK_V2: moving stored values is the same move whatever they
stand for, the output keeping the input's scale and zeroPoint (NNAPI), and a padding holding the
zeroPoint (PAD) or the stored pad value (PAD_V2's INT32).

Every parameter must be a constant (`check` raises `Unsupported` otherwise): ONNX takes most of them
as attributes, and where it takes a tensor it reads values NNAPI refuses as something else (a
negative padding crops, a negative index or a SLICE past the end of an axis counts from the end
or is clamped, a multiple of 0 empties an axis), so the driver checks them at preparation, where
NNAPI's CPU implementation would fail the execution, and reports the signature unsupported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.api.hal import Operand, OperandLifeTime, OperandType, OperationType

from .functions import Builder, Unsupported

F32, I32, INT32, BOOL, FLOAT32 = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.INT32,
                                  OperandType.BOOL, OperandType.FLOAT32)
Op = OperationType
#: Operation -> the data types it takes here (NeuralNetworks.h's, less those the driver does not declare).
TYPES: dict[OperationType, frozenset[OperandType]] = {
    **{op: frozenset({F32}) for op in (Op.TRANSPOSE, Op.SQUEEZE, Op.PAD, Op.PAD_V2, Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH,
                                       Op.STRIDED_SLICE)},
    **{op: frozenset({F32, I32}) for op in (Op.EXPAND_DIMS, Op.TILE, Op.GATHER, Op.SLICE, Op.SPLIT, Op.TOPK_V2)},
}
OPERATIONS = frozenset(TYPES)
_QUANTIZED = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})
#: The types these operations take beyond the driver's (`Capabilities.operation_types`).
OWN_TYPES: dict[OperationType, frozenset[OperandType]] = {op: _QUANTIZED for op in OPERATIONS - {Op.TOPK_V2}}
_STORED = {OperandType.TENSOR_QUANT8_ASYMM: np.uint8, OperandType.TENSOR_QUANT8_ASYMM_SIGNED: np.int8}
#: The operations whose tensors NeuralNetworks.h allows of any rank (n-D); the others stop at 4.
ANY_RANK = frozenset({Op.EXPAND_DIMS, Op.TILE, Op.GATHER, Op.SPLIT})
#: The operations with several outputs (every other one here has one).
SEVERAL_OUTPUTS = frozenset({Op.SPLIT, Op.TOPK_V2})
_INT64_MAX = np.iinfo(np.int64).max


def _constant(operand: Operand) -> bool:
    return operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _omitted(ins: Sequence[Operand], position: int) -> bool:
    """An optional input left out: absent, or given without a value (NNAPI: as if omitted)."""
    return len(ins) <= position or ins[position].lifetime == OperandLifeTime.NO_VALUE


def _need(condition: bool, why: str) -> None:
    if not condition:
        raise Unsupported(why)


def _ints(values: Mapping[int, np.ndarray], index: int) -> list[int]:
    return [int(v) for v in np.asarray(values[index]).reshape(-1)]


def _parameters(kind: OperationType, ins: Sequence[Operand], indexes: Sequence[int], values: Mapping[int, np.ndarray],
                types: Sequence[OperandType]) -> list[list[int]]:
    """Each parameter input after the data (of the given types): present, constant, its values."""
    _need(len(ins) == 1 + len(types), f"{kind.name}: {len(ins)} inputs")
    params = []
    for position, wanted in enumerate(types, 1):
        _need(ins[position].type == wanted and _constant(ins[position]) and indexes[position] in values,
              f"{kind.name}: input {position} must be a constant {wanted.name}")
        params.append(_ints(values, indexes[position]))
    return params


def _axis_in(axis: int, rank: int | None, kind: OperationType) -> None:
    _need(rank is None or -rank <= axis < rank, f"{kind.name}: axis {axis} for rank {rank}")


def check(kind: OperationType, ins: Sequence[Operand], outs: Sequence[Operand], values: Mapping[int, np.ndarray],
          indexes: Sequence[int]) -> None:
    data = ins[0]
    data_outputs = outs[:1] if kind == Op.TOPK_V2 else outs  # TOPK_V2's second output: the indices
    _need(data.type in TYPES[kind] | OWN_TYPES.get(kind, frozenset()) and all(o.type == data.type for o in data_outputs),
          f"{kind.name}: operand types")
    _need(data.type not in _QUANTIZED or all((o.scale, o.zero_point) == (data.scale, data.zero_point) for o in data_outputs),
          f"{kind.name}: an output of the input's scale and zeroPoint")
    _need(len(outs) >= 1 and (len(outs) == 1 or kind in SEVERAL_OUTPUTS), f"{kind.name}: {len(outs)} outputs")
    rank = len(data.dimensions) or None  # None: known only at execution
    size = {axis: d for axis, d in enumerate(data.dimensions) if d > 0}  # the sizes the model gives
    if kind in (Op.TRANSPOSE, Op.SQUEEZE):
        _need(len(ins) in (1, 2), f"{kind.name}: {len(ins)} inputs")
        if not _omitted(ins, 1):
            (axes,) = _parameters(kind, ins, indexes, values, (I32,))
            if kind == Op.TRANSPOSE:
                _need(sorted(axes) == list(range(len(axes) if rank is None else rank)), f"TRANSPOSE: permutation {axes}")
            for axis in axes if kind == Op.SQUEEZE else ():
                _axis_in(axis, rank, kind)
                _need(rank is None or size.get(axis % rank, 1) == 1, f"SQUEEZE: axis {axis} of size {size.get(axis)}")
    elif kind == Op.EXPAND_DIMS:
        (axis,), = _parameters(kind, ins, indexes, values, (INT32,))
        _axis_in(axis, None if rank is None else rank + 1, kind)
    elif kind == Op.TILE:
        (multiples,) = _parameters(kind, ins, indexes, values, (I32,))
        _need(len(multiples) == (rank or len(multiples)) and min(multiples) >= 1, f"TILE: multiples {multiples}")
    elif kind == Op.GATHER:
        (axis,), indices = _parameters(kind, ins, indexes, values, (INT32, I32))
        _axis_in(axis, rank, kind)
        limit = size.get(axis % rank) if rank is not None else None
        _need(all(0 <= i and (limit is None or i < limit) for i in indices), f"GATHER: indices {indices} on axis {axis}")
    elif kind == Op.SLICE:
        begins, sizes = _parameters(kind, ins, indexes, values, (I32, I32))
        _need(len(begins) == len(sizes) == (rank or len(begins)), f"SLICE: begin {begins} and size {sizes}")
        for axis, (begin, count) in enumerate(zip(begins, sizes)):
            limit = size.get(axis)
            _need(begin >= 0 and count >= -1 and (limit is None or begin + (0 if count == -1 else count) <= limit),
                  f"SLICE: begin {begin} and size {count} on axis {axis}")
    elif kind in (Op.PAD, Op.PAD_V2):
        types = (I32, FLOAT32) if kind == Op.PAD_V2 else (I32,)
        _need(len(ins) == 1 + len(types), f"{kind.name}: {len(ins)} inputs")
        _need(ins[1].type == I32 and _constant(ins[1]) and indexes[1] in values, f"{kind.name}: constant paddings")
        paddings = _ints(values, indexes[1])
        _need(len(paddings) == 2 * (rank or len(paddings) // 2) and min(paddings, default=0) >= 0,
              f"{kind.name}: paddings {paddings} for rank {rank}")
        if kind == Op.PAD_V2:
            wanted = INT32 if data.type in _QUANTIZED else FLOAT32
            _need(ins[2].type == wanted and _constant(ins[2]) and indexes[2] in values, "PAD_V2: a constant pad value")
    elif kind == Op.SPLIT:
        (axis,), (splits,) = _parameters(kind, ins, indexes, values, (INT32, INT32))
        _axis_in(axis, rank, kind)
        _need(splits == len(outs), f"SPLIT: {splits} splits into {len(outs)} outputs")
    elif kind == Op.STRIDED_SLICE:
        begins, ends, strides, (begin_mask,), (end_mask,), (shrink,) = _parameters(
            kind, ins, indexes, values, (I32, I32, I32, INT32, INT32, INT32))
        count = rank or len(begins)
        _need(len(begins) == len(ends) == len(strides) == count and 0 not in strides, f"STRIDED_SLICE: begin {begins}, "
              f"end {ends}, strides {strides}")
        for axis in range(count):
            if shrink >> axis & 1:  # one element, a positive stride (NNAPI; the reference checks the count at execution)
                _need(strides[axis] > 0, f"STRIDED_SLICE: axis {axis} shrunk with stride {strides[axis]}")
    elif kind == Op.TOPK_V2:
        (k,), = _parameters(kind, ins, indexes, values, (INT32,))
        limit = size.get(rank - 1) if rank is not None else None
        _need(len(outs) == 2 and outs[1].type == I32 and k >= 1 and (limit is None or k <= limit), f"TOPK_V2: k {k}")
    elif kind in (Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH):
        _need(rank in (None, 4) and len(ins) in (2, 3), f"{kind.name}: rank {rank}, {len(ins)} inputs")
        (block,), = _parameters(kind, ins[:2], indexes[:2], values, (INT32,))
        _need(block >= 1, f"{kind.name}: block size {block}")
        if len(ins) == 3:
            _need(ins[2].type == BOOL and _constant(ins[2]) and indexes[2] in values, f"{kind.name}: a constant layout flag")
    else:
        raise Unsupported(f"{kind.name} is not supported")


def translate(kind: OperationType, ins: Sequence[int], outs: Sequence[int], operands: Sequence[Operand],
              values: Mapping[int, np.ndarray], g: Builder) -> None:
    x, target = g.name[ins[0]], g.name[outs[0]]

    def int64s(numbers, hint: str) -> str:
        return g.const(np.asarray(numbers, np.int64), hint)

    present = [operands[i] for i in ins]
    if kind == Op.TRANSPOSE:
        if _omitted(present, 1):
            g.emit("Transpose", [x], target)  # ONNX's default permutation reverses the axes, as NNAPI's
        else:
            g.emit("Transpose", [x], target, perm=_ints(values, ins[1]))
    elif kind == Op.SQUEEZE:
        named = [] if _omitted(present, 1) else _ints(values, ins[1])
        squeezed = g.node("Squeeze", [x, int64s(named, "axes")] if named else [x])
        g.emit("Reshape", [squeezed, at_least_one_axis(squeezed, g)], target)
    elif kind == Op.EXPAND_DIMS:
        g.emit("Unsqueeze", [x, int64s(_ints(values, ins[1]), "axes")], target)  # axis from the end of the output, as NNAPI's
    elif kind == Op.TILE:
        g.emit("Tile", [x, int64s(_ints(values, ins[1]), "repeats")], target)
    elif kind == Op.GATHER:
        indices = np.asarray(values[ins[2]], np.int64)
        g.emit("Gather", [x, g.const(indices, "indices")], target, axis=_ints(values, ins[1])[0])
    elif kind == Op.SLICE:
        begins, sizes = _ints(values, ins[1]), _ints(values, ins[2])
        ends = [_INT64_MAX if count == -1 else begin + count for begin, count in zip(begins, sizes)]
        g.emit("Slice", [x, int64s(begins, "starts"), int64s(ends, "ends")], target)
    elif kind in (Op.PAD, Op.PAD_V2):
        paddings = np.asarray(values[ins[1]], np.int64).reshape(-1, 2)
        inputs = [x, g.const(paddings.T.reshape(-1), "pads")]  # NNAPI: [before, after] per axis; ONNX: every before first
        data = operands[ins[0]]
        stored = _STORED.get(data.type, np.float32)
        if kind == Op.PAD_V2:
            inputs.append(g.const(np.asarray(values[ins[2]]).astype(stored).reshape(()), "pad_value"))
        elif data.type in _STORED:  # a quantized tensor is padded with its zeroPoint, the stored value of 0
            inputs.append(g.const(stored(data.zero_point), "pad_value"))
        g.emit("Pad", inputs, target, mode="constant")
    elif kind == Op.SPLIT:
        # no split sizes: equal parts, one per output, as NNAPI's number of splits (checked equal to it)
        g.emit_several("Split", [x], [g.name[o] for o in outs], axis=_ints(values, ins[1])[0])
    elif kind == Op.STRIDED_SLICE:
        g.emit("Identity", [_strided_slice(x, [_ints(values, i) for i in ins[1:4]],
                                           *(_ints(values, i)[0] for i in ins[4:7]), g)], target)
    elif kind == Op.TOPK_V2:
        from onnx import TensorProto

        k = g.const(np.asarray([_ints(values, ins[1])[0]], np.int64), "k")
        # largest first (largest=1, sorted=1) along the last axis, as NNAPI's
        indices = g.name[outs[1]] + "_int64"
        g.emit_several("TopK", [x, k], [target, indices], axis=-1, largest=1, sorted=1)
        g.emit("Cast", [indices], g.name[outs[1]], to=TensorProto.INT32)
    elif kind in (Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH):
        block = _ints(values, ins[1])[0]
        nchw = len(ins) > 2 and bool(np.asarray(values[ins[2]]).reshape(()))
        onnx_op = "DepthToSpace" if kind == Op.DEPTH_TO_SPACE else "SpaceToDepth"
        # DCR, ONNX's default order: depth indexed by block row, block column, then channel, as TensorFlow's and NNAPI's
        attributes = {"blocksize": block, **({"mode": "DCR"} if kind == Op.DEPTH_TO_SPACE else {})}
        if nchw:
            g.emit(onnx_op, [x], target, **attributes)
        else:
            moved = g.node(onnx_op, [g.node("Transpose", [x], perm=[0, 3, 1, 2])], **attributes)
            g.emit("Transpose", [moved], target, perm=[0, 2, 3, 1])
    else:
        raise Unsupported(f"{kind.name} is not supported")


def at_least_one_axis(squeezed: str, g: Builder) -> str:
    """The shape of a squeezed tensor, or [1] where every axis went: NNAPI's CPU implementation gives
    a 1-D tensor of one element where ONNX's Squeeze gives a scalar.  The squeezed shape with a 1
    appended, cut to its first max(rank, 1) entries."""
    shape = g.node("Shape", [squeezed])
    extended = g.node("Concat", [shape, g.const(np.asarray([1], np.int64), "one")], axis=0)
    rank = g.node("Size", [shape])
    length = g.node("Max", [rank, g.const(np.int64(1), "one")])
    return g.node("Slice", [extended, g.const(np.asarray([0], np.int64), "zero"),
                            g.node("Unsqueeze", [length, g.const(np.asarray([0], np.int64), "axis")])])


def _strided_slice(x: str, bounds: list[list[int]], begin_mask: int, end_mask: int, shrink: int, g: Builder) -> str:
    """STRIDED_SLICE as ONNX's Slice, then a Squeeze of the shrunk axes.  Slice counts a negative
    start or end from the end of the axis and clamps them to where the step's direction reaches,
    as TensorFlow's kernel (NNAPI's) does; a masked start or end becomes the int64 extreme that
    Slice clamps to the axis's first or last element in that direction."""
    begins, ends, strides = bounds
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    starts = [(low if step > 0 else high) if begin_mask >> axis & 1 else begin
              for axis, (begin, step) in enumerate(zip(begins, strides))]
    stops = [(high if step > 0 else low) if end_mask >> axis & 1 else end
             for axis, (end, step) in enumerate(zip(ends, strides))]
    sliced = g.node("Slice", [x, g.const(np.asarray(starts, np.int64), "starts"), g.const(np.asarray(stops, np.int64), "ends"),
                              g.const(np.arange(len(begins), dtype=np.int64), "axes"),
                              g.const(np.asarray(strides, np.int64), "steps")])
    shrunk = [axis for axis in range(len(begins)) if shrink >> axis & 1]
    if not shrunk:
        return sliced
    # Squeeze fails on an axis of other than one element: the execution fails, as NNAPI's does.  Every
    # axis shrunk gives [1] (NNAPI's CTS, strided_slice_b155662254), where ONNX's Squeeze gives a scalar.
    squeezed = g.node("Squeeze", [sliced, g.const(np.asarray(shrunk, np.int64), "axes")])
    return g.node("Reshape", [squeezed, at_least_one_axis(squeezed, g)]) if len(shrunk) == len(begins) else squeezed
