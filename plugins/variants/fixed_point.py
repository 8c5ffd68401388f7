"""Quantized arithmetic in integers only, as fixed-point kernels (TFLite's, most NPUs') compute it.

A real multiplier ``m`` (an input scale over the output scale, say) is held as a 31-bit integer
``q`` and a power of two: ``m = q * 2**(shift - 31)``.  A value is scaled by multiplying it by
``q`` and shifting right, rounding once, half up (TFLite's single-rounding kernels).  Sums of
products accumulate exactly in integers (a bias is already an integer in the accumulator's
scale); ADD and SUB first bring both inputs to a common scale with 20 bits of headroom.  The
result differs from the reference's float64 arithmetic, which rounds half away from zero, by a
step at a negative tie and wherever ``q``'s own rounding moves a value across a tie: what
CHOICE-7 allows.

Arrays here hold Python integers (dtype object): an accumulator of a large filter with a large
bias passes 32 bits, and the products with ``q`` pass 64, so nothing may wrap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, numpy_dtype
from reference_driver.ops import _window, conv, nn
from reference_driver.ops._numeric import PER_CHANNEL, activate, activation_code, from_real

__all__ = ["add_sub", "conv_2d", "depthwise_conv_2d", "fully_connected", "grouped_conv_2d", "mul", "transpose_conv_2d"]

_HEADROOM_BITS = 20  # ADD/SUB: inputs shifted left this far before rescaling to a common scale


def _integers(values: np.ndarray, zero_point: int = 0) -> np.ndarray:
    return np.asarray(values).astype(np.int64).astype(object) - zero_point


def quantized_multiplier(real: float) -> tuple[int, int]:
    """``real`` as ``(q, shift)`` with ``real == q * 2**(shift - 31)`` and ``2**30 <= q < 2**31``."""
    if real == 0:
        return 0, 0
    mantissa, exponent = math.frexp(real)
    q = math.floor(mantissa * (1 << 31) + 0.5)
    if q == 1 << 31:
        q, exponent = q // 2, exponent + 1
    return q, exponent


def scale(x: np.ndarray, real: float) -> np.ndarray:
    """x * real, rounded once, half up, in integers: x * q shifted right by 31 - shift."""
    q, shift = quantized_multiplier(real)
    total = 31 - shift
    if total <= 0:
        return x * q * (1 << -total)
    return (x * q + (1 << (total - 1))) >> total


def _stored(x: np.ndarray, activation: int, out: Operand) -> np.ndarray:
    """Add the output's zero point and clamp to the activation's range, both in stored units."""
    low, high = from_real(activate(np.array([-np.inf, np.inf]), activation), out)
    # clipped while still Python integers: a value far out of range may pass 64 bits
    return np.clip(x + out.zero_point, int(low), int(high)).astype(np.int64).astype(numpy_dtype(out.type))


def add_sub(values: Sequence[np.ndarray], ins: Sequence[Operand], out: Operand, sign: int) -> np.ndarray:
    """ADD (``sign`` 1) or SUB (-1): both inputs to twice the larger input scale, summed, rescaled."""
    a, b = ins[0], ins[1]
    common = 2 * max(a.scale, b.scale)
    left = scale(_integers(values[0], a.zero_point) * (1 << _HEADROOM_BITS), a.scale / common)
    right = scale(_integers(values[1], b.zero_point) * (1 << _HEADROOM_BITS), b.scale / common)
    total = scale(left + sign * right, common / ((1 << _HEADROOM_BITS) * out.scale))
    return _stored(total, activation_code(values[2]), out)


def mul(values: Sequence[np.ndarray], ins: Sequence[Operand], out: Operand) -> np.ndarray:
    product = _integers(values[0], ins[0].zero_point) * _integers(values[1], ins[1].zero_point)
    return _stored(scale(product, ins[0].scale * ins[1].scale / out.scale), activation_code(values[2]), out)


def fully_connected(values: Sequence[np.ndarray], ins: Sequence[Operand], out: Operand) -> np.ndarray:
    data, weights, bias = ins[0], ins[1], ins[2]
    w = _integers(values[1], weights.zero_point)
    x = _integers(values[0], data.zero_point).reshape(-1, w.shape[1])
    accumulator = x @ w.T + _integers(values[2])
    return _stored(scale(accumulator, data.scale * weights.scale / out.scale), activation_code(values[3]), out)


def conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out: Operand) -> np.ndarray:
    """Per output channel: the integer sum over the window plus the bias, rescaled by that channel's
    multiplier (one for the tensor unless the filter is quantized per channel)."""
    data, filt = ins[0], ins[1]
    f = _integers(values[1], 0 if filt.type == PER_CHANNEL else filt.zero_point)
    g = nn.conv_geometry(values, ins, f.shape, values[0].shape)
    x = _integers(values[0], data.zero_point)
    if g.nchw:
        x = x.transpose(0, 2, 3, 1)
    windows = nn.conv_windows(x, g, f.shape[1], f.shape[2])  # padded with 0, the real zero
    accumulator = np.einsum("nyxcij,dijc->nyxd", windows, f) + _integers(values[2])
    if filt.type == PER_CHANNEL and filt.channel_quant is not None:
        filter_scales = list(filt.channel_quant.scales)
    else:
        filter_scales = [filt.scale] * f.shape[0]
    scaled = np.stack([scale(accumulator[..., d], data.scale * s / out.scale) for d, s in enumerate(filter_scales)], axis=-1)
    result = _stored(scaled, g.activation, out)
    return result.transpose(0, 3, 1, 2) if g.nchw else result


# --------------------------------------------------------------------------- the other convolutions


def _windowed(values: Sequence[np.ndarray], ins: Sequence[Operand], out: Operand, prepared, total,
              channel_dim: int) -> np.ndarray:
    """An integer sum per output channel (``total`` of the input and filter as integers, the
    reference's geometry), plus the bias, rescaled by each channel's multiplier."""
    data, filt = ins[0], ins[1]
    g = prepared.g
    x = _integers(values[0], data.zero_point)
    x = x.transpose(0, 2, 3, 1) if g.nchw else x
    f = _integers(values[1], 0 if filt.type == PER_CHANNEL else filt.zero_point)
    accumulator = total(x, f) + _integers(values[2])
    depth_out = f.shape[channel_dim]
    if filt.type == PER_CHANNEL and filt.channel_quant is not None:
        filter_scales = list(filt.channel_quant.scales)
    else:
        filter_scales = [filt.scale] * depth_out
    scaled = np.stack([scale(accumulator[..., d], data.scale * s / out.scale) for d, s in enumerate(filter_scales)], axis=-1)
    result = _stored(scaled, g.activation, out)
    return result.transpose(0, 3, 1, 2) if g.nchw else result


def depthwise_conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out: Operand) -> np.ndarray:
    p = conv.prepare_depthwise(values, ins)
    return _windowed(values, ins, out, p, lambda x, f: _window.depthwise_sum(x, f, p.g, p.count), 3)


def grouped_conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out: Operand) -> np.ndarray:
    p = conv.prepare_grouped(values, ins)
    return _windowed(values, ins, out, p, lambda x, f: _window.conv_sum(x, f, p.g, p.count, "GROUPED_CONV_2D"), 0)


def transpose_conv_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out: Operand) -> np.ndarray:
    p, out_h, out_w = conv.prepare_transpose(values, ins)
    return _windowed(values, ins, out, p, lambda x, f: _window.transpose_sum(x, f, p.g, out_h, out_w), 0)
