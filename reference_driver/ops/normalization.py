"""L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and INSTANCE_NORMALIZATION, as NeuralNetworks.h
(HAL 1.3) defines them.

L2_NORMALIZATION divides each 1-D slice along its axis (optional, the last by default) by the
slice's L2 norm, with the norm taken as at least 1e-6 (NNAPI's CPU implementation), so that a
slice of zeros gives zeros.  A quantized input computes on its real values (its scale cancels)
and its output has NNAPI's fixed quantization: scale 1/128, zeroPoint 128 (0 signed).
LOCAL_RESPONSE_NORMALIZATION divides each element by (bias + alpha * s) ** beta, where s sums the
squares of the elements within ``radius`` of it along the axis (the last by default), the
window cut at the tensor's ends; floats only.  INSTANCE_NORMALIZATION standardises each
(batch, channel) plane of a 4-D tensor with its mean and variance, (x - mean) * gamma /
sqrt(variance + epsilon) + beta, NHWC or NCHW by the layout flag; floats only.

Floats compute in float64 and round once to the output type; tensors have rank up to 4.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType

from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, check_rank, first, from_real, rank_at_most,
                       scalar, to_real, type_in)
from .pointwise import same_types

QU8, QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
F16 = OperandType.TENSOR_FLOAT16
INT32, BOOL = OperandType.INT32, OperandType.BOOL
#: NeuralNetworks.h: a quantized L2_NORMALIZATION's output quantization (scale, zeroPoint).
L2_OUTPUT_QUANTIZATION = {QU8: (1 / 128, 128), QS8: (1 / 128, 0)}
#: NNAPI's CPU implementation: the smallest norm a slice is divided by.
L2_NORM_FLOOR = 1e-6


def _float_scalar(tensor: OperandType) -> OperandType:
    """The scalar type of a float parameter: FLOAT16 beside a TENSOR_FLOAT16, FLOAT32 otherwise."""
    return OperandType.FLOAT16 if tensor == F16 else OperandType.FLOAT32


def _axis(values: Sequence[np.ndarray], position: int, rank: int, what: str) -> int:
    """An optional axis input (the last axis when absent), checked against the rank."""
    axis = scalar(values[position]) if len(values) > position else -1
    if not -rank <= axis < rank:
        raise KernelError(f"{what}: axis {axis} out of range for rank {rank}")
    return axis % rank


def validate_l2_normalization(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) not in (1, 2) or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input and optionally axis; 1 output)")
    out = outs[0]
    wanted = L2_OUTPUT_QUANTIZATION.get(out.type)
    return first((
        type_in(ins, 0, FLOAT_TENSORS | QUANT_TENSORS, "input"),
        same_types(ins[:1], outs),
        type_in(ins, 1, {INT32}, "axis") if len(ins) == 2 else None,
        rank_at_most(ins[:1]), rank_at_most(outs, output=True),
        Refusal(f"scale {out.scale} and zeroPoint {out.zero_point} (NNAPI L2_NORMALIZATION: scale 1/128, "
                f"zeroPoint {wanted[1]})", 0, True)
        if wanted is not None and (out.scale, out.zero_point) != wanted else None,
    ))


def run_l2_normalization(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                         out: np.ndarray | None) -> np.ndarray:
    check_rank(values[:1], "L2_NORMALIZATION")
    x = np.asarray(to_real(values[0], ins[0]), np.float64)
    if x.ndim == 0:
        raise KernelError("L2_NORMALIZATION: a scalar input (NNAPI: rank 1 to 4)")
    axis = _axis(values, 1, x.ndim, "L2_NORMALIZATION")
    norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    return from_real(x / np.maximum(norm, L2_NORM_FLOOR), out_op)


def validate_local_response_normalization(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) not in (5, 6) or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input, radius, bias, alpha, beta and "
                       "optionally axis; 1 output)")
    parameter = _float_scalar(ins[0].type)
    return first((
        type_in(ins, 0, FLOAT_TENSORS, "input"),
        same_types(ins[:1], outs),
        type_in(ins, 1, {INT32}, "radius"),
        *(type_in(ins, i, {parameter}, name) for i, name in ((2, "bias"), (3, "alpha"), (4, "beta"))),
        type_in(ins, 5, {INT32}, "axis") if len(ins) == 6 else None,
        rank_at_most(ins[:1]), rank_at_most(outs, output=True),
    ))


def run_local_response_normalization(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                                     out: np.ndarray | None) -> np.ndarray:
    check_rank(values[:1], "LOCAL_RESPONSE_NORMALIZATION")
    x = np.asarray(values[0], np.float64)
    if x.ndim == 0:
        raise KernelError("LOCAL_RESPONSE_NORMALIZATION: a scalar input (NNAPI: rank 1 to 4)")
    radius = scalar(values[1])
    if radius < 0:
        raise KernelError(f"LOCAL_RESPONSE_NORMALIZATION: radius {radius} (NNAPI: at least 0)")
    bias, alpha, beta = (float(np.asarray(v, np.float64).reshape(())) for v in values[2:5])
    axis = _axis(values, 5, x.ndim, "LOCAL_RESPONSE_NORMALIZATION")
    moved = np.moveaxis(x, axis, -1)
    depth = moved.shape[-1]
    span = min(radius, depth)  # a radius past the depth reaches no further element
    squares = np.pad(moved * moved, [(0, 0)] * (moved.ndim - 1) + [(span, span)])
    sums = np.lib.stride_tricks.sliding_window_view(squares, 2 * span + 1, axis=-1).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        result = moved / np.power(bias + alpha * sums, beta)
    return from_real(np.moveaxis(result, -1, axis), out_op)


def validate_instance_normalization(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 5 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input, gamma, beta, epsilon and the "
                       "layout flag; 1 output)")
    parameter = _float_scalar(ins[0].type)
    rank = len(ins[0].dimensions)
    return first((
        type_in(ins, 0, FLOAT_TENSORS, "input"),
        same_types(ins[:1], outs),
        *(type_in(ins, i, {parameter}, name) for i, name in ((1, "gamma"), (2, "beta"), (3, "epsilon"))),
        type_in(ins, 4, {BOOL}, "layout"),
        Refusal(f"rank {rank} (NNAPI: 4)", 0) if rank not in (0, 4) else None,
    ))


def run_instance_normalization(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                               out: np.ndarray | None) -> np.ndarray:
    x = np.asarray(values[0], np.float64)
    if x.ndim != 4:
        raise KernelError(f"INSTANCE_NORMALIZATION: rank {x.ndim} (NNAPI: 4)")
    gamma, beta, epsilon = (float(np.asarray(v, np.float64).reshape(())) for v in values[1:4])
    plane = (2, 3) if bool(np.asarray(values[4]).reshape(())) else (1, 2)  # NCHW: H, W are the last two
    if x.size == 0:
        return from_real(x, out_op)
    centred = x - x.mean(axis=plane, keepdims=True)
    variance = np.mean(centred * centred, axis=plane, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return from_real(centred * (gamma / np.sqrt(variance + epsilon)) + beta, out_op)


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.L2_NORMALIZATION: (validate_l2_normalization, run_l2_normalization),
    OperationType.LOCAL_RESPONSE_NORMALIZATION: (validate_local_response_normalization,
                                                 run_local_response_normalization),
    OperationType.INSTANCE_NORMALIZATION: (validate_instance_normalization, run_instance_normalization),
}
