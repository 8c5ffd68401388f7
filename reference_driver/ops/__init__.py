"""The operation table: for each OperationType a static check and a numpy kernel.

``validate(inputs, outputs)`` looks only at operand metadata (prepare time) and returns None,
or a `Refusal` naming the operand and the feature that is not accepted;
``run(values, inputs, output, out)`` computes the output from input values, writing into ``out``
when it can and returning the result array; an operation of several outputs (SPLIT, TOPK_V2)
returns a tuple of arrays, one per output operand in order, each with its own shape (``output``
and ``out`` then concern the first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# which inputs may be omitted is NeuralNetworks.h's, shared with the harness's request mutations
from harness.api.hal import OPTIONAL_INPUTS, FusedActivation, Operand, OperationType

from . import (activations, channel_shuffle, comparisons, conv, conversions, elementwise, lookup, nn, normalization,
               pointwise, pooling, rearrange, reduction, resize, sampling, shape, shape_values, slicing)
from . import detection, regions
from ._numeric import KernelError, Refusal

__all__ = ["KERNELS", "OMITTABLE_OUTPUTS", "OPTIONAL_INPUTS", "Kernel", "KernelError", "Refusal"]


@dataclass(frozen=True)
class Kernel:
    validate: Callable[[Sequence[Operand], Sequence[Operand]], "Refusal | None"]
    run: Callable[[Sequence[np.ndarray], Sequence[Operand], Operand, "np.ndarray | None"], "np.ndarray | tuple[np.ndarray, ...]"]


KERNELS: dict[OperationType, Kernel] = {
    OperationType.ADD: Kernel(elementwise.binary_types(elementwise.ARITHMETIC_TYPES), elementwise.add),
    OperationType.SUB: Kernel(elementwise.binary_types(elementwise.ARITHMETIC_TYPES), elementwise.sub),
    OperationType.MUL: Kernel(elementwise.binary_types(elementwise.ARITHMETIC_TYPES, output_scale_above_product=True),
                              elementwise.mul),
    OperationType.DIV: Kernel(elementwise.binary_types(elementwise.DIV_TYPES), elementwise.div),
    OperationType.RELU: Kernel(elementwise.validate_relu, elementwise.clamp(FusedActivation.RELU, "RELU")),
    OperationType.RELU1: Kernel(elementwise.validate_relu, elementwise.clamp(FusedActivation.RELU1, "RELU1")),
    OperationType.RELU6: Kernel(elementwise.validate_relu, elementwise.clamp(FusedActivation.RELU6, "RELU6")),
    OperationType.RESHAPE: Kernel(shape.validate_reshape, shape.run_reshape),
    OperationType.CONCATENATION: Kernel(shape.validate_concatenation, shape.run_concatenation),
    OperationType.FULLY_CONNECTED: Kernel(nn.validate_fully_connected, nn.run_fully_connected),
    OperationType.CONV_2D: Kernel(nn.validate_conv_2d, nn.run_conv_2d),
    # the convolutions, the pools and the resizes (conv.py, pooling.py, resize.py)
    OperationType.DEPTHWISE_CONV_2D: Kernel(conv.validate_depthwise_conv_2d, conv.run_depthwise_conv_2d),
    OperationType.GROUPED_CONV_2D: Kernel(conv.validate_grouped_conv_2d, conv.run_grouped_conv_2d),
    OperationType.TRANSPOSE_CONV_2D: Kernel(conv.validate_transpose_conv_2d, conv.run_transpose_conv_2d),
    OperationType.AVERAGE_POOL_2D: Kernel(pooling.validate_average_pool_2d, pooling.run_average_pool_2d),
    OperationType.MAX_POOL_2D: Kernel(pooling.validate_max_pool_2d, pooling.run_max_pool_2d),
    OperationType.L2_POOL_2D: Kernel(pooling.validate_l2_pool_2d, pooling.run_l2_pool_2d),
    OperationType.RESIZE_BILINEAR: Kernel(resize.validate_resize_bilinear, resize.run_resize_bilinear),
    OperationType.RESIZE_NEAREST_NEIGHBOR: Kernel(resize.validate_resize_nearest_neighbor, resize.run_resize_nearest_neighbor),
}
# activations, element-wise functions, comparisons, logical operations, SELECT and conversions: one table per module
KERNELS.update({op: Kernel(*pair) for module in (activations, pointwise, comparisons, conversions)
                for op, pair in module.TABLE.items()})
# the shape and layout operations (rearrange.py, slicing.py; SPLIT and TOPK_V2 have several outputs)
KERNELS.update({op: Kernel(*pair) for module in (rearrange, slicing) for op, pair in module.TABLE.items()})
#: operation -> how many trailing results of its kernel a model may leave without an output operand (optional outputs).
OMITTABLE_OUTPUTS: dict[OperationType, int] = {}
# the normalizations, reductions, CHANNEL_SHUFFLE, FILL and RANK
KERNELS.update({op: Kernel(*pair) for module in (normalization, reduction, channel_shuffle, shape_values)
                for op, pair in module.TABLE.items()})
# the lookups (EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION) and RANDOM_MULTINOMIAL
KERNELS.update({op: Kernel(*pair) for module in (lookup, sampling) for op, pair in module.TABLE.items()})
# IF and WHILE: checked against the referenced subgraphs by the device and run by the executor (control_flow.py)
from . import control_flow  # noqa: E402

KERNELS.update({op: Kernel(*pair) for op, pair in control_flow.TABLE.items()})
# the detection and region operations (detection.py, regions.py; several outputs, some of data-dependent size)
KERNELS.update({op: Kernel(*pair) for module in (detection, regions) for op, pair in module.TABLE.items()})
# the recurrent operations: RNN, SVDF and the sequence RNNs (rnn.py); their HAL 1.3 state outputs may be left out
from . import rnn  # noqa: E402
KERNELS.update({op: Kernel(*pair) for op, pair in rnn.TABLE.items()})
OMITTABLE_OUTPUTS.update(rnn.OMITTABLE_OUTPUTS)
# the quantized LSTMs (quantized_lstm.py)
from . import quantized_lstm  # noqa: E402
KERNELS.update({op: Kernel(*pair) for op, pair in quantized_lstm.TABLE.items()})
# the LSTMs (lstm.py): a shared cell; omitted weights are optional inputs, the sequence LSTMs' state outputs optional
from . import lstm  # noqa: E402
KERNELS.update({op: Kernel(*pair) for op, pair in lstm.TABLE.items()})
OMITTABLE_OUTPUTS.update(lstm.OMITTABLE_OUTPUTS)
