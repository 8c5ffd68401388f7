"""RESHAPE and CONCATENATION."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, is_quantized_type, is_scalar_type

from ._numeric import (MAX_RANK, KernelError, Refusal, check_rank, first, from_real, quantization_kept, rank_at_most, scalar,
                       to_real)

#: NNAPI (NeuralNetworks.h, ANEURALNETWORKS_CONCATENATION): "Supported tensor rank: up to 4" (CHOICE-8).
MAX_CONCATENATION_RANK = MAX_RANK


def validate_reshape(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 2 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 2 inputs, 1 output)")
    data, shape = ins
    out = outs[0]
    return first((
        Refusal(f"input of scalar type {data.type.name}", 0) if is_scalar_type(data.type) else None,
        None if out.type == data.type else Refusal(f"type {out.type.name} differs from the input's", 0, True),
        None if shape.type == OperandType.TENSOR_INT32 else Refusal(f"shape of type {shape.type.name} (NNAPI: TENSOR_INT32)", 1),
        None if len(shape.dimensions) in (0, 1) else Refusal(f"shape of rank {len(shape.dimensions)} (NNAPI: a 1-D tensor)", 1),
        rank_at_most(ins[:1]), rank_at_most(outs, output=True),
        quantization_kept(data, out),
    ))


def run_reshape(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    """The output shape comes from the shape tensor's values: one -1 takes what is left."""
    data, shape_value = values
    if np.ndim(shape_value) != 1:  # NNAPI: the shape is a 1-D tensor (CHOICE-8)
        raise KernelError(f"RESHAPE: the shape input must be 1-D, got dimensions {np.shape(shape_value)}")
    shape = [int(v) for v in np.asarray(shape_value).reshape(-1)]
    check_rank((data, np.empty([0] * len(shape))), "RESHAPE")
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise KernelError(f"RESHAPE: invalid target shape {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or data.size % known:
            raise KernelError(f"RESHAPE: cannot infer -1 in {shape} for {data.size} elements")
        shape[shape.index(-1)] = data.size // known
    if math.prod(shape) != data.size:
        raise KernelError(f"RESHAPE: {data.size} elements do not fit shape {shape}")
    return data.reshape(shape)


def validate_concatenation(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) < 2 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: tensors and an axis, 1 output)")
    *tensors, axis = ins
    head = tensors[0]
    return first((
        None if axis.type == OperandType.INT32 else Refusal(f"axis of type {axis.type.name} (NNAPI: INT32)", len(tensors)),
        Refusal(f"input of scalar type {head.type.name}", 0) if is_scalar_type(head.type) else None,
        rank_at_most(tensors, MAX_CONCATENATION_RANK), rank_at_most(outs, MAX_CONCATENATION_RANK, output=True),
        first(Refusal(f"type {t.type.name} differs from input 0's {head.type.name}", i) for i, t in enumerate(tensors) if t.type != head.type),
        None if outs[0].type == head.type else Refusal(f"type {outs[0].type.name} differs from the inputs'", 0, True),
    ))


def run_concatenation(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    *arrays, axis_value = values
    operands = ins[:-1]
    rank = arrays[0].ndim
    if rank > MAX_CONCATENATION_RANK:
        raise KernelError(f"CONCATENATION: rank {rank} above NNAPI's limit of {MAX_CONCATENATION_RANK}")
    axis = scalar(axis_value)
    # NeuralNetworks.h gives a negative axis no meaning here (other operations' axes say they count
    # from the end; this one does not), and NNAPI's CPU implementation refuses one (CHOICE-8)
    if not 0 <= axis < rank:
        raise KernelError(f"CONCATENATION: axis {axis} out of range for rank {rank} (NNAPI: 0 to rank - 1)")
    for array in arrays:
        if array.ndim != rank or any(array.shape[d] != arrays[0].shape[d] for d in range(rank) if d != axis):
            raise KernelError(f"CONCATENATION: shapes {[a.shape for a in arrays]} differ off axis {axis}")
    same_quantization = all((o.scale, o.zero_point) == (out_op.scale, out_op.zero_point) for o in operands)
    if is_quantized_type(out_op.type) and not same_quantization:
        return from_real(np.concatenate([to_real(a, o) for a, o in zip(arrays, operands)], axis=axis), out_op)
    return np.concatenate(arrays, axis=axis)
