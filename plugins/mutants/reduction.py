"""Seeded bugs of the reductions, ARGMAX/ARGMIN and FILL: each computes one NNAPI rule
wrongly, and the generated suites' models of its family catch it (OPS-1: the operation's
values, whatever the test's theme)."""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.api.hal import OperationType, is_quantized_type
from reference_driver.ops import reduction, shape_values

from ._registry import mutant, with_kernels


@mutant("mean-quantized-input-quantization", "OPS-1",
        "a quantized MEAN stores its result with the input's scale and zeroPoint instead of the output's",
        operations=(OperationType.MEAN,))
def mean_quantized_input_quantization():
    reference = reduction.reduction(OperationType.MEAN)

    def run(values, ins, out_op, out):
        if not is_quantized_type(out_op.type):
            return reference(values, ins, out_op, out)
        return reference(values, ins, dataclasses.replace(out_op, scale=ins[0].scale, zero_point=ins[0].zero_point), out)

    return with_kernels({OperationType.MEAN: run})


@mutant("reduction-negative-axis-off-by-one", "OPS-1",
        "the reductions count a negative axis from one before the end (-1 as the last axis but one, when there "
        "is one)",
        operations=(OperationType.MEAN, OperationType.REDUCE_ALL, OperationType.REDUCE_ANY, OperationType.REDUCE_MAX, OperationType.REDUCE_MIN, OperationType.REDUCE_PROD, OperationType.REDUCE_SUM))
def reduction_negative_axis_off_by_one():
    def shifted(op):
        reference = reduction.reduction(op)

        def run(values, ins, out_op, out):
            rank = np.ndim(values[0])
            axes = np.asarray(values[1]).reshape(-1)
            moved = np.where((axes < 0) & (axes - 1 >= -rank), axes - 1, axes).astype(axes.dtype)
            return reference([values[0], moved, values[2]], ins, out_op, out)
        return run

    return with_kernels({op: shifted(op) for op in reduction.REDUCTION_TYPES})


@mutant("argmax-last-of-ties", "OPS-1",
        "ARGMAX and ARGMIN give the index of the last of equal largest (smallest) elements instead of the first",
        operations=(OperationType.ARGMAX, OperationType.ARGMIN))
def argmax_last_of_ties():
    def last(op):
        pick = np.argmax if op == OperationType.ARGMAX else np.argmin
        reference = reduction.arg(op)

        def run(values, ins, out_op, out):
            result = reference(values, ins, out_op, out)  # its checks and its output shape
            x, axis = values[0], int(np.asarray(values[1]).reshape(()))
            flipped = np.flip(x, axis=axis)
            return (x.shape[axis] - 1 - pick(flipped, axis=axis)).astype(np.int32).reshape(result.shape)
        return run

    return with_kernels({op: last(op) for op in (OperationType.ARGMAX, OperationType.ARGMIN)})


@mutant("fill-value-truncated", "OPS-1",
        "FILL converts a float value to an integer (dropping its fraction) before filling a float tensor",
        operations=(OperationType.FILL,))
def fill_value_truncated():
    def run(values, ins, out_op, out):
        return shape_values.run_fill([values[0], np.trunc(np.asarray(values[1]))], ins, out_op, out)

    return with_kernels({OperationType.FILL: run})


@mutant("rank-without-size-one-axes", "OPS-1",
        "RANK counts the axes of its input's shape with the axes of size 1 squeezed away",
        operations=(OperationType.RANK,))
def rank_without_size_one_axes():
    def run(values, ins, out_op, out):
        return np.asarray(sum(1 for d in np.shape(values[0]) if d != 1), np.int32)

    return with_kernels({OperationType.RANK: run})
