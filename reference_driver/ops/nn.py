"""FULLY_CONNECTED and CONV_2D (NHWC, explicit padding and stride)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from harness.api.hal import Operand, OperandType, is_quantized_type

from ._numeric import FLOAT_TENSORS, QUANT_TENSORS, KernelError, activate, from_real, scalar, to_real


def _bias_type_ok(input_op: Operand, weights: Operand, bias: Operand) -> bool:
    if input_op.type in FLOAT_TENSORS:
        return bias.type == input_op.type
    # Quantized: int32 bias whose scale is the product of input and weight scales.
    expected = input_op.scale * weights.scale
    return bias.type == OperandType.TENSOR_INT32 and abs(bias.scale - expected) <= 1e-6 * max(expected, 1e-30)


def _weights_bias(values: Sequence[np.ndarray], ins: Sequence[Operand]) -> tuple[np.ndarray, np.ndarray]:
    weights = to_real(values[1], ins[1]).astype(np.float64)
    bias = values[2].astype(np.float64) * ins[2].scale if is_quantized_type(ins[0].type) else values[2].astype(np.float64)
    return weights, bias


def _finish(real: np.ndarray, activation: int, out_op: Operand) -> np.ndarray:
    return from_real(activate(real, activation), out_op)


def validate_fully_connected(ins: Sequence[Operand], outs: Sequence[Operand]) -> bool:
    if len(ins) != 4 or len(outs) != 1:
        return False
    data, weights, bias, act = ins
    if data.type not in FLOAT_TENSORS | QUANT_TENSORS or weights.type != data.type or outs[0].type != data.type:
        return False
    if act.type != OperandType.INT32 or not _bias_type_ok(data, weights, bias):
        return False
    return len(weights.dimensions) in (0, 2) and len(bias.dimensions) in (0, 1)


def run_fully_connected(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    """out[b, u] = act(sum_i in[b, i] * w[u, i] + bias[u]); input flattened to [batch, input_size]."""
    data = values[0]
    weights, bias = _weights_bias(values, ins)
    if weights.ndim != 2 or bias.shape != (weights.shape[0],):
        raise KernelError(f"FULLY_CONNECTED: weights {weights.shape} and bias {bias.shape} disagree")
    input_size = weights.shape[1]
    if data.ndim < 2 or data.size % input_size:
        raise KernelError(f"FULLY_CONNECTED: input {data.shape} is not a multiple of input size {input_size}")
    x = to_real(data, ins[0]).astype(np.float64).reshape(data.size // input_size, input_size)
    return _finish(x @ weights.T + bias, scalar(values[3]), out_op)


def validate_conv_2d(ins: Sequence[Operand], outs: Sequence[Operand]) -> bool:
    if len(ins) != 10 or len(outs) != 1:
        return False
    data, filt, bias, *scalars = ins
    if data.type not in FLOAT_TENSORS | QUANT_TENSORS or filt.type != data.type or outs[0].type != data.type:
        return False
    if any(s.type != OperandType.INT32 for s in scalars) or not _bias_type_ok(data, filt, bias):
        return False
    return all(len(o.dimensions) in (0, 4) for o in (data, filt)) and len(bias.dimensions) in (0, 1)


def run_conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    """NHWC convolution: out[n, y, x, d] = act(bias[d] + sum in[n, y*sh+i-pt, x*sw+j-pl, c] * f[d, i, j, c])."""
    data = values[0]
    filt, bias = _weights_bias(values, ins)
    pad_left, pad_right, pad_top, pad_bottom, stride_w, stride_h, activation = (scalar(v) for v in values[3:])
    if data.ndim != 4 or filt.ndim != 4 or filt.shape[3] != data.shape[3] or bias.shape != (filt.shape[0],):
        raise KernelError(f"CONV_2D: input {data.shape}, filter {filt.shape}, bias {bias.shape} disagree")
    if min(pad_left, pad_right, pad_top, pad_bottom) < 0 or min(stride_w, stride_h) < 1:
        raise KernelError("CONV_2D: negative padding or non-positive stride")
    x = to_real(data, ins[0]).astype(np.float64)
    x = np.pad(x, ((0, 0), (pad_top, pad_bottom), (pad_left, pad_right), (0, 0)))
    kernel_h, kernel_w = filt.shape[1:3]
    if x.shape[1] < kernel_h or x.shape[2] < kernel_w:
        raise KernelError(f"CONV_2D: filter {filt.shape} larger than padded input {x.shape}")
    windows = sliding_window_view(x, (kernel_h, kernel_w), axis=(1, 2))[:, ::stride_h, ::stride_w]
    real = np.einsum("nyxcij,dijc->nyxd", windows, filt) + bias
    return _finish(real, activation, out_op)
