"""Deep bugs in kernels' rare paths: tails of vector blocks, fast paths, layouts, strides.

Each acts on the value an operation writes to a model output, and only when every condition
of its path holds; each condition is a branch of its own.
"""

from __future__ import annotations

import numpy as np

from harness.api.hal import OperandLifeTime, OperandType, OperationType, conv_2d_has_padding_scheme

from ._registry import Execution, Fault, Reach, deep_bug
from ._values import operand, operations, scalar, wrong

_QUANT8 = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


@deep_bug("conv-nchw-wide-tail", "OPS-1",
          "float32 CONV_2D with dilation factors, in NCHW, with more than two blocks of 4 output channels and several "
          "batches drops the last channel's tail block for every batch after the first", Reach.STRUCTURE)
class ConvNchwWideTail(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for conv in operations(execution, OperationType.CONV_2D):
            inputs = [operand(execution, i) for i in conv.inputs]
            layout_at = 7 if conv_2d_has_padding_scheme(inputs) else 10
            if len(conv.inputs) <= layout_at or not scalar(values, conv.inputs[layout_at]):
                continue  # NHWC: another kernel
            if len(conv.inputs) < layout_at + 3:
                continue  # no dilation factors: the plain kernel
            if inputs[0].type != OperandType.TENSOR_FLOAT32:
                continue
            out = values[conv.outputs[0]]
            if out.shape[1] <= 8:
                continue  # two blocks of 4 at most: no tail block
            if out.shape[0] < 2:
                continue
            values[conv.outputs[0]] = wrong(out, (slice(1, None), -1))


@deep_bug("depthwise-multiplier-uneven-strides", "OPS-1",
          "quantized DEPTHWISE_CONV_2D of a per-channel filter over several batches, with a depth multiplier of 3, a "
          "fused RELU6 and different strides on the two axes takes the width stride for both in its unrolled multiplier loop, getting the second channel of each "
          "group wrong",
          Reach.STRUCTURE)
class DepthwiseMultiplierStrides(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for conv in operations(execution, OperationType.DEPTHWISE_CONV_2D):
            if operand(execution, conv.inputs[0]).type not in _QUANT8:
                continue
            # a padding scheme: 8 or 9 inputs, or 11 whose input 8 is the layout flag (not a stride)
            implicit = len(conv.inputs) in (8, 9) or (len(conv.inputs) == 11 and
                                                     operand(execution, conv.inputs[8]).type == OperandType.BOOL)
            multiplier_at = 6 if implicit else 9
            if scalar(values, conv.inputs[multiplier_at]) != 3:
                continue
            if scalar(values, conv.inputs[multiplier_at + 1]) != 3:
                continue  # the RELU6 epilogue alone is unrolled
            stride_w, stride_h = (scalar(values, conv.inputs[k]) for k in ((4, 5) if implicit else (7, 8)))
            if stride_w == stride_h:
                continue
            if operand(execution, conv.inputs[1]).type != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
                continue
            if values[conv.inputs[0]].shape[0] < 2:
                continue
            nchw = len(conv.inputs) > multiplier_at + 2 and bool(scalar(values, conv.inputs[multiplier_at + 2]))
            out = values[conv.outputs[0]]
            channel = (slice(None), slice(1, None, 2)) if nchw else (Ellipsis, slice(1, None, 2))
            values[conv.outputs[0]] = wrong(out, channel)


@deep_bug("fully-connected-batched-referenced-bias", "POOL-1",
          "FULLY_CONNECTED of a rank-4 input with a fused RELU1, an input size of 12 or more, 8 or more units, a batch past a whole number "
          "of blocks of four and its bias in a constant pool leaves the bias out of the last batch row (the clamped "
          "kernel reads the pool's bias once per block of four rows)", Reach.STRUCTURE)
class FullyConnectedBias(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for fc in operations(execution, OperationType.FULLY_CONNECTED):
            if scalar(values, fc.inputs[3]) != 2:
                continue  # RELU1's kernel alone blocks rows
            if values[fc.inputs[0]].ndim < 4:
                continue  # a batch of three axes or more is flattened by this path
            if operand(execution, fc.inputs[2]).lifetime != OperandLifeTime.CONSTANT_REFERENCE:
                continue
            if values[fc.inputs[1]].shape[-1] < 12:
                continue
            out = values[fc.outputs[0]]
            if out.shape[-1] < 8:
                continue
            if out.shape[0] < 4 or out.shape[0] % 4 == 0:
                continue  # whole blocks of four rows are right
            values[fc.outputs[0]] = wrong(out, (-1,))


@deep_bug("broadcast-vector-constant-stride", "POOL-1",
          "ADD/SUB/MUL/DIV with a fused RELU of a rank-4 tensor and a vector in a constant pool longer than one block "
          "of 4 takes a fast path "
          "that reads the vector with a stride of one block, wrong past the first 4 elements of each row",
          Reach.STRUCTURE)
class BroadcastVectorStride(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for op in operations(execution, OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV):
            out = values[op.outputs[0]]
            if out.ndim != 4:
                continue
            vectors = [i for i in op.inputs[:2] if values[i].ndim == 1 and values[i].shape[0] == out.shape[-1]]
            if not vectors:
                continue
            if out.shape[-1] <= 4:
                continue
            if operand(execution, vectors[0]).lifetime != OperandLifeTime.CONSTANT_REFERENCE:
                continue  # a vector in the request or the model's values goes the general way
            if scalar(values, op.inputs[2]) != 1:
                continue  # the RELU epilogue alone is fused into the fast path
            values[op.outputs[0]] = wrong(out, (Ellipsis, slice(4, None)))


@deep_bug("average-pool-padded-half", "OPS-1",
          "AVERAGE_POOL_2D on float16 of two batches of more than 8 channels, with explicit padding on both sides and "
          "a filter wider than its stride "
          "divides the first column's windows by the whole filter area (the padding counted)", Reach.DTYPES)
class AveragePoolPaddedHalf(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for pool in operations(execution, OperationType.AVERAGE_POOL_2D):
            if len(pool.inputs) < 10:
                continue  # a padding scheme
            if operand(execution, pool.inputs[0]).type != OperandType.TENSOR_FLOAT16:
                continue
            left, right, stride_w, filter_w = (scalar(values, pool.inputs[k]) for k in (1, 2, 5, 7))
            if not (left and right):
                continue
            if filter_w <= stride_w:
                continue
            nchw = len(pool.inputs) > 10 and bool(scalar(values, pool.inputs[10]))
            out = values[pool.outputs[0]]
            if out.shape[0] < 2 or out.shape[1 if nchw else 3] <= 8:
                continue  # the single-batch or narrow kernel counts its windows
            values[pool.outputs[0]] = wrong(out, (Ellipsis, 0) if nchw else (slice(None), slice(None), 0))


@deep_bug("concatenation-three-rescaled", "OPS-1",
          "signed quantized CONCATENATION of five inputs, the last of three channels, along the channels of a rank-4 tensor of four batches, the later "
          "ones of other scales, rescales only the first two, copying the later ones' bytes as they are", Reach.STRUCTURE)
class ConcatenationRescale(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for concat in operations(execution, OperationType.CONCATENATION):
            tensors = concat.inputs[:-1]
            if len(tensors) < 5:
                continue
            if values[tensors[0]].ndim != 4 or int(scalar(values, concat.inputs[-1]) or 0) % 4 != 3:
                continue  # another axis: the general copy loop
            if values[tensors[0]].shape[0] < 4:
                continue  # fewer batches than the kernel's unrolled loop
            kinds = [operand(execution, i) for i in tensors]
            if kinds[0].type != OperandType.TENSOR_QUANT8_ASYMM_SIGNED:
                continue
            if values[tensors[-1]].shape[-1] != 3:
                continue  # a narrower last input is copied by the scalar tail
            output = operand(execution, concat.outputs[0])
            if all(k.scale == output.scale and k.zero_point == output.zero_point for k in kinds[2:]):
                continue  # nothing to rescale past the second
            axis = int(scalar(values, concat.inputs[-1]) or 0)
            out = values[concat.outputs[0]]
            axis %= out.ndim
            start = sum(values[i].shape[axis] for i in tensors[:2])
            where = tuple(slice(start, None) if k == axis else slice(None) for k in range(out.ndim))
            values[concat.outputs[0]] = wrong(out, where)


@deep_bug("transpose-conv-stride-three", "OPS-1",
          "quantized TRANSPOSE_CONV_2D of two batches of more than 8 channels, with stride 3 on both axes and explicit "
          "padding, loses the last "
          "output column (its scatter loop stops one stride early)", Reach.STRUCTURE)
class TransposeConvStrideThree(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for conv in operations(execution, OperationType.TRANSPOSE_CONV_2D):
            if len(conv.inputs) != 11:
                continue  # an output shape and a padding scheme
            if scalar(values, conv.inputs[7]) != 3:
                continue
            if scalar(values, conv.inputs[8]) != 3:
                continue
            if operand(execution, conv.inputs[0]).type not in _QUANT8:
                continue
            nchw = bool(scalar(values, conv.inputs[10]))
            source = values[conv.inputs[0]]
            if source.shape[0] < 2 or source.shape[1 if nchw else 3] <= 8:
                continue
            out = values[conv.outputs[0]]
            values[conv.outputs[0]] = wrong(out, (Ellipsis, -1) if nchw else (slice(None), slice(None), -1))


@deep_bug("resize-nearest-align-corners-enlarging", "OPS-1",
          "RESIZE_NEAREST_NEIGHBOR by scale factors with align_corners, enlarging both axes of an NCHW tensor of "
          "three channels and several batches to 6 rows or more, rounds the last row's source down", Reach.STRUCTURE)
class ResizeNearestAlignCorners(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        for resize in operations(execution, OperationType.RESIZE_NEAREST_NEIGHBOR):
            if len(resize.inputs) < 5 or not scalar(values, resize.inputs[4]):
                continue  # no align_corners
            if not scalar(values, resize.inputs[3]):
                continue  # NHWC
            if operand(execution, resize.inputs[1]).type == OperandType.INT32:
                continue  # to a size: its own loop
            source, out = values[resize.inputs[0]], values[resize.outputs[0]]
            if source.shape[1] != 3:
                continue
            if out.shape[2] <= source.shape[2] or out.shape[3] <= source.shape[3]:
                continue
            if out.shape[2] < 6:
                continue  # a few rows are resized by the unrolled loop
            if out.shape[0] < 2:
                continue
            values[resize.outputs[0]] = wrong(out, (slice(None), slice(None), -1))
