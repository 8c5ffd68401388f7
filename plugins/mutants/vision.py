"""Seeded bugs of the convolutions, pools and resizes, each caught by the generated suites as wrong
values: the value rule (OPS-1), whatever the theme of the test that sees them."""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.api.hal import OperationType, is_quantized_type, numpy_dtype
from reference_driver.ops import _window, conv, pooling, resize
from reference_driver.ops._numeric import activate, from_real

from ._registry import mutant, with_kernels


@mutant("depthwise-multiplier-ignored", "OPS-1",
        "DEPTHWISE_CONV_2D gives output channel d the input channel d mod depth_in, as if the depth multiplier "
        "were 1 (right only when it is, or for a single input channel)",
        operations=(OperationType.DEPTHWISE_CONV_2D,))
def depthwise_multiplier_ignored():
    def run(values, ins, out_op, out):
        p = conv.prepare_depthwise(values, ins)
        depth_out = p.filt.shape[3]
        spread = p.x[..., np.arange(depth_out) % p.x.shape[3]]  # one input channel per output channel
        return conv.finish(_window.depthwise_sum(spread, p.filt, p.g, 1) + p.bias, p.g, out_op)

    return with_kernels({OperationType.DEPTHWISE_CONV_2D: run})


@mutant("grouped-conv-groups-interleaved", "OPS-1",
        "GROUPED_CONV_2D puts output channel d in group d mod groups instead of d // (depth_out / groups) "
        "(right only for one group, or one output channel per group)",
        operations=(OperationType.GROUPED_CONV_2D,))
def grouped_conv_groups_interleaved():
    def run(values, ins, out_op, out):
        p = conv.prepare_grouped(values, ins)
        depth_out, groups = p.filt.shape[0], p.count
        if depth_out % groups:
            return conv.run_grouped_conv_2d(values, ins, out_op, out)  # the reference's error
        # the channels of each interleaved group, listed group after group, computed as contiguous groups
        order = np.array([d for g in range(groups) for d in range(g, depth_out, groups)])
        computed = _window.conv_sum(p.x, p.filt[order], p.g, groups, "GROUPED_CONV_2D") + p.bias[order]
        return conv.finish(computed[..., np.argsort(order)], p.g, out_op)

    return with_kernels({OperationType.GROUPED_CONV_2D: run})


@mutant("transpose-conv-padding-ends-swapped", "OPS-1",
        "TRANSPOSE_CONV_2D crops its padding from the wrong ends: the left padding off the right, the top "
        "padding off the bottom (so SAME's odd pixel goes to the start)",
        operations=(OperationType.TRANSPOSE_CONV_2D,))
def transpose_conv_padding_ends_swapped():
    def run(values, ins, out_op, out):
        p, out_h, out_w = conv.prepare_transpose(values, ins)
        g = p.g
        if min(g.pad_right, g.pad_bottom) >= 0:
            g = dataclasses.replace(g, pad_top=g.pad_bottom, pad_bottom=g.pad_top, pad_left=g.pad_right,
                                    pad_right=g.pad_left)
        return conv.finish(_window.transpose_sum(p.x, p.filt, g, out_h, out_w) + p.bias, p.g, out_op)

    return with_kernels({OperationType.TRANSPOSE_CONV_2D: run})


@mutant("average-pool-counts-padding", "OPS-1",
        "AVERAGE_POOL_2D divides every window's sum by the filter's area, its padding counted as zeros",
        operations=(OperationType.AVERAGE_POOL_2D,))
def average_pool_counts_padding():
    def run(values, ins, out_op, out):
        g, filter_h, filter_w = pooling.pool_geometry(values, ins, "AVERAGE_POOL_2D")
        stored = values[0].transpose(0, 2, 3, 1) if g.nchw else values[0]
        if is_quantized_type(out_op.type):  # zeros of the real value: the zero point, stored
            x = stored.astype(np.float64) - out_op.zero_point
            mean = _window.windows(x, g, filter_h, filter_w, "AVERAGE_POOL_2D").mean(axis=(-2, -1))
            result = from_real(activate(mean * out_op.scale, g.activation), out_op)
        else:
            mean = _window.windows(np.asarray(stored, np.float64), g, filter_h, filter_w, "AVERAGE_POOL_2D").mean(axis=(-2, -1))
            result = from_real(activate(mean, g.activation), out_op)
        return result.transpose(0, 3, 1, 2) if g.nchw else result

    return with_kernels({OperationType.AVERAGE_POOL_2D: run})


@mutant("max-pool-pads-with-zero", "OPS-1",
        "MAX_POOL_2D pads with zeros (the real value 0) instead of leaving the padding out: a window over the "
        "padding whose input values are all negative gives 0",
        operations=(OperationType.MAX_POOL_2D,))
def max_pool_pads_with_zero():
    def run(values, ins, out_op, out):
        g, filter_h, filter_w = pooling.pool_geometry(values, ins, "MAX_POOL_2D")
        stored = np.asarray(values[0].transpose(0, 2, 3, 1) if g.nchw else values[0], np.float64)
        zero = out_op.zero_point if is_quantized_type(out_op.type) else 0.0
        largest = _window.windows(stored, g, filter_h, filter_w, "MAX_POOL_2D", fill=zero).max(axis=(-2, -1))
        if is_quantized_type(out_op.type):
            result = np.clip(largest, *pooling._quantized_range(g.activation, out_op)).astype(numpy_dtype(out_op.type))
        else:
            result = from_real(activate(largest, g.activation), out_op)
        return result.transpose(0, 3, 1, 2) if g.nchw else result

    return with_kernels({OperationType.MAX_POOL_2D: run})


@mutant("pooling-ignores-layout", "OPS-1",
        "AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D read and write NCHW tensors as NHWC (the layout flag ignored)",
        operations=(OperationType.AVERAGE_POOL_2D, OperationType.L2_POOL_2D, OperationType.MAX_POOL_2D))
def pooling_ignores_layout():
    def nhwc_only(reference_run):
        def run(values, ins, out_op, out):
            layout = 7 if len(ins) == 8 else 10 if len(ins) == 11 else None
            if layout is not None:
                values = [*values[:layout], np.bool_(False), *values[layout + 1:]]
            return reference_run(values, ins, out_op, out)
        return run

    return with_kernels({OperationType.AVERAGE_POOL_2D: nhwc_only(pooling.run_average_pool_2d),
                         OperationType.MAX_POOL_2D: nhwc_only(pooling.run_max_pool_2d),
                         OperationType.L2_POOL_2D: nhwc_only(pooling.run_l2_pool_2d)})


@mutant("resize-bilinear-ignores-half-pixel-centers", "OPS-1",
        "RESIZE_BILINEAR samples at y x scale even when half_pixel_centers is true (TensorFlow 1's legacy positions)",
        operations=(OperationType.RESIZE_BILINEAR,))
def resize_bilinear_ignores_half_pixel_centers():
    def run(values, ins, out_op, out):
        if len(values) > 5:
            values = [*values[:5], np.bool_(False)]
        return resize.run_resize_bilinear(values, ins, out_op, out)

    return with_kernels({OperationType.RESIZE_BILINEAR: run})


@mutant("resize-nearest-align-corners-floors", "OPS-1",
        "RESIZE_NEAREST_NEIGHBOR with align_corners takes the pixel below each position (floor) instead of the "
        "nearest one (rounded)",
        operations=(OperationType.RESIZE_NEAREST_NEIGHBOR,))
def resize_nearest_align_corners_floors():
    def run(values, ins, out_op, out):
        nchw, align, half, out_h, out_w = resize.geometry(values, ins, "RESIZE_NEAREST_NEIGHBOR")
        x = values[0].transpose(0, 2, 3, 1) if nchw else values[0]

        def indexes(size: int, count: int) -> np.ndarray:
            if not align:
                return resize.nearest_indexes(size, count, align, half)
            position = np.arange(count, dtype=np.float32) * resize._scale(size, count, True)
            return np.minimum(np.floor(position).astype(np.int64), size - 1)  # not rounded

        rows, columns = indexes(x.shape[1], out_h), indexes(x.shape[2], out_w)
        result = x[:, rows][:, :, columns]
        return result.transpose(0, 3, 1, 2) if nchw else result

    return with_kernels({OperationType.RESIZE_NEAREST_NEIGHBOR: run})
