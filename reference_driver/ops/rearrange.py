"""The operations that move elements without computing on them (NeuralNetworks.h, HAL 1.3):
SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, SPACE_TO_DEPTH, DEPTH_TO_SPACE, TRANSPOSE, PAD, PAD_V2, TILE.

Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM and _SIGNED (TILE also TENSOR_INT32); a
quantized output has its input's scale and zeroPoint, so that every output element is a stored
input element or a padding value.  The padding of a quantized tensor is its zeroPoint (the real
value 0), as NNAPI's CPU implementation pads it; PAD_V2 gives its own value (a FLOAT32 scalar, a
FLOAT16 one for a TENSOR_FLOAT16 input, an INT32 stored value for a quantized one).  The
space/batch/depth moves take 4-D tensors, NHWC unless their optional layout flag says NCHW, and
order blocks as TensorFlow does: an output batch (or depth) is indexed by block row, then block
column, then input batch (or depth).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType, is_quantized_type, numpy_dtype

from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, check_rank, first, quantization_kept, rank_at_most,
                       scalar, type_in)

INT32, BOOL = OperandType.INT32, OperandType.BOOL
TENSOR_INT32 = OperandType.TENSOR_INT32
#: The data types of every operation here but TILE, which takes TENSOR_INT32 too.
MOVED_TYPES = FLOAT_TENSORS | QUANT_TENSORS


def _same_output(ins: Sequence[Operand], outs: Sequence[Operand], allowed: frozenset[OperandType]) -> Refusal | None:
    """The data input of an allowed type, the output of the same type and quantization."""
    data, out = ins[0], outs[0]
    return first((
        type_in(ins, 0, allowed, "input"),
        None if out.type == data.type else Refusal(f"type {out.type.name} differs from the input's", 0, True),
        quantization_kept(data, out) if is_quantized_type(data.type) else None,
    ))


def _counts(ins: Sequence[Operand], outs: Sequence[Operand], least: int, most: int) -> Refusal | None:
    if least <= len(ins) <= most and len(outs) == 1:
        return None
    wanted = f"{least}" if least == most else f"{least} to {most}"
    return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: {wanted} inputs, 1 output)")


def _rank4(operand: Operand, position: int, output: bool = False) -> Refusal | None:
    if len(operand.dimensions) in (0, 4):
        return None
    return Refusal(f"rank {len(operand.dimensions)} (NNAPI: 4)", position, output)


def _vector(ins: Sequence[Operand], position: int, what: str, rank: int = 1) -> Refusal | None:
    operand = ins[position]
    return first((
        type_in(ins, position, {TENSOR_INT32}, what),
        None if len(operand.dimensions) in (0, rank) else Refusal(f"{what} of rank {len(operand.dimensions)} (NNAPI: {rank})",
                                                                 position),
    ))


def _layout_flag(ins: Sequence[Operand], at: int) -> Refusal | None:
    return type_in(ins, at, {BOOL}, "layout flag") if len(ins) > at else None


def _nchw(values: Sequence[np.ndarray], at: int) -> bool:
    return len(values) > at and np.size(values[at]) > 0 and bool(np.asarray(values[at]).reshape(()))


def _nhwc(data: np.ndarray, nchw: bool, what: str) -> np.ndarray:
    if np.ndim(data) != 4:
        raise KernelError(f"{what}: input of rank {np.ndim(data)} (NNAPI: 4)")
    return data.transpose(0, 2, 3, 1) if nchw else data


def _laid_out(result: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(result.transpose(0, 3, 1, 2) if nchw else result)


def _ints(value: np.ndarray) -> np.ndarray:
    return np.asarray(value).astype(np.int64).reshape(-1)


def _padding_value(ins: Sequence[Operand]) -> float | int:
    """What a padded element stores: the real value 0 (a quantized tensor's zeroPoint)."""
    return ins[0].zero_point if is_quantized_type(ins[0].type) else 0


# --------------------------------------------------------------------------- space, batch and depth


def validate_space_to_batch_nd(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input, block shape [2], paddings [2, 2], optional layout flag."""
    return _counts(ins, outs, 3, 4) or first((
        _same_output(ins, outs, MOVED_TYPES), _rank4(ins[0], 0), _rank4(outs[0], 0, True),
        _vector(ins, 1, "block shape"), _vector(ins, 2, "paddings", 2), _layout_flag(ins, 3)))


def run_space_to_batch_nd(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                          out: np.ndarray | None) -> np.ndarray:
    nchw = _nchw(values, 3)
    x = _nhwc(values[0], nchw, "SPACE_TO_BATCH_ND")
    block, paddings = _ints(values[1]), _ints(values[2])
    if block.shape != (2,) or np.any(block < 1):
        raise KernelError(f"SPACE_TO_BATCH_ND: block shape {block.tolist()} (NNAPI: 2 values, each at least 1)")
    if paddings.shape != (4,) or np.any(paddings < 0):
        raise KernelError(f"SPACE_TO_BATCH_ND: paddings {paddings.tolist()} (NNAPI: [2, 2], none negative)")
    (top, bottom, left, right), (bh, bw) = paddings.tolist(), block.tolist()
    padded = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=_padding_value(ins))
    n, h, w, c = padded.shape
    if h % bh or w % bw:
        raise KernelError(f"SPACE_TO_BATCH_ND: padded height and width {h}, {w} not multiples of the block {bh}, {bw}")
    # [n, h/bh, bh, w/bw, bw, c] -> [bh, bw, n, h/bh, w/bw, c]: the block offset leads the output batch
    blocks = padded.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    return _laid_out(blocks.reshape(bh * bw * n, h // bh, w // bw, c), nchw)


def validate_batch_to_space_nd(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input, block shape [2], optional layout flag."""
    return _counts(ins, outs, 2, 3) or first((
        _same_output(ins, outs, MOVED_TYPES), _rank4(ins[0], 0), _rank4(outs[0], 0, True),
        _vector(ins, 1, "block shape"), _layout_flag(ins, 2)))


def run_batch_to_space_nd(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                          out: np.ndarray | None) -> np.ndarray:
    nchw = _nchw(values, 2)
    x = _nhwc(values[0], nchw, "BATCH_TO_SPACE_ND")
    block = _ints(values[1])
    if block.shape != (2,) or np.any(block < 1):
        raise KernelError(f"BATCH_TO_SPACE_ND: block shape {block.tolist()} (NNAPI: 2 values, each at least 1)")
    bh, bw = block.tolist()
    batches, h, w, c = x.shape
    if batches % (bh * bw):
        raise KernelError(f"BATCH_TO_SPACE_ND: {batches} batches not a multiple of the block's {bh * bw} elements")
    n = batches // (bh * bw)
    moved = x.reshape(bh, bw, n, h, w, c).transpose(2, 3, 0, 4, 1, 5)
    return _laid_out(moved.reshape(n, h * bh, w * bw, c), nchw)


def _validate_depth_move(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input, block size (INT32), optional layout flag."""
    return _counts(ins, outs, 2, 3) or first((
        _same_output(ins, outs, MOVED_TYPES), _rank4(ins[0], 0), _rank4(outs[0], 0, True),
        type_in(ins, 1, {INT32}, "block size"), _layout_flag(ins, 2)))


validate_space_to_depth = validate_depth_to_space = _validate_depth_move


def _block_size(values: Sequence[np.ndarray], what: str) -> int:
    size = scalar(values[1])
    if size < 1:
        raise KernelError(f"{what}: block size {size} (NNAPI: at least 1)")
    return size


def run_space_to_depth(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                       out: np.ndarray | None) -> np.ndarray:
    nchw = _nchw(values, 2)
    x = _nhwc(values[0], nchw, "SPACE_TO_DEPTH")
    b = _block_size(values, "SPACE_TO_DEPTH")
    n, h, w, c = x.shape
    if h % b or w % b:
        raise KernelError(f"SPACE_TO_DEPTH: height and width {h}, {w} not multiples of the block size {b}")
    moved = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return _laid_out(moved.reshape(n, h // b, w // b, b * b * c), nchw)


def run_depth_to_space(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                       out: np.ndarray | None) -> np.ndarray:
    nchw = _nchw(values, 2)
    x = _nhwc(values[0], nchw, "DEPTH_TO_SPACE")
    b = _block_size(values, "DEPTH_TO_SPACE")
    n, h, w, c = x.shape
    if c % (b * b):
        raise KernelError(f"DEPTH_TO_SPACE: depth {c} not a multiple of the block size squared {b * b}")
    moved = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return _laid_out(moved.reshape(n, h * b, w * b, c // (b * b)), nchw)


# --------------------------------------------------------------------------- transpose, pad, tile


def validate_transpose(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank up to 4), optional permutation (1-D TENSOR_INT32; omitted or empty: reversed axes)."""
    return _counts(ins, outs, 1, 2) or first((
        _same_output(ins, outs, MOVED_TYPES), rank_at_most(ins[:1]), rank_at_most(outs, output=True),
        _vector(ins, 1, "permutation") if len(ins) > 1 else None))


def run_transpose(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                  out: np.ndarray | None) -> np.ndarray:
    x = values[0]
    check_rank((x,), "TRANSPOSE")
    rank = x.ndim
    perm = _ints(values[1]) if len(values) > 1 and np.size(values[1]) else np.arange(rank)[::-1]
    if sorted(perm.tolist()) != list(range(rank)):
        raise KernelError(f"TRANSPOSE: permutation {perm.tolist()} of a rank-{rank} input (NNAPI: each axis once)")
    return np.ascontiguousarray(x.transpose(perm.tolist()))


def validate_pad(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank up to 4), paddings [rank, 2] (TENSOR_INT32)."""
    return _counts(ins, outs, 2, 2) or first((
        _same_output(ins, outs, MOVED_TYPES), rank_at_most(ins[:1]), rank_at_most(outs, output=True),
        _vector(ins, 1, "paddings", 2)))


#: PAD_V2's pad value type per input type.
PAD_VALUE_TYPES = {OperandType.TENSOR_FLOAT32: OperandType.FLOAT32, OperandType.TENSOR_FLOAT16: OperandType.FLOAT16,
                   **{t: INT32 for t in QUANT_TENSORS}}


def validate_pad_v2(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank up to 4), paddings [rank, 2], the pad value (a scalar of `PAD_VALUE_TYPES`)."""
    if (refused := _counts(ins, outs, 3, 3) or validate_pad(ins[:2], outs)) is not None:
        return refused
    wanted = PAD_VALUE_TYPES[ins[0].type]
    return type_in(ins, 2, {wanted}, "pad value")


def _padded(values: Sequence[np.ndarray], what: str, fill: float | int) -> np.ndarray:
    x = values[0]
    check_rank((x,), what)
    paddings = _ints(values[1])
    if paddings.size != 2 * x.ndim or np.any(paddings < 0):
        raise KernelError(f"{what}: paddings {paddings.tolist()} for a rank-{x.ndim} input (NNAPI: [rank, 2], none negative)")
    return np.pad(x, paddings.reshape(x.ndim, 2).tolist(), constant_values=fill)


def run_pad(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    return _padded(values, "PAD", _padding_value(ins))


def run_pad_v2(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    fill = np.asarray(values[2]).reshape(())
    if is_quantized_type(ins[0].type):
        limits = np.iinfo(numpy_dtype(ins[0].type))
        if not limits.min <= int(fill) <= limits.max:
            raise KernelError(f"PAD_V2: pad value {int(fill)} outside {ins[0].type.name}'s range")
    return _padded(values, "PAD_V2", fill.item())


TILE_TYPES = MOVED_TYPES | {TENSOR_INT32}


def validate_tile(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Input (rank at least 1), multiples (1-D TENSOR_INT32, one per axis)."""
    return _counts(ins, outs, 2, 2) or first((_same_output(ins, outs, TILE_TYPES), _vector(ins, 1, "multiples")))


def run_tile(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    x = values[0]
    multiples = _ints(values[1])
    if x.ndim < 1 or multiples.size != x.ndim or np.any(multiples < 1):
        raise KernelError(f"TILE: multiples {multiples.tolist()} for a rank-{x.ndim} input (NNAPI: one per axis, each positive)")
    return np.tile(x, multiples.tolist())


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.SPACE_TO_BATCH_ND: (validate_space_to_batch_nd, run_space_to_batch_nd),
    OperationType.BATCH_TO_SPACE_ND: (validate_batch_to_space_nd, run_batch_to_space_nd),
    OperationType.SPACE_TO_DEPTH: (validate_space_to_depth, run_space_to_depth),
    OperationType.DEPTH_TO_SPACE: (validate_depth_to_space, run_depth_to_space),
    OperationType.TRANSPOSE: (validate_transpose, run_transpose),
    OperationType.PAD: (validate_pad, run_pad),
    OperationType.PAD_V2: (validate_pad_v2, run_pad_v2),
    OperationType.TILE: (validate_tile, run_tile),
}
