"""Deep bugs of data types: requantization shortcuts, integer overflow, bounds computed narrow."""

from __future__ import annotations

import math

import numpy as np

from harness.api.hal import OperandLifeTime, OperandType, OperationType

from ._registry import Execution, Fault, Reach, deep_bug
from ._values import operand, operations, scalar, wrong

_QUANT8 = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


@deep_bug("quantized-add-shift-rescale", "OPS-1",
          "signed quantized ADD/SUB broadcast into rank 3 or more with a fused RELU6, whose input scales differ by a "
          "power of two, "
          "into the smaller scale, rescales by a bit shift that truncates instead of rounding to nearest",
          Reach.DTYPES)
class QuantizedAddShiftRescale(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for op in operations(execution, OperationType.ADD, OperationType.SUB):
            a, b = operand(execution, op.inputs[0]), operand(execution, op.inputs[1])
            if a.type != OperandType.TENSOR_QUANT8_ASYMM_SIGNED:
                continue
            if scalar(values, op.inputs[2]) != 3:
                continue  # the RELU6 kernel alone shifts
            low, high = sorted((a.scale, b.scale))
            if low == high:
                continue
            ratio = math.log2(high / low)
            if abs(ratio - round(ratio)) > 1e-6:
                continue  # no shift does it: the general multiplier path
            if operand(execution, op.outputs[0]).scale != low:
                continue
            if values[op.inputs[0]].shape == values[op.inputs[1]].shape or values[op.outputs[0]].ndim < 3:
                continue  # the shift is in the broadcast kernel of rank 3 and more
            values[op.outputs[0]] = wrong(values[op.outputs[0]])


@deep_bug("int32-broadcast-mul-saturates", "POOL-1",
          "TENSOR_INT32 MUL by a factor in a constant pool, broadcast into rank 4 with a last axis of 3 or more, saturates products of two "
          "negative numbers that overflow 32 bits (three or more of them), where NNAPI wraps it (the broadcast kernel's sign fix-up saturates)", Reach.DTYPES)
class Int32BroadcastMulSaturates(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for op in operations(execution, OperationType.MUL):
            if operand(execution, op.inputs[0]).type != OperandType.TENSOR_INT32:
                continue
            a, b = values[op.inputs[0]], values[op.inputs[1]]
            if a.shape == b.shape:
                continue  # the same-shape kernel wraps
            if operand(execution, op.inputs[1]).lifetime != OperandLifeTime.CONSTANT_REFERENCE:
                continue  # a factor in a constant pool is pre-broadcast into the saturating kernel
            out = values[op.outputs[0]]
            if out.ndim < 4 or out.shape[-1] < 3:
                continue
            wide_a, wide_b = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
            negatives = (wide_a < 0) & (wide_b < 0)
            if not negatives.any():
                continue
            overflow = negatives & (wide_a * wide_b > np.iinfo(np.int32).max)
            if overflow.sum() < 3:
                continue  # one or two are fixed up by the scalar tail
            values[op.outputs[0]] = np.where(overflow, np.iinfo(np.int32).max, out).astype(np.int32).reshape(out.shape)


@deep_bug("relu1-signed-bound-wraps", "OPS-1",
          "RELU1 on a rank-4 TENSOR_QUANT8_ASYMM_SIGNED computes its lower bound (zeroPoint - 1/scale) in int8, which wraps "
          "for a zero point near -128 and a small scale, clamping the lowest results wrongly", Reach.DTYPES)
class Relu1SignedBoundWraps(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for op in operations(execution, OperationType.RELU1):
            out = operand(execution, op.outputs[0])
            if out.type != OperandType.TENSOR_QUANT8_ASYMM_SIGNED:
                continue
            if out.zero_point - round(1 / out.scale) >= -128:
                continue  # the bound fits int8
            result = values[op.outputs[0]]
            if result.ndim < 4:
                continue  # the rank-4 kernel alone computes its bounds narrow
            values[op.outputs[0]] = wrong(result, result == result.min())
