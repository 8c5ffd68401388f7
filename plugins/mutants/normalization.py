"""Seeded bugs of the normalizations and CHANNEL_SHUFFLE: each computes one NNAPI rule
wrongly, and the generated suites' models of its family catch it (OPS-1: the operation's
values, whatever the test's theme)."""

from __future__ import annotations

import numpy as np

from harness.api.hal import OperationType, is_quantized_type
from reference_driver.ops import channel_shuffle, normalization
from reference_driver.ops._numeric import from_real, scalar

from ._registry import mutant, with_kernels


@mutant("l2-normalization-last-axis-only", "OPS-1",
        "L2_NORMALIZATION normalizes along the last axis whatever its axis input names",
        operations=(OperationType.L2_NORMALIZATION,))
def l2_normalization_last_axis_only():
    def run(values, ins, out_op, out):
        return normalization.run_l2_normalization(values[:1], ins[:1], out_op, out)

    return with_kernels({OperationType.L2_NORMALIZATION: run})


@mutant("l2-normalization-quantized-keeps-zero-point", "OPS-1",
        "a quantized L2_NORMALIZATION normalizes the stored values, without taking the input's zeroPoint away",
        operations=(OperationType.L2_NORMALIZATION,))
def l2_normalization_quantized_keeps_zero_point():
    def run(values, ins, out_op, out):
        if not is_quantized_type(ins[0].type):
            return normalization.run_l2_normalization(values, ins, out_op, out)
        x = values[0].astype(np.float64)
        axis = scalar(values[1]) if len(values) > 1 else -1
        norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
        return from_real(x / np.maximum(norm, normalization.L2_NORM_FLOOR), out_op)

    return with_kernels({OperationType.L2_NORMALIZATION: run})


@mutant("local-response-alpha-over-window", "OPS-1",
        "LOCAL_RESPONSE_NORMALIZATION divides alpha by the window's size (2 * radius + 1), Caffe's convention, "
        "instead of NNAPI's alpha as given",
        operations=(OperationType.LOCAL_RESPONSE_NORMALIZATION,))
def local_response_alpha_over_window():
    def run(values, ins, out_op, out):
        radius = scalar(values[1])
        alpha = np.asarray(values[3]) / (2 * radius + 1)
        return normalization.run_local_response_normalization([*values[:3], alpha.astype(values[3].dtype), *values[4:]],
                                                              ins, out_op, out)

    return with_kernels({OperationType.LOCAL_RESPONSE_NORMALIZATION: run})


@mutant("local-response-window-behind-only", "OPS-1",
        "LOCAL_RESPONSE_NORMALIZATION sums the squares of the radius elements before each one and itself, not those "
        "after it",
        operations=(OperationType.LOCAL_RESPONSE_NORMALIZATION,))
def local_response_window_behind_only():
    def run(values, ins, out_op, out):
        x = np.asarray(values[0], np.float64)
        radius = scalar(values[1])
        bias, alpha, beta = (float(np.asarray(v, np.float64).reshape(())) for v in values[2:5])
        axis = scalar(values[5]) if len(values) > 5 else -1
        moved = np.moveaxis(x, axis, -1)
        cumulative = np.cumsum(np.concatenate([np.zeros_like(moved[..., :1]), moved * moved], axis=-1), axis=-1)
        ends = np.arange(1, moved.shape[-1] + 1)
        sums = cumulative[..., ends] - cumulative[..., np.maximum(ends - radius - 1, 0)]
        return from_real(np.moveaxis(moved / np.power(bias + alpha * sums, beta), -1, axis), out_op)

    return with_kernels({OperationType.LOCAL_RESPONSE_NORMALIZATION: run})


@mutant("instance-normalization-ignores-layout", "OPS-1",
        "INSTANCE_NORMALIZATION normalizes over axes 1 and 2 (NHWC's height and width) whatever its layout flag says",
        operations=(OperationType.INSTANCE_NORMALIZATION,))
def instance_normalization_ignores_layout():
    def run(values, ins, out_op, out):
        nhwc = np.zeros_like(np.asarray(values[4]))
        return normalization.run_instance_normalization([*values[:4], nhwc], ins, out_op, out)

    return with_kernels({OperationType.INSTANCE_NORMALIZATION: run})


@mutant("instance-normalization-epsilon-outside-sqrt", "OPS-1",
        "INSTANCE_NORMALIZATION divides by sqrt(variance) + epsilon instead of sqrt(variance + epsilon)",
        operations=(OperationType.INSTANCE_NORMALIZATION,))
def instance_normalization_epsilon_outside_sqrt():
    def run(values, ins, out_op, out):
        x = np.asarray(values[0], np.float64)
        if x.ndim != 4 or x.size == 0:
            return normalization.run_instance_normalization(values, ins, out_op, out)
        gamma, beta, epsilon = (float(np.asarray(v, np.float64).reshape(())) for v in values[1:4])
        plane = (2, 3) if bool(np.asarray(values[4]).reshape(())) else (1, 2)
        centred = x - x.mean(axis=plane, keepdims=True)
        deviation = np.sqrt(np.mean(centred * centred, axis=plane, keepdims=True))
        with np.errstate(invalid="ignore", divide="ignore"):
            return from_real(centred * (gamma / (deviation + epsilon)) + beta, out_op)

    return with_kernels({OperationType.INSTANCE_NORMALIZATION: run})


@mutant("channel-shuffle-inverse", "OPS-1",
        "CHANNEL_SHUFFLE reads the channels as groups of num_groups (the inverse shuffle) instead of as num_groups "
        "groups",
        operations=(OperationType.CHANNEL_SHUFFLE,))
def channel_shuffle_inverse():
    def run(values, ins, out_op, out):
        channels = values[0].shape[scalar(values[2])]
        groups = scalar(values[1])
        if groups <= 0 or channels % groups:
            return channel_shuffle.run_channel_shuffle(values, ins, out_op, out)
        swapped = np.asarray(channels // groups, dtype=values[1].dtype)
        return channel_shuffle.run_channel_shuffle([values[0], swapped, values[2]], ins, out_op, out)

    return with_kernels({OperationType.CHANNEL_SHUFFLE: run})
