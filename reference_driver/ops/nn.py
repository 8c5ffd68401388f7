"""FULLY_CONNECTED and CONV_2D (every NNAPI signature of CONV_2D).

CONV_2D's inputs, as NeuralNetworks.h lists them:

- explicit padding: input, filter, bias, pad left, right, top, bottom, stride w, h, activation,
  [layout, [dilation w, h]]: 10, 11 or 13 inputs;
- implicit padding: input, filter, bias, padding scheme (1 SAME, 2 VALID), stride w, h,
  activation, [layout, [dilation w, h]]: 7, 8 or 10 inputs.

Ten inputs are implicit padding when input 7 is the BOOL layout flag.  The layout flag is true
for NCHW input and output (the filter is [depth out, height, width, depth in] in both).  A
TENSOR_QUANT8_SYMM_PER_CHANNEL filter has a scale per output channel (channel dimension 0) and
then the bias has scale 0: its real scale per channel is the input scale times the filter's.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from harness.api.hal import Operand, OperandType, conv_2d_has_padding_scheme

from . import _window
from ._numeric import (FLOAT_TENSORS, PER_CHANNEL, QUANT_TENSORS, KernelError, Refusal, activate, activation_code,
                       first, from_real, scalar, to_real, type_in)

I32, INT32, BOOL = OperandType.TENSOR_INT32, OperandType.INT32, OperandType.BOOL


class PaddingScheme(enum.IntEnum):
    SAME = 1
    VALID = 2


def _bias_refusal(input_op: Operand, weights: Operand, bias: Operand) -> Refusal | None:
    if input_op.type in FLOAT_TENSORS:
        return None if bias.type == input_op.type else Refusal(f"bias of type {bias.type.name} for {input_op.type.name} input", 2)
    if bias.type != I32:
        return Refusal(f"bias of type {bias.type.name} for a quantized input (NNAPI: TENSOR_INT32)", 2)
    if weights.type == PER_CHANNEL:
        return None if bias.scale == 0 else Refusal(f"bias scale {bias.scale} with a per-channel filter (NNAPI: 0)", 2)
    expected = input_op.scale * weights.scale
    if abs(bias.scale - expected) > 1e-6 * max(expected, 1e-30):
        return Refusal(f"bias scale {bias.scale} is not input scale x filter scale ({expected})", 2)
    return None


def _filter_refusal(data: Operand, filt: Operand, what: str) -> Refusal | None:
    if filt.type == data.type:
        return None
    if filt.type == PER_CHANNEL and data.type in QUANT_TENSORS:
        quant = filt.channel_quant
        if quant is None or quant.channel_dim != 0:
            return Refusal(f"per-channel quantized {what} needs channel dimension 0", 1)
        return None
    return Refusal(f"{what} of type {filt.type.name} for {data.type.name} input", 1)


def _weights_bias(values: Sequence[np.ndarray], ins: Sequence[Operand]) -> tuple[np.ndarray, np.ndarray]:
    weights = np.asarray(to_real(values[1], ins[1]), np.float64)
    bias = values[2].astype(np.float64)
    if ins[0].type in QUANT_TENSORS:
        if ins[1].type == PER_CHANNEL and ins[1].channel_quant is not None:
            bias = bias * ins[0].scale * np.asarray(ins[1].channel_quant.scales, np.float64)
        else:
            bias = bias * ins[2].scale
    return weights, bias


def _finish(real: np.ndarray, activation: int, out_op: Operand) -> np.ndarray:
    return from_real(activate(real, activation), out_op)


# --------------------------------------------------------------------------- FULLY_CONNECTED


def validate_fully_connected(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 4 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 4 inputs, 1 output)")
    data, weights, bias, act = ins
    return first((
        type_in(ins, 0, FLOAT_TENSORS | QUANT_TENSORS, "input"),
        None if weights.type == data.type else Refusal(f"weights of type {weights.type.name} for {data.type.name} input", 1),
        None if outs[0].type == data.type else Refusal(f"type {outs[0].type.name} differs from the input's", 0, True),
        type_in(ins, 3, {INT32}, "fused activation"),
        _bias_refusal(data, weights, bias),
        Refusal(f"input of rank {len(data.dimensions)} (NNAPI: 2 to 4)", 0) if len(data.dimensions) in (1, 5, 6, 7, 8) else None,
        None if len(weights.dimensions) in (0, 2) else Refusal(f"weights of rank {len(weights.dimensions)} (NNAPI: 2)", 1),
        None if len(bias.dimensions) in (0, 1) else Refusal(f"bias of rank {len(bias.dimensions)} (NNAPI: 1)", 2),
    ))


def run_fully_connected(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    """out[b, u] = act(sum_i in[b, i] * w[u, i] + bias[u]); input flattened to [batch, input_size]."""
    data = values[0]
    weights, bias = _weights_bias(values, ins)
    if weights.ndim != 2 or bias.shape != (weights.shape[0],):
        raise KernelError(f"FULLY_CONNECTED: weights {weights.shape} and bias {bias.shape} disagree")
    input_size = weights.shape[1]
    if not 2 <= data.ndim <= 4 or data.size % input_size:
        raise KernelError(f"FULLY_CONNECTED: input {data.shape} is not of rank 2 to 4 and a multiple of input size {input_size}")
    x = to_real(data, ins[0]).astype(np.float64).reshape(data.size // input_size, input_size)
    return _finish(x @ weights.T + bias, activation_code(values[3]), out_op)


# --------------------------------------------------------------------------- CONV_2D


def validate_conv_2d(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) not in (7, 8, 10, 11, 13) or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 7, 8 or 10 inputs with implicit padding, "
                       "10, 11 or 13 with explicit padding; 1 output)")
    data, filt, bias = ins[:3]
    layout_at = 7 if conv_2d_has_padding_scheme(ins) else 10
    scalars = [i for i in range(3, len(ins)) if i != layout_at]
    return first((
        type_in(ins, 0, FLOAT_TENSORS | QUANT_TENSORS, "input"),
        _filter_refusal(data, filt, "filter"),
        None if outs[0].type == data.type else Refusal(f"type {outs[0].type.name} differs from the input's", 0, True),
        first(type_in(ins, i, {INT32}, "padding, stride, activation or dilation") for i in scalars),
        type_in(ins, layout_at, {BOOL}, "layout flag") if len(ins) > layout_at else None,
        _bias_refusal(data, filt, bias),
        first(Refusal(f"rank {len(o.dimensions)} (NNAPI: 4)", i) for i, o in enumerate((data, filt)) if len(o.dimensions) not in (0, 4)),
        None if len(outs[0].dimensions) in (0, 4) else Refusal(f"rank {len(outs[0].dimensions)} (NNAPI: 4)", 0, True),
        None if len(bias.dimensions) in (0, 1) else Refusal(f"bias of rank {len(bias.dimensions)} (NNAPI: 1)", 2),
    ))


@dataclass(frozen=True)
class ConvGeometry:
    """A CONV_2D's parameters resolved from any signature: explicit padding, NHWC terms."""

    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    activation: int
    nchw: bool

    def spans(self, kernel_h: int, kernel_w: int) -> tuple[int, int]:
        """The height and width a filter of this size covers, dilated."""
        return (kernel_h - 1) * self.dilation_h + 1, (kernel_w - 1) * self.dilation_w + 1


def _implicit_padding(size: int, stride: int, dilation: int, kernel: int, scheme: int) -> tuple[int, int]:
    """NNAPI's explicit padding for a padding scheme: SAME pads to ceil(size / stride) outputs,
    the odd pixel at the end; VALID pads nothing."""
    if scheme == PaddingScheme.VALID:
        return 0, 0
    if scheme != PaddingScheme.SAME:
        raise KernelError(f"CONV_2D: padding scheme {scheme} (NNAPI: 1 SAME or 2 VALID)")
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def conv_geometry(values: Sequence[np.ndarray], ins: Sequence[Operand], filter_shape: tuple[int, ...],
                  input_shape: tuple[int, ...]) -> ConvGeometry:
    implicit = conv_2d_has_padding_scheme(ins)
    layout_at = 7 if implicit else 10
    nchw = len(values) > layout_at and bool(scalar(values[layout_at]))
    dilation_w, dilation_h = (scalar(values[layout_at + 1]), scalar(values[layout_at + 2])) if len(values) > layout_at + 1 else (1, 1)
    if implicit:
        scheme, stride_w, stride_h, activation = (scalar(v) for v in values[3:7])
    else:
        stride_w, stride_h, activation = (scalar(v) for v in values[7:10])
    if min(stride_w, stride_h) < 1 or min(dilation_w, dilation_h) < 1:
        raise KernelError(f"CONV_2D: stride ({stride_w}, {stride_h}) and dilation ({dilation_w}, {dilation_h}) must be positive")
    height, width = (input_shape[2], input_shape[3]) if nchw else (input_shape[1], input_shape[2])
    if implicit:
        top, bottom = _implicit_padding(height, stride_h, dilation_h, filter_shape[1], scheme)
        left, right = _implicit_padding(width, stride_w, dilation_w, filter_shape[2], scheme)
    else:
        left, right, top, bottom = (scalar(v) for v in values[3:7])
        if min(left, right, top, bottom) < 0:
            raise KernelError("CONV_2D: negative padding")
    return ConvGeometry(top, bottom, left, right, stride_h, stride_w, dilation_h, dilation_w, activation_code(values[layout_at - 1]), nchw)


def conv_windows(x: np.ndarray, g: ConvGeometry, kernel_h: int, kernel_w: int) -> np.ndarray:
    """The padded NHWC input's receptive fields: [n, y, x, c, kernel_h, kernel_w], dilation applied."""
    x = np.pad(x, ((0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right), (0, 0)))
    span_h, span_w = g.spans(kernel_h, kernel_w)
    if x.shape[1] < span_h or x.shape[2] < span_w:
        raise KernelError(f"CONV_2D: filter span {span_h}x{span_w} larger than padded input {x.shape[1]}x{x.shape[2]}")
    windows = sliding_window_view(x, (span_h, span_w), axis=(1, 2))[:, :: g.stride_h, :: g.stride_w]
    return windows[..., :: g.dilation_h, :: g.dilation_w]


def conv_weights(values: Sequence[np.ndarray], ins: Sequence[Operand]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A CONV_2D's input as stored, and its real filter and bias, with their ranks checked."""
    data = values[0]
    filt, bias = _weights_bias(values, ins)
    if data.ndim != 4 or filt.ndim != 4 or bias.shape != (filt.shape[0],):
        raise KernelError(f"CONV_2D: input {data.shape}, filter {filt.shape}, bias {bias.shape} disagree")
    return data, filt, bias


def conv_input(data: np.ndarray, input_op: Operand, g: ConvGeometry, depth: int) -> np.ndarray:
    """The input's real values in NHWC, checked against the filter's depth."""
    x = to_real(data, input_op).astype(np.float64)
    if g.nchw:
        x = x.transpose(0, 2, 3, 1)
    if depth != x.shape[3]:
        raise KernelError(f"CONV_2D: filter depth {depth} for input depth {x.shape[3]}")
    return x


def conv_2d(data: np.ndarray, input_op: Operand, filt: np.ndarray, bias: np.ndarray, g: ConvGeometry,
            out_op: Operand, out: np.ndarray | None = None) -> np.ndarray:
    """out[n, y, x, d] = act(bias[d] + sum in[n, y*sh + i*dh - pt, x*sw + j*dw - pl, c] * f[d, i, j, c]),
    stored as ``out_op`` in the layout ``g`` names (a float NHWC result straight into ``out``, the
    output's region, when given)."""
    x = conv_input(data, input_op, g, filt.shape[3])
    real = _window.conv_sum(x, filt, g)  # im2col and one matrix product
    real += bias
    activated = activate(real, g.activation, in_place=True)
    if not g.nchw and out is not None and out.shape == activated.shape and out_op.type in FLOAT_TENSORS:
        np.copyto(out, activated, casting="same_kind")  # float64 rounded to the output's float type
        return out
    result = from_real(activated, out_op)
    return result.transpose(0, 3, 1, 2) if g.nchw else result


def padding_within_filter(g: ConvGeometry, kernel_h: int, kernel_w: int) -> None:
    """NNAPI's CPU implementation refuses padding on any side as wide as the dilated filter or wider
    (NeuralNetworks.h says nothing of it; CHOICE-8): some outputs would see only padding.  The
    padding a scheme resolves to is always narrower."""
    span_h, span_w = g.spans(kernel_h, kernel_w)
    if max(g.pad_top, g.pad_bottom) >= span_h or max(g.pad_left, g.pad_right) >= span_w:
        raise KernelError(f"CONV_2D: padding (left {g.pad_left}, right {g.pad_right}, top {g.pad_top}, bottom "
                          f"{g.pad_bottom}) not below the dilated filter's {span_h}x{span_w} (NNAPI's CPU limit)")


def run_conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    data, filt, bias = conv_weights(values, ins)
    geometry = conv_geometry(values, ins, filt.shape, data.shape)
    padding_within_filter(geometry, filt.shape[1], filt.shape[2])
    return conv_2d(data, ins[0], filt, bias, geometry, out_op, out)
