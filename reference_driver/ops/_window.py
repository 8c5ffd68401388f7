"""The sliding-window arithmetic of the convolutions and pools, vectorised: no loop over pixels.

Every function takes NHWC arrays and the resolved geometry (`nn.ConvGeometry`: explicit padding,
strides, dilations) and works in the dtype it is given: float64 for the reference, and the same
code sums Python integers (dtype object) or float32 for a variant.  A convolution gathers its
receptive fields once (im2col, a strided view copied to rows) and multiplies them with the filter
in one matrix product (BLAS through numpy); a transposed convolution multiplies once and adds each
tap's share in place (kernel_h x kernel_w whole-tensor additions); a depthwise convolution loops
over the taps within blocks of output rows (cache-sized, not per pixel).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._numeric import KernelError

__all__ = ["conv_sum", "depthwise_sum", "output_size", "padded", "transpose_sum", "window_counts", "windows"]


def output_size(size: int, kernel: int, stride: int, dilation: int, head: int, tail: int, what: str) -> int:
    """Outputs along one axis: the windows of a dilated ``kernel`` that fit the padded ``size``,
    one every ``stride`` (NNAPI's computeOutSize); an error when not even one fits."""
    span = (kernel - 1) * dilation + 1
    room = size + head + tail - span
    if room < 0:
        raise KernelError(f"{what}: filter span {span} larger than the padded input ({size} + {head} + {tail})")
    return room // stride + 1


def padded(x: np.ndarray, g, fill: float = 0) -> np.ndarray:
    """``x`` (NHWC) with ``g``'s padding of ``fill`` around its height and width."""
    if not (g.pad_top or g.pad_bottom or g.pad_left or g.pad_right):
        return x
    n, height, width, depth = x.shape
    out = np.full((n, height + g.pad_top + g.pad_bottom, width + g.pad_left + g.pad_right, depth), fill, x.dtype)
    out[:, g.pad_top : g.pad_top + height, g.pad_left : g.pad_left + width] = x  # np.pad's work, a third of its time
    return out


def _sizes(x: np.ndarray, g, kernel_h: int, kernel_w: int, what: str) -> tuple[int, int]:
    return (output_size(x.shape[1], kernel_h, g.stride_h, g.dilation_h, g.pad_top, g.pad_bottom, what),
            output_size(x.shape[2], kernel_w, g.stride_w, g.dilation_w, g.pad_left, g.pad_right, what))


def windows(x: np.ndarray, g, kernel_h: int, kernel_w: int, what: str, fill: float = 0) -> np.ndarray:
    """The receptive fields of the padded input, a view: [n, out_h, out_w, c, kernel_h, kernel_w]."""
    out_h, out_w = _sizes(x, g, kernel_h, kernel_w, what)
    span_h, span_w = (kernel_h - 1) * g.dilation_h + 1, (kernel_w - 1) * g.dilation_w + 1
    view = sliding_window_view(padded(x, g, fill), (span_h, span_w), axis=(1, 2))
    return view[:, : (out_h - 1) * g.stride_h + 1 : g.stride_h, : (out_w - 1) * g.stride_w + 1 : g.stride_w,
                :, :: g.dilation_h, :: g.dilation_w]


def conv_sum(x: np.ndarray, filt: np.ndarray, g, groups: int = 1, what: str = "CONV_2D") -> np.ndarray:
    """sum_{i, j, k} x[n, y*sh + i*dh - pt, x*sw + j*dw - pl, group(d)*cg + k] * filt[d, i, j, k], the
    padding 0: CONV_2D (one group) and GROUPED_CONV_2D.  ``filt`` is [depth_out, kh, kw, depth_group]
    and output channel d belongs to group d // (depth_out / groups)."""
    n, _, _, depth = x.shape
    depth_out, kernel_h, kernel_w, depth_group = filt.shape
    if depth_group * groups != depth or depth_out % groups:
        raise KernelError(f"{what}: filter {filt.shape} in {groups} groups for input depth {depth}")
    view = windows(x, g, kernel_h, kernel_w, what)
    out_h, out_w = view.shape[1:3]
    rows = n * out_h * out_w
    if groups == 1 and kernel_h == kernel_w == 1:  # a pointwise filter: the (strided) input's pixels are the rows
        unpadded = not (g.pad_top or g.pad_bottom or g.pad_left or g.pad_right)
        pixels = x if unpadded and g.stride_h == g.stride_w == 1 else view[..., 0, 0]
        return (pixels.reshape(rows, depth) @ filt.reshape(depth_out, depth).T).reshape(n, out_h, out_w, depth_out)
    # im2col: one row per output pixel and group, (tap row, tap column, channel) along it, the filter's order
    columns = (view.reshape(n, out_h, out_w, groups, depth_group, kernel_h, kernel_w)
               .transpose(3, 0, 1, 2, 5, 6, 4).reshape(groups, rows, kernel_h * kernel_w * depth_group))
    weights = filt.reshape(groups, depth_out // groups, kernel_h * kernel_w * depth_group)
    if groups == 1:
        return (columns[0] @ weights[0].T).reshape(n, out_h, out_w, depth_out)
    products = np.matmul(columns, weights.transpose(0, 2, 1))  # [groups, rows, depth_out / groups]
    return products.transpose(1, 0, 2).reshape(n, out_h, out_w, depth_out)


#: Elements of a depthwise convolution's accumulator block: a block of output rows at a time, its
#: accumulator and product small enough to stay in cache across the taps (twice as fast as whole
#: tensors, which make every tap a pass through memory).
_DEPTHWISE_BLOCK = 1 << 15


def depthwise_sum(x: np.ndarray, filt: np.ndarray, g, multiplier: int, what: str = "DEPTHWISE_CONV_2D") -> np.ndarray:
    """sum_{i, j} x[n, y*sh + i*dh - pt, x*sw + j*dw - pl, c] * filt[0, i, j, c*multiplier + q] at output
    channel c*multiplier + q, the padding 0.  ``filt`` is [1, kh, kw, depth * multiplier].  Tap by tap
    over whole blocks of output rows."""
    n, _, _, depth = x.shape
    _, kernel_h, kernel_w, depth_out = filt.shape
    if depth * multiplier != depth_out:
        raise KernelError(f"{what}: depth multiplier {multiplier} for input depth {depth} and filter depth {depth_out}")
    out_h, out_w = _sizes(x, g, kernel_h, kernel_w, what)
    source = padded(x, g)
    # [kh, kw, depth, multiplier]; with one multiplier the last axis dropped (a length-1 innermost loop is slow)
    weights = filt[0].reshape(kernel_h, kernel_w, depth, multiplier)
    weights = weights[..., 0] if multiplier == 1 else weights
    result = np.empty((n, out_h, out_w, depth_out), np.result_type(x, filt))
    rows = max(1, _DEPTHWISE_BLOCK // max(1, n * out_w * depth_out))
    for first in range(0, out_h, rows):
        count = min(rows, out_h - first)
        total = product = None
        for i in range(kernel_h):
            top = first * g.stride_h + i * g.dilation_h
            for j in range(kernel_w):
                left = j * g.dilation_w
                pixels = source[:, top : top + (count - 1) * g.stride_h + 1 : g.stride_h,
                                left : left + (out_w - 1) * g.stride_w + 1 : g.stride_w]
                pixels = pixels if multiplier == 1 else pixels[..., None]
                if total is None:
                    total = np.multiply(pixels, weights[i, j])
                    product = np.empty_like(total)
                else:
                    np.multiply(pixels, weights[i, j], out=product)
                    total += product
        assert total is not None  # a filter has one tap at least
        result[:, first : first + count] = total.reshape(n, count, out_w, depth_out)
    return result


def transpose_sum(x: np.ndarray, filt: np.ndarray, g, out_h: int, out_w: int,
                  what: str = "TRANSPOSE_CONV_2D") -> np.ndarray:
    """The transposed convolution: input pixel (y, x) adds x[n, y, x, :] . filt[d, i, j, :] at output
    (y*sh + i - pt, x*sw + j - pl, d), for the ``out_h`` x ``out_w`` outputs from (0, 0) (a negative
    bottom or right padding leaves outputs past the last contribution at 0).  ``filt`` is
    [depth_out, kh, kw, depth_in]; ``g``'s dilations are 1."""
    n, height, width, depth = x.shape
    depth_out, kernel_h, kernel_w, depth_in = filt.shape
    if depth_in != depth:
        raise KernelError(f"{what}: filter depth {depth_in} for input depth {depth}")
    # every input pixel's contribution to each tap's output, in one matrix product
    weights = filt.transpose(1, 2, 0, 3).reshape(kernel_h * kernel_w * depth_out, depth)
    contributions = (x.reshape(-1, depth) @ weights.T).reshape(n, height, width, kernel_h, kernel_w, depth_out)
    # col2im: the full (unpadded) output, then the padding cropped off
    full_h = max((height - 1) * g.stride_h + kernel_h, g.pad_top + out_h)
    full_w = max((width - 1) * g.stride_w + kernel_w, g.pad_left + out_w)
    full = np.zeros((n, full_h, full_w, depth_out), contributions.dtype)
    for i in range(kernel_h):
        for j in range(kernel_w):
            full[:, i : i + (height - 1) * g.stride_h + 1 : g.stride_h,
                 j : j + (width - 1) * g.stride_w + 1 : g.stride_w] += contributions[:, :, :, i, j]
    return full[:, g.pad_top : g.pad_top + out_h, g.pad_left : g.pad_left + out_w]


def window_counts(size: int, kernel: int, stride: int, head: int, out: int) -> np.ndarray:
    """How many of each output's ``kernel`` positions along one axis fall inside the input (not
    in the padding): what NNAPI's average and L2 pools divide by."""
    start = np.arange(out) * stride - head
    return np.minimum(start + kernel, size) - np.maximum(start, 0)
