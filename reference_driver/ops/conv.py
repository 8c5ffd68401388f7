"""DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D in every NNAPI signature (HAL 1.3).

Their inputs, as NeuralNetworks.h lists them (tensors input, filter, bias first):

- DEPTHWISE_CONV_2D, filter [1, kernel_h, kernel_w, depth_out], depth_out = depth_in x multiplier:
  explicit padding: pad left, right, top, bottom, stride w, h, multiplier, activation, [layout,
  [dilation w, h]]: 11, 12 or 14 inputs; a padding scheme: scheme, stride w, h, multiplier,
  activation, [layout, [dilation w, h]]: 8, 9 or 11.  Eleven inputs are the scheme's when input 8
  is the BOOL layout flag (as NNAPI's CPU implementation reads them).  A per-channel filter has
  its scales along dimension 3.
- GROUPED_CONV_2D, filter [depth_out, kernel_h, kernel_w, depth_in / groups]: explicit: pads,
  strides, groups, activation, layout (12 inputs); scheme: scheme, strides, groups, activation,
  layout (9).  No dilation; the layout flag is not optional.
- TRANSPOSE_CONV_2D, filter [depth_out, kernel_h, kernel_w, depth_in]: explicit: pads, strides,
  activation, layout (11 inputs); scheme: the output shape (a TENSOR_INT32 of 4), scheme, strides,
  activation, layout (9).

The layout flag is true for NCHW input and output; the filter keeps its layout.  Quantized inputs
take a filter of their type or TENSOR_QUANT8_SYMM_PER_CHANNEL, and a TENSOR_INT32 bias (of scale
input x filter, or 0 with a per-channel filter, whose channel c then has input x scales[c]); the
computation is CONV_2D's: float64 on real values, one rounding (half away from zero) to the
output type, saturated.

What NNAPI's CPU implementation checks at execution, the reference checks there too (a
KernelError, GENERAL_FAILURE): positive strides, dilations, multipliers and groups, padding that
is not negative and (depthwise and grouped) narrower than the dilated filter, the depths and the
bias's length.  A transposed convolution's right and bottom padding may be negative (the CPU
implementation's words: to resolve the output shape's ambiguity at strides above 1), its output
shape is worked out from the padding, and its padding scheme from the output shape input's height
and width: SAME's head padding is half the total, rounded down, and its tail the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.api.hal import Operand, OperandType, is_quantized_type

from . import _window, nn
from ._numeric import (FLOAT_TENSORS, PER_CHANNEL, QUANT_TENSORS, KernelError, Refusal, activate, activation_code, first,
                       from_real, scalar, to_real, type_in)

I32, INT32, BOOL = OperandType.TENSOR_INT32, OperandType.INT32, OperandType.BOOL
SAME, VALID = nn.PaddingScheme.SAME, nn.PaddingScheme.VALID


@dataclass(frozen=True)
class Signature:
    """Where one signature's parameters are among an operation's inputs."""

    padding: tuple[int, ...]  # (scheme,) or (left, right, top, bottom)
    strides: tuple[int, int]  # (width, height)
    activation: int
    layout: int | None = None  # the BOOL layout flag, when given
    dilation: tuple[int, int] | None = None  # (width, height), when given
    count: int | None = None  # DEPTHWISE_CONV_2D's multiplier, GROUPED_CONV_2D's groups
    output_shape: int | None = None  # TRANSPOSE_CONV_2D's output shape tensor

    @property
    def implicit(self) -> bool:
        return len(self.padding) == 1

    def scalars(self) -> tuple[int, ...]:
        """The positions of the INT32 scalars."""
        return (*self.padding, *self.strides, *((self.count,) if self.count is not None else ()), self.activation,
                *(self.dilation or ()))


def depthwise_signature(ins: Sequence[Operand]) -> Signature | None:
    count = len(ins)
    if count == 8 or (count in (9, 11) and ins[8].type == BOOL):
        return Signature((3,), (4, 5), 7, 8 if count > 8 else None, (9, 10) if count == 11 else None, count=6)
    if count in (11, 12, 14):
        return Signature((3, 4, 5, 6), (7, 8), 10, 11 if count > 11 else None, (12, 13) if count == 14 else None, count=9)
    return None


def grouped_signature(ins: Sequence[Operand]) -> Signature | None:
    if len(ins) == 9:
        return Signature((3,), (4, 5), 7, 8, count=6)
    if len(ins) == 12:
        return Signature((3, 4, 5, 6), (7, 8), 10, 11, count=9)
    return None


def transpose_signature(ins: Sequence[Operand]) -> Signature | None:
    if len(ins) == 9:
        return Signature((4,), (5, 6), 7, 8, output_shape=3)
    if len(ins) == 11:
        return Signature((3, 4, 5, 6), (7, 8), 9, 10)
    return None


_SIGNATURES = {"DEPTHWISE_CONV_2D": (depthwise_signature, 3, "8, 9 or 11 inputs with a padding scheme, 11, 12 or 14 "
                                                             "with explicit padding (11 are the scheme's when input 8 is BOOL)"),
               "GROUPED_CONV_2D": (grouped_signature, 0, "9 inputs with a padding scheme, 12 with explicit padding"),
               "TRANSPOSE_CONV_2D": (transpose_signature, 0, "9 inputs with an output shape and a padding scheme, "
                                                             "11 with explicit padding")}


# --------------------------------------------------------------------------- validation


def _filter_refusal(data: Operand, filt: Operand, channel_dim: int) -> Refusal | None:
    if filt.type == data.type:
        return None
    if filt.type == PER_CHANNEL and data.type in QUANT_TENSORS:
        quant = filt.channel_quant
        if quant is None or quant.channel_dim != channel_dim:
            return Refusal(f"per-channel quantized filter with channel dimension "
                           f"{None if quant is None else quant.channel_dim} (NNAPI: {channel_dim})", 1)
        return None
    return Refusal(f"filter of type {filt.type.name} for {data.type.name} input", 1)


def _rank(operand: Operand, position: int, rank: int, what: str, output: bool = False) -> Refusal | None:
    if len(operand.dimensions) in (0, rank):
        return None
    return Refusal(f"{what} of rank {len(operand.dimensions)} (NNAPI: {rank})", position, output)


def _validator(op: str):
    signature_of, channel_dim, counts = _SIGNATURES[op]

    def validate(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
        if len(outs) != 1:
            return Refusal(f"{len(outs)} outputs (NNAPI: 1)")
        sig = signature_of(ins)
        if sig is None:
            if op == "DEPTHWISE_CONV_2D" and len(ins) == 9:
                return Refusal(f"input 8 of type {ins[8].type.name} in the 9-input signature (NNAPI: the BOOL layout flag)", 8)
            return Refusal(f"{len(ins)} inputs (NNAPI: {counts}; 1 output)")
        data, filt, bias = ins[:3]
        return first((
            type_in(ins, 0, FLOAT_TENSORS | QUANT_TENSORS, "input"),
            _filter_refusal(data, filt, channel_dim),
            None if outs[0].type == data.type else Refusal(f"type {outs[0].type.name} differs from the input's", 0, True),
            first(type_in(ins, i, {INT32}, "padding, stride, multiplier, groups, activation or dilation") for i in sig.scalars()),
            type_in(ins, sig.layout, {BOOL}, "layout flag") if sig.layout is not None else None,
            type_in(ins, sig.output_shape, {I32}, "output shape") if sig.output_shape is not None else None,
            nn._bias_refusal(data, filt, bias),
            _rank(data, 0, 4, "input"), _rank(filt, 1, 4, "filter"), _rank(bias, 2, 1, "bias"),
            _rank(ins[sig.output_shape], sig.output_shape, 1, "output shape") if sig.output_shape is not None else None,
            _rank(outs[0], 0, 4, "output", True),
        ))

    return validate


validate_depthwise_conv_2d = _validator("DEPTHWISE_CONV_2D")
validate_grouped_conv_2d = _validator("GROUPED_CONV_2D")
validate_transpose_conv_2d = _validator("TRANSPOSE_CONV_2D")


# --------------------------------------------------------------------------- geometry


def implicit_padding(size: int, stride: int, dilation: int, kernel: int, scheme: int, what: str,
                     transpose: bool = False) -> tuple[int, int]:
    """NNAPI's padding for a scheme (calculateExplicitPadding): SAME pads to ceil(size / stride)
    outputs, the odd pixel at the end; VALID pads nothing.  ``transpose`` (``size`` is then the
    output's): the tail is the total less the head even when the total is negative."""
    if scheme == VALID:
        return 0, 0
    if scheme != SAME:
        raise KernelError(f"{what}: padding scheme {scheme} (NNAPI: 1 SAME or 2 VALID)")
    total = (-(-size // stride) - 1) * stride + (kernel - 1) * dilation + 1 - size
    head = max(total, 0) // 2
    return head, (total if transpose else max(total, 0)) - head


def _positive(what: str, **values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise KernelError(f"{what}: {name} {value} (NNAPI: positive)")


def geometry(values: Sequence[np.ndarray], sig: Signature, data_shape: tuple[int, ...], kernel: tuple[int, int],
             what: str, *, transpose: bool = False) -> nn.ConvGeometry:
    """A signature's parameters resolved: explicit padding, strides, dilations, activation, layout."""
    nchw = sig.layout is not None and bool(scalar(values[sig.layout]))
    stride_w, stride_h = (scalar(values[i]) for i in sig.strides)
    dilation_w, dilation_h = (scalar(values[i]) for i in sig.dilation) if sig.dilation else (1, 1)
    _positive(what, **{"stride width": stride_w, "stride height": stride_h, "dilation width": dilation_w,
                       "dilation height": dilation_h})
    if sig.implicit:
        scheme = scalar(values[sig.padding[0]])
        if transpose:  # the padding of the output shape input's height and width
            assert sig.output_shape is not None  # TRANSPOSE_CONV_2D's scheme signature has one
            shape = np.asarray(values[sig.output_shape]).reshape(-1)
            if shape.size != 4:
                raise KernelError(f"{what}: output shape {shape.tolist()} (NNAPI: 4 values)")
            height, width = (int(shape[2]), int(shape[3])) if nchw else (int(shape[1]), int(shape[2]))
            if min(height, width) < 1:
                raise KernelError(f"{what}: output shape {shape.tolist()} (NNAPI: positive height and width)")
        else:
            height, width = (data_shape[2], data_shape[3]) if nchw else (data_shape[1], data_shape[2])
        top, bottom = implicit_padding(height, stride_h, dilation_h, kernel[0], scheme, what, transpose)
        left, right = implicit_padding(width, stride_w, dilation_w, kernel[1], scheme, what, transpose)
    else:
        left, right, top, bottom = (scalar(values[i]) for i in sig.padding)
        # a transposed convolution's tail padding may be negative (NNAPI's CPU implementation)
        if min(left, top) < 0 or (not transpose and min(right, bottom) < 0):
            raise KernelError(f"{what}: negative padding (left {left}, right {right}, top {top}, bottom {bottom})")
    return nn.ConvGeometry(top, bottom, left, right, stride_h, stride_w, dilation_h, dilation_w,
                           activation_code(values[sig.activation]), nchw)


def padding_within_filter(g: nn.ConvGeometry, kernel_h: int, kernel_w: int, what: str) -> None:
    """NNAPI's CPU implementation refuses padding on any side as wide as the dilated filter or wider
    (NeuralNetworks.h says nothing of it; CHOICE-8), as for CONV_2D."""
    span_h, span_w = g.spans(kernel_h, kernel_w)
    if max(g.pad_top, g.pad_bottom) >= span_h or max(g.pad_left, g.pad_right) >= span_w:
        raise KernelError(f"{what}: padding (left {g.pad_left}, right {g.pad_right}, top {g.pad_top}, bottom "
                          f"{g.pad_bottom}) not below the dilated filter's {span_h}x{span_w} (NNAPI's CPU limit)")


def tensors(values: Sequence[np.ndarray], ins: Sequence[Operand], channel_dim: int,
            what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The input as stored, and the real filter and bias, their ranks and the bias's length checked."""
    data, filt, bias = values[:3]
    if np.ndim(data) != 4 or np.ndim(filt) != 4 or np.shape(bias) != (np.shape(filt)[channel_dim],):
        raise KernelError(f"{what}: input {np.shape(data)}, filter {np.shape(filt)}, bias {np.shape(bias)} disagree")
    weights, real_bias = nn._weights_bias(values, ins)
    return data, weights, real_bias


def nhwc(data: np.ndarray, operand: Operand, g: nn.ConvGeometry) -> np.ndarray:
    """The input's real values, NHWC."""
    x = np.asarray(to_real(data, operand), np.float64)
    return x.transpose(0, 2, 3, 1) if g.nchw else x


def finish(real: np.ndarray, g: nn.ConvGeometry, out_op: Operand, out: np.ndarray | None = None) -> np.ndarray:
    """``real`` (a fresh array: activated in place) stored as ``out_op`` in ``g``'s layout; a float
    NHWC result straight into ``out``, the output's region when the executor hands one over (one
    pass over the output fewer: the executor copies nothing it finds there already)."""
    activated = activate(real, g.activation, in_place=True)
    if g.nchw:
        return from_real(activated, out_op).transpose(0, 3, 1, 2)
    if out is not None and out.shape == activated.shape and not is_quantized_type(out_op.type):
        np.copyto(out, activated, casting="same_kind")  # float64 rounded to the output's float type
        return out
    return from_real(activated, out_op)


# --------------------------------------------------------------------------- kernels


@dataclass(frozen=True)
class Prepared:
    """What a kernel works from: the input NHWC in real values, the real filter and bias, the
    geometry, and the multiplier or groups (1 for a transposed convolution)."""

    x: np.ndarray
    filt: np.ndarray
    bias: np.ndarray
    g: nn.ConvGeometry
    count: int


def prepare_depthwise(values: Sequence[np.ndarray], ins: Sequence[Operand], what: str = "DEPTHWISE_CONV_2D") -> Prepared:
    sig = depthwise_signature(ins)
    assert sig is not None and sig.count is not None  # validated
    data, filt, bias = tensors(values, ins, 3, what)
    if filt.shape[0] != 1:
        raise KernelError(f"{what}: filter {filt.shape} (NNAPI: [1, height, width, depth_out])")
    g = geometry(values, sig, data.shape, filt.shape[1:3], what)
    multiplier = scalar(values[sig.count])
    _positive(what, **{"depth multiplier": multiplier})
    padding_within_filter(g, filt.shape[1], filt.shape[2], what)
    return Prepared(nhwc(data, ins[0], g), filt, bias, g, multiplier)


def run_depthwise_conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                          out: np.ndarray | None) -> np.ndarray:
    """out[n, y, x, c*m + q] = act(bias[c*m + q] + sum_{i, j} in[n, y*sh + i*dh - pt, x*sw + j*dw - pl, c]
    * filter[0, i, j, c*m + q]), m the depth multiplier."""
    p = prepare_depthwise(values, ins)
    total = _window.depthwise_sum(p.x, p.filt, p.g, p.count)
    total += p.bias
    return finish(total, p.g, out_op, out)


def prepare_grouped(values: Sequence[np.ndarray], ins: Sequence[Operand], what: str = "GROUPED_CONV_2D") -> Prepared:
    sig = grouped_signature(ins)
    assert sig is not None and sig.count is not None  # validated
    data, filt, bias = tensors(values, ins, 0, what)
    g = geometry(values, sig, data.shape, filt.shape[1:3], what)
    groups = scalar(values[sig.count])
    _positive(what, groups=groups)
    padding_within_filter(g, filt.shape[1], filt.shape[2], what)
    return Prepared(nhwc(data, ins[0], g), filt, bias, g, groups)


def run_grouped_conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                        out: np.ndarray | None) -> np.ndarray:
    """CONV_2D in ``groups`` independent slices of the depths: output channel d of group
    g = d // (depth_out / groups) sees input channels g*depth_group to (g+1)*depth_group - 1."""
    p = prepare_grouped(values, ins)
    total = _window.conv_sum(p.x, p.filt, p.g, p.count, "GROUPED_CONV_2D")
    total += p.bias
    return finish(total, p.g, out_op, out)


def prepare_transpose(values: Sequence[np.ndarray], ins: Sequence[Operand],
                      what: str = "TRANSPOSE_CONV_2D") -> tuple[Prepared, int, int]:
    """The prepared inputs and the output's height and width (stride x (size - 1) + filter - padding)."""
    sig = transpose_signature(ins)
    assert sig is not None  # validated
    data, filt, bias = tensors(values, ins, 0, what)
    g = geometry(values, sig, data.shape, filt.shape[1:3], what, transpose=True)
    x = nhwc(data, ins[0], g)
    out_h = (x.shape[1] - 1) * g.stride_h + filt.shape[1] - g.pad_top - g.pad_bottom
    out_w = (x.shape[2] - 1) * g.stride_w + filt.shape[2] - g.pad_left - g.pad_right
    if min(out_h, out_w) < 1 or min(x.shape[1:]) < 1:
        raise KernelError(f"{what}: input {x.shape[1:3]} with filter {filt.shape[1:3]} and padding (left {g.pad_left}, "
                          f"right {g.pad_right}, top {g.pad_top}, bottom {g.pad_bottom}) gives no output")
    return Prepared(x, filt, bias, g, 1), out_h, out_w


def run_transpose_conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                          out: np.ndarray | None) -> np.ndarray:
    """out[n, y, x, d] = act(bias[d] + sum in[n, i, j, c] * filter[d, y + pt - i*sh, x + pl - j*sw, c])
    over the input pixels (i, j) whose filter covers (y, x)."""
    p, out_h, out_w = prepare_transpose(values, ins)
    total = _window.transpose_sum(p.x, p.filt, p.g, out_h, out_w) + p.bias  # a crop of a larger array: added anew
    return finish(total, p.g, out_op, out)
