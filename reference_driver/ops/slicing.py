"""The operations that take part of a tensor or change its rank (NeuralNetworks.h, HAL 1.3):
STRIDED_SLICE, SLICE, GATHER, SQUEEZE, EXPAND_DIMS, SPLIT (several outputs) and TOPK_V2 (values
and their indices).

Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM and _SIGNED, and TENSOR_INT32 for all
but STRIDED_SLICE and SQUEEZE; every data output has the input's type, scale and zeroPoint, so an
output element is a stored input element.  An axis given as an INT32 scalar may be negative,
counting from the end.  STRIDED_SLICE clamps its begin and end as TensorFlow's kernel (which
NNAPI's CPU implementation runs) does; an axis its shrink mask names must select one element with
a positive stride (NNAPI refuses an execution otherwise).  TOPK_V2 lists the k largest values of
each last-axis row, largest first, equal values in index order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType, is_quantized_type

from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, check_rank, first, quantization_kept,
                       rank_at_most, scalar, type_in)

INT32, TENSOR_INT32 = OperandType.INT32, OperandType.TENSOR_INT32
SLICED_TYPES = FLOAT_TENSORS | QUANT_TENSORS
WITH_INT32 = SLICED_TYPES | {TENSOR_INT32}


def _counts(ins: Sequence[Operand], outs: Sequence[Operand], least: int, most: int, outputs: int | None = 1) -> Refusal | None:
    if least <= len(ins) <= most and (outputs is None or len(outs) == outputs):
        return None
    wanted = f"{least}" if least == most else f"{least} to {most}"
    return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: {wanted} inputs, "
                   f"{'one output per split' if outputs is None else f'{outputs} output' + ('s' if outputs > 1 else '')})")


def _data_outputs(ins: Sequence[Operand], outs: Sequence[Operand], allowed: frozenset[OperandType]) -> Refusal | None:
    """The data input of an allowed type; each given output of its type and quantization."""
    data = ins[0]
    return first((
        type_in(ins, 0, allowed, "input"),
        first(None if out.type == data.type else Refusal(f"type {out.type.name} differs from the input's", i, True)
              for i, out in enumerate(outs)),
        first(None if r is None else Refusal(r.feature, i, True) for i, r in
              enumerate(quantization_kept(data, out) if is_quantized_type(data.type) else None for out in outs)),
    ))


def _vector(ins: Sequence[Operand], position: int, what: str) -> Refusal | None:
    operand = ins[position]
    return first((
        type_in(ins, position, {TENSOR_INT32}, what),
        None if len(operand.dimensions) in (0, 1) else Refusal(f"{what} of rank {len(operand.dimensions)} (NNAPI: 1)", position),
    ))


def _ints(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _axis(value: np.ndarray, rank: int, what: str) -> int:
    """An axis in [-rank, rank), counted from the end when negative."""
    axis = scalar(value)
    if not -rank <= axis < rank:
        raise KernelError(f"{what}: axis {axis} out of range for rank {rank} (NNAPI: -{rank} to {rank - 1})")
    return axis % rank


def _bit(mask: int, axis: int) -> bool:
    return bool(mask >> axis & 1)


# --------------------------------------------------------------------------- STRIDED_SLICE and SLICE


def validate_strided_slice(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank up to 4), begin, end and strides (1-D TENSOR_INT32), begin, end and shrink-axis masks (INT32)."""
    return _counts(ins, outs, 7, 7) or first((
        _data_outputs(ins, outs, SLICED_TYPES), rank_at_most(ins[:1]), rank_at_most(outs, output=True),
        _vector(ins, 1, "begin"), _vector(ins, 2, "end"), _vector(ins, 3, "strides"),
        first(type_in(ins, i, {INT32}, what) for i, what in ((4, "begin mask"), (5, "end mask"), (6, "shrink-axis mask")))))


def _clamped(index: int, size: int, ascending: bool) -> int:
    """TensorFlow's start or stop on one axis: negative counts from the end, then clamped to the
    positions the stride's direction can reach ([0, size] up, [-1, size - 1] down)."""
    index = index + size if index < 0 else index
    return min(max(index, 0), size) if ascending else min(max(index, -1), size - 1)


def strided_slice_bounds(shape: Sequence[int], begins: Sequence[int], ends: Sequence[int], strides: Sequence[int],
                         begin_mask: int, end_mask: int, shrink_mask: int) -> tuple[list[np.ndarray], list[int]]:
    """Each axis's selected indexes, and the sizes of the axes that stay (those the shrink mask does not name)."""
    rank = len(shape)
    if not len(begins) == len(ends) == len(strides) == rank:
        raise KernelError(f"STRIDED_SLICE: begin, end and strides of lengths {len(begins)}, {len(ends)}, {len(strides)} "
                          f"for a rank-{rank} input (NNAPI: one per axis)")
    slices, kept = [], []
    for axis, (size, begin, end, stride) in enumerate(zip(shape, begins, ends, strides)):
        if stride == 0:
            raise KernelError(f"STRIDED_SLICE: stride 0 on axis {axis}")
        up = stride > 0
        start = (0 if up else size - 1) if _bit(begin_mask, axis) else _clamped(begin, size, up)
        stop = (size if up else -1) if _bit(end_mask, axis) else _clamped(end, size, up)
        count = max(0, -(-(stop - start) // stride))
        if _bit(shrink_mask, axis):
            if not up or count != 1:
                raise KernelError(f"STRIDED_SLICE: axis {axis} shrunk with stride {stride} and {count} elements "
                                  "(NNAPI: one element, a positive stride)")
        else:
            kept.append(count)
        slices.append(start + stride * np.arange(count))
    return slices, kept


def run_strided_slice(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                      out: np.ndarray | None) -> np.ndarray:
    x = values[0]
    check_rank((x,), "STRIDED_SLICE")
    masks = [scalar(v) for v in values[4:7]]
    slices, kept = strided_slice_bounds(x.shape, _ints(values[1]), _ints(values[2]), _ints(values[3]), *masks)
    return np.ascontiguousarray(x[np.ix_(*slices)].reshape(kept)) if x.ndim else x.copy()


def validate_slice(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank up to 4), begin and size (1-D TENSOR_INT32; a size of -1 takes the rest of the axis)."""
    return _counts(ins, outs, 3, 3) or first((
        _data_outputs(ins, outs, WITH_INT32), rank_at_most(ins[:1]), rank_at_most(outs, output=True),
        _vector(ins, 1, "begin"), _vector(ins, 2, "size")))


def run_slice(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    x = values[0]
    check_rank((x,), "SLICE")
    begins, sizes = _ints(values[1]), _ints(values[2])
    if not len(begins) == len(sizes) == x.ndim:
        raise KernelError(f"SLICE: begin {begins} and size {sizes} for a rank-{x.ndim} input (NNAPI: one per axis)")
    slices = []
    for axis, (dim, begin, size) in enumerate(zip(x.shape, begins, sizes)):
        size = dim - begin if size == -1 else size
        if begin < 0 or size < 0 or begin + size > dim:
            raise KernelError(f"SLICE: begin {begin} and size {sizes[axis]} on axis {axis} of size {dim}")
        slices.append(slice(begin, begin + size))
    return np.ascontiguousarray(x[tuple(slices)])


# --------------------------------------------------------------------------- GATHER


def validate_gather(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank at least 1), axis (INT32), indices (TENSOR_INT32 of any rank)."""
    return _counts(ins, outs, 3, 3) or first((
        _data_outputs(ins, outs, WITH_INT32), type_in(ins, 1, {INT32}, "axis"),
        type_in(ins, 2, {TENSOR_INT32}, "indices")))


def run_gather(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    x, indices = values[0], np.asarray(values[2]).astype(np.int64)
    if x.ndim < 1:
        raise KernelError("GATHER: a scalar input (NNAPI: rank at least 1)")
    axis = _axis(values[1], x.ndim, "GATHER")
    if indices.size and (indices.min() < 0 or indices.max() >= x.shape[axis]):
        raise KernelError(f"GATHER: an index outside [0, {x.shape[axis]}) on axis {axis}")
    return np.take(x, indices, axis=axis)


# --------------------------------------------------------------------------- SQUEEZE and EXPAND_DIMS


def validate_squeeze(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank up to 4), optional axes to squeeze (1-D TENSOR_INT32; omitted or empty: every axis of size 1)."""
    return _counts(ins, outs, 1, 2) or first((
        _data_outputs(ins, outs, SLICED_TYPES), rank_at_most(ins[:1]), rank_at_most(outs, output=True),
        _vector(ins, 1, "axes") if len(ins) > 1 else None))


def run_squeeze(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    x = values[0]
    check_rank((x,), "SQUEEZE")
    if len(values) > 1 and np.size(values[1]):
        axes = {_axis(np.asarray(a), x.ndim, "SQUEEZE") for a in _ints(values[1])}
        if any(x.shape[a] != 1 for a in axes):
            raise KernelError(f"SQUEEZE: axes {sorted(axes)} of {x.shape} not all of size 1")
    else:
        axes = {a for a, d in enumerate(x.shape) if d == 1}
    # every axis squeezed: a 1-D tensor of one element, as NNAPI's CPU implementation shapes it
    return x.reshape([d for a, d in enumerate(x.shape) if a not in axes] or [1])


def validate_expand_dims(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input, axis (INT32, in [-(rank + 1), rank])."""
    return _counts(ins, outs, 2, 2) or first((_data_outputs(ins, outs, WITH_INT32), type_in(ins, 1, {INT32}, "axis")))


def run_expand_dims(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                    out: np.ndarray | None) -> np.ndarray:
    x = values[0]
    axis = _axis(values[1], x.ndim + 1, "EXPAND_DIMS")
    return x.reshape(x.shape[:axis] + (1,) + x.shape[axis:])


# --------------------------------------------------------------------------- SPLIT and TOPK_V2 (several outputs)


def validate_split(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank at least 1), axis and number of splits (INT32); one output per split."""
    return _counts(ins, outs, 3, 3, outputs=None) or first((
        None if outs else Refusal("no output (NNAPI: one per split)"),
        _data_outputs(ins, outs, WITH_INT32), type_in(ins, 1, {INT32}, "axis"), type_in(ins, 2, {INT32}, "number of splits")))


def run_split(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
              out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    x = values[0]
    if x.ndim < 1:
        raise KernelError("SPLIT: a scalar input (NNAPI: rank at least 1)")
    axis, splits = _axis(values[1], x.ndim, "SPLIT"), scalar(values[2])
    if splits < 1 or x.shape[axis] % splits:
        raise KernelError(f"SPLIT: {splits} splits of axis {axis}, of size {x.shape[axis]} (NNAPI: a divisor of it)")
    return tuple(np.ascontiguousarray(part) for part in np.split(x, splits, axis=axis))


def validate_topk_v2(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank at least 1), k (INT32); outputs: the values (the input's type) and their indices (TENSOR_INT32)."""
    return _counts(ins, outs, 2, 2, outputs=2) or first((
        _data_outputs(ins, outs[:1], WITH_INT32), type_in(ins, 1, {INT32}, "k"),
        None if outs[1].type == TENSOR_INT32 else Refusal(f"indices of type {outs[1].type.name} (NNAPI: TENSOR_INT32)", 1, True)))


def run_topk_v2(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                out: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    x, k = values[0], scalar(values[1])
    if x.ndim < 1 or not 1 <= k <= x.shape[-1]:
        raise KernelError(f"TOPK_V2: k {k} for an input of shape {x.shape} (NNAPI: 1 to the last axis's size)")
    # a stable sort of the negated values: the largest first, equal ones in index order
    order = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :k]
    return np.ascontiguousarray(np.take_along_axis(x, order, axis=-1)), order.astype(np.int32)


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.STRIDED_SLICE: (validate_strided_slice, run_strided_slice),
    OperationType.SLICE: (validate_slice, run_slice),
    OperationType.GATHER: (validate_gather, run_gather),
    OperationType.SQUEEZE: (validate_squeeze, run_squeeze),
    OperationType.EXPAND_DIMS: (validate_expand_dims, run_expand_dims),
    OperationType.SPLIT: (validate_split, run_split),
    OperationType.TOPK_V2: (validate_topk_v2, run_topk_v2),
}
