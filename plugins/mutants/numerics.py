"""Seeded numeric bugs: outputs hold wrong values however they travel, the value rule (OPS-1)."""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.api.hal import OperandType, OperationType
from reference_driver.ops import KERNELS, Kernel, _numeric, elementwise, nn

from ..variants.drivers import in_relaxed_model, relaxed_float32_in_float16
from ._registry import mutant, with_kernels


@mutant("broadcast-rank-1-wrong", "OPS-1", "ADD walks a broadcast rank-1 operand backwards",
        operations=(OperationType.ADD,))
def broadcast_rank_1_wrong():
    add = elementwise.binary(np.add)

    def run(values, ins, out_op, out):
        a, b, act = values
        if b.ndim == 1 and a.ndim >= 2 and b.shape[0] > 1:
            b = b[::-1]  # the stride of the broadcast axis taken with the wrong sign
        return add([a, b, act], ins, out_op, None)

    return with_kernels({OperationType.ADD: run})


@mutant("relu6-clamps-at-6.5", "OPS-1", "the fused RELU6 activation clamps at 6.5",
        operations=(OperationType.ADD, OperationType.DIV, OperationType.MUL, OperationType.SUB))
def relu6_clamps_at_6_5():
    runs = {}
    for op in (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV):
        ufunc = {OperationType.ADD: np.add, OperationType.SUB: np.subtract, OperationType.MUL: np.multiply,
                 OperationType.DIV: np.divide}[op]

        def run(values, ins, out_op, out, kernel=KERNELS[op].run, ufunc=ufunc):
            if _numeric.scalar(values[2]) != 3:  # every other activation as the reference computes it
                return kernel(values, ins, out_op, out)
            real = ufunc(_numeric.to_real(values[0], ins[0]), _numeric.to_real(values[1], ins[1]))
            return _numeric.from_real(np.clip(real, 0, 6.5), out_op)

        runs[op] = run
    return with_kernels(runs)


@mutant("quantized-rounding-truncates", "OPS-1", "requantizes by truncating toward minus infinity (one step low for half the values)",
        operations=(OperationType.ADD, OperationType.MUL, OperationType.SUB))
def quantized_rounding_truncates():
    original = _numeric.from_real

    def from_real(x, operand):
        if operand.scale:
            low, high = _numeric._RANGE[operand.type]
            q = np.floor(np.asarray(x, dtype=np.float64) / operand.scale) + operand.zero_point
            return np.clip(q, low, high).astype(original(np.zeros(1), operand).dtype)
        return original(x, operand)

    runs = {}
    for op in (OperationType.ADD, OperationType.SUB, OperationType.MUL):
        ufunc = {OperationType.ADD: np.add, OperationType.SUB: np.subtract, OperationType.MUL: np.multiply}[op]
        kernel = elementwise.binary(ufunc)

        def run(values, ins, out_op, out, kernel=kernel, ufunc=ufunc):
            if not out_op.scale:
                return kernel(values, ins, out_op, out)
            real = _numeric.activate(ufunc(_numeric.to_real(values[0], ins[0]), _numeric.to_real(values[1], ins[1])),
                                     _numeric.scalar(values[2]))
            return from_real(real, out_op)

        runs[op] = run
    return with_kernels(runs)


@mutant("conv-stride-2-ignored", "OPS-1", "CONV_2D computes stride 2 as stride 1 and writes the first rows",
        operations=(OperationType.CONV_2D,))
def conv_stride_2_ignored():
    def run(values, ins, out_op, out):
        data, filt, bias = nn.conv_weights(values, ins)
        geometry = nn.conv_geometry(values, ins, filt.shape, data.shape)  # either signature's strides
        nn.padding_within_filter(geometry, filt.shape[1], filt.shape[2])
        geometry = dataclasses.replace(geometry, stride_h=1 if geometry.stride_h == 2 else geometry.stride_h,
                                       stride_w=1 if geometry.stride_w == 2 else geometry.stride_w)
        result = nn.conv_2d(data, ins[0], filt, bias, geometry, out_op)
        if out is None or result.size < out.size:
            return result
        return result.reshape(-1)[:out.size].reshape(out.shape)  # the first rows, as many as fit

    return with_kernels({OperationType.CONV_2D: run})


_ELEMENTWISE = (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV)


@mutant("float32-computed-in-float16", "OPS-1",
        "computes TENSOR_FLOAT32 ADD, SUB, MUL and DIV with float16 precision in every model, as if each were relaxed",
        operations=(OperationType.ADD, OperationType.DIV, OperationType.MUL, OperationType.SUB))
def float32_computed_in_float16():
    runs = {}
    for op in _ELEMENTWISE:
        def run(values, ins, out_op, out, kernel=KERNELS[op].run):
            result = kernel(values, ins, out_op, None)
            return result.astype(np.float16).astype(np.float32) if result.dtype == np.float32 else result

        runs[op] = run
    return with_kernels(runs)


@mutant("relaxed-inputs-cut-at-64-elements", "OPS-1",
        "in a model with relaxComputationFloat32toFloat16, its float16 path converts only the first 64 elements of "
        "each TENSOR_FLOAT32 input of ADD, SUB, MUL and DIV (a fixed staging buffer); the rest read as 0")
def relaxed_inputs_cut_at_64_elements():
    # the correct relaxed driver (variant-relaxed-float32-in-float16) with the bug in its float16 path
    device = relaxed_float32_in_float16()
    for op in _ELEMENTWISE:
        def run(values, ins, out_op, out, relaxed_run=device.kernels[op].run):
            if in_relaxed_model() and out_op.type == OperandType.TENSOR_FLOAT32:
                values = list(values)
                for i in (0, 1):
                    staged = np.zeros(np.shape(values[i]), np.float32)
                    staged.reshape(-1)[:64] = np.asarray(values[i], np.float32).reshape(-1)[:64]
                    values[i] = staged
            return relaxed_run(values, ins, out_op, out)

        device.kernels[op] = Kernel(KERNELS[op].validate, run)
    return device
