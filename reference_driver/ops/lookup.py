"""The lookup operations (NeuralNetworks.h, HAL 1.3): EMBEDDING_LOOKUP, HASHTABLE_LOOKUP and
LSH_PROJECTION.

EMBEDDING_LOOKUP gathers rows of its values by index; an index outside the rows fails the
execution.  HASHTABLE_LOOKUP finds each lookup among sorted keys and takes that key's row, or a
row of zero bytes when it is absent, and says which it was in a second output (hits, a
TENSOR_QUANT8_ASYMM of scale 1 and zeroPoint 0).  The output of both keeps the values' type and
quantization: a row is copied, never recomputed.

LSH_PROJECTION projects the items of its input (the slices along its first axis, read as
bytes) onto sign bits: for each seed of the hash tensor, every item's bytes prefixed with the
seed's float32 bytes are fingerprinted (FarmHash's Fingerprint64, as an int64), the
fingerprints summed with the items' weights (1 when the weights are omitted), and the bit is 1
when the sum is positive.  DENSE (2) gives every bit; SPARSE (3) packs each hash function's bits
into one int32, adding ``k << bits`` for the k-th function so that functions do not collide;
SPARSE_DEPRECATED (1) packs them without that offset.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandLifeTime, OperandType, OperationType

from ._fingerprint import fingerprint64, signed
from ._numeric import FLOAT_TENSORS, KernelError, Refusal, first, quantization_kept, scalar, type_in

F16, F32, I32 = OperandType.TENSOR_FLOAT16, OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32
QU8, QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
INT32 = OperandType.INT32
EMBEDDING_TYPES = frozenset({F16, F32, I32, QU8, QS8})
HASHTABLE_TYPES = frozenset({F32, I32, QU8})
LSH_INPUT_TYPES = frozenset({F16, F32, I32, QU8})
SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3


def _counts(ins: Sequence[Operand], outs: Sequence[Operand], inputs: int, outputs: int, names: str) -> Refusal | None:
    if len(ins) == inputs and len(outs) == outputs:
        return None
    return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: {names})")


def _rank(ins: Sequence[Operand], position: int, what: str, *, exactly: int | None = None,
          least: int | None = None) -> Refusal | None:
    """A rank NNAPI sets, checked when the model gives it (an unknown rank waits for execution)."""
    dims = ins[position].dimensions
    if not dims:
        return None
    if exactly is not None and len(dims) != exactly:
        return Refusal(f"{what} of rank {len(dims)} (NNAPI: {exactly})", position)
    if least is not None and len(dims) < least:
        return Refusal(f"{what} of rank {len(dims)} (NNAPI: at least {least})", position)
    return None


def _same_as(values: Operand, out: Operand, position: int = 0) -> Refusal | None:
    if out.type != values.type:
        return Refusal(f"type {out.type.name} differs from the values' {values.type.name}", position, True)
    if values.type in (QU8, QS8):
        kept = quantization_kept(values, out)
        return None if kept is None else Refusal(kept.feature.replace("input's", "values'"), position, True)
    return None


def validate_embedding_lookup(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Lookups (TENSOR_INT32, rank 1) and values (rank at least 2); the output of the values' type."""
    return _counts(ins, outs, 2, 1, "lookups and values; 1 output") or first((
        type_in(ins, 0, {I32}, "lookups"),
        _rank(ins, 0, "lookups", exactly=1),
        type_in(ins, 1, EMBEDDING_TYPES, "values"),
        _rank(ins, 1, "values", least=2),
        _same_as(ins[1], outs[0]),
    ))


def run_embedding_lookup(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                         out: np.ndarray | None) -> np.ndarray:
    lookups, table = values[0].reshape(-1), values[1]
    if table.ndim < 2:
        raise KernelError(f"EMBEDDING_LOOKUP: values of rank {table.ndim} (NNAPI: at least 2)")
    outside = (lookups < 0) | (lookups >= table.shape[0])
    if outside.any():
        raise KernelError(f"EMBEDDING_LOOKUP: index {int(lookups[outside][0])} outside the {table.shape[0]} rows of the values")
    return np.ascontiguousarray(table[lookups])


def validate_hashtable_lookup(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Lookups and keys (TENSOR_INT32, rank 1), values (rank at least 2); outputs: the values'
    type, and hits as TENSOR_QUANT8_ASYMM of scale 1 and zeroPoint 0."""
    hits = outs[1] if len(outs) == 2 else None
    return _counts(ins, outs, 3, 2, "lookups, keys and values; output and hits") or first((
        type_in(ins, 0, {I32}, "lookups"),
        _rank(ins, 0, "lookups", exactly=1),
        type_in(ins, 1, {I32}, "keys"),
        _rank(ins, 1, "keys", exactly=1),
        type_in(ins, 2, HASHTABLE_TYPES, "values"),
        _rank(ins, 2, "values", least=2),
        _same_as(ins[2], outs[0]),
        None if hits is None or hits.type == QU8 else Refusal(f"hits of type {hits.type.name} (NNAPI: TENSOR_QUANT8_ASYMM)", 1, True),
        None if hits is None or (hits.scale, hits.zero_point) == (1.0, 0)
        else Refusal(f"hits of scale {hits.scale} and zeroPoint {hits.zero_point} (NNAPI: 1.0 and 0)", 1, True),
    ))


def run_hashtable_lookup(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                         out: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    lookups, keys, table = values[0].reshape(-1), values[1].reshape(-1), values[2]
    if table.ndim < 2 or table.shape[0] != keys.size:
        raise KernelError(f"HASHTABLE_LOOKUP: {keys.size} keys for values of shape {table.shape} "
                          "(NNAPI: one key per row)")
    if keys.size > 1 and not (np.diff(keys.astype(np.int64)) > 0).all():
        raise KernelError("HASHTABLE_LOOKUP: the keys are not in strictly ascending order (NNAPI: sorted, a map)")
    at = np.searchsorted(keys, lookups)
    found = at < keys.size
    found[found] = keys[at[found]] == lookups[found]
    # a lookup that misses takes a row of zero bytes, whatever the values' zeroPoint
    rows = np.zeros((lookups.size, *table.shape[1:]), table.dtype)
    rows[found] = table[at[found]]
    return rows, found.astype(np.uint8)


def validate_lsh_projection(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Hash seeds (rank 2, float), input (rank at least 1), weights (rank 1, the seeds' type, may
    be omitted), type (INT32); a TENSOR_INT32 output."""
    counts = _counts(ins, outs, 4, 1, "hash, input, weight and type; 1 output")
    if counts is not None:
        return counts
    hashes, weights = ins[0], ins[2]
    omitted = weights.lifetime == OperandLifeTime.NO_VALUE
    return first((
        type_in(ins, 0, FLOAT_TENSORS, "hash"),
        _rank(ins, 0, "hash", exactly=2),
        None if len(hashes.dimensions) != 2 or hashes.dimensions[1] <= 32
        else Refusal(f"hash with {hashes.dimensions[1]} bits per function (NNAPI: at most 32)", 0),
        type_in(ins, 1, LSH_INPUT_TYPES, "input"),
        _rank(ins, 1, "input", least=1),
        None if omitted or weights.type == hashes.type
        else Refusal(f"weight of type {weights.type.name} differs from the hash's {hashes.type.name}", 2),
        None if omitted else _rank(ins, 2, "weight", exactly=1),
        type_in(ins, 3, {INT32}, "type"),
        None if outs[0].type == I32 else Refusal(f"output of type {outs[0].type.name} (NNAPI: TENSOR_INT32)", 0, True),
    ))


def _item_bytes(x: np.ndarray) -> list[bytes]:
    """The input's items (slices along its first axis) as the bytes they are stored in."""
    data = np.ascontiguousarray(x)
    return [data[i].tobytes() for i in range(data.shape[0])]


def _sign_bit(seed: np.float32, items: list[bytes], weights: np.ndarray | None) -> int:
    prefix = np.float32(seed).tobytes()
    score = 0.0
    for i, item in enumerate(items):
        value = float(signed(fingerprint64(prefix + item)))
        score += value if weights is None else float(weights[i]) * value
    return 1 if score > 0 else 0


def run_lsh_projection(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                       out: np.ndarray | None) -> np.ndarray:
    hashes, x, weights, kind = values[0], values[1], values[2], scalar(values[3])
    if hashes.ndim != 2 or x.ndim < 1:
        raise KernelError(f"LSH_PROJECTION: hash of rank {hashes.ndim} (NNAPI: 2), input of rank {x.ndim} (NNAPI: at least 1)")
    functions, bits = hashes.shape
    given = weights.size > 0  # an omitted weight arrives empty
    if given and (weights.ndim != 1 or weights.shape[0] != x.shape[0]):
        raise KernelError(f"LSH_PROJECTION: weights of shape {weights.shape} for {x.shape[0]} input items (NNAPI: one each)")
    if kind not in (SPARSE_DEPRECATED, DENSE, SPARSE):
        raise KernelError(f"LSH_PROJECTION: type {kind} (NNAPI: 1 sparse deprecated, 2 dense, 3 sparse)")
    if bits > 32 or kind != DENSE and functions and bits + math.ceil(math.log2(functions)) > 32:
        raise KernelError(f"LSH_PROJECTION: {functions} functions of {bits} bits do not fit a sparse int32 signature")
    items = _item_bytes(x)
    # the seeds and weights as the float32 the hash reads and the double the sum is taken in
    seeds = hashes.astype(np.float32)
    w = weights.astype(np.float64) if given else None
    signs = np.array([[_sign_bit(seeds[f, b], items, w) for b in range(bits)] for f in range(functions)], np.int64)
    if kind == DENSE:
        return signs.reshape(-1).astype(np.int32)
    packed = (signs << np.arange(bits - 1, -1, -1, dtype=np.int64)).sum(axis=1) if bits else np.zeros(functions, np.int64)
    if kind == SPARSE:
        packed = packed + np.arange(functions, dtype=np.int64) * (1 << bits)
    return packed.astype(np.int32)


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.EMBEDDING_LOOKUP: (validate_embedding_lookup, run_embedding_lookup),
    OperationType.HASHTABLE_LOOKUP: (validate_hashtable_lookup, run_hashtable_lookup),
    OperationType.LSH_PROJECTION: (validate_lsh_projection, run_lsh_projection),
}
