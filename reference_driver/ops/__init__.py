"""The operation table: for each OperationType a static check and a numpy kernel.

``validate(inputs, outputs)`` looks only at operand metadata (prepare time) and returns None,
or a `Refusal` naming the operand and the feature that is not accepted;
``run(values, inputs, output, out)`` computes the single output from input values,
writing into ``out`` when it can and returning the result array.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.api.hal import FusedActivation, Operand, OperationType

from . import activations, comparisons, conversions, elementwise, nn, pointwise, shape
from ._numeric import KernelError, Refusal

__all__ = ["KERNELS", "Kernel", "KernelError", "Refusal"]


@dataclass(frozen=True)
class Kernel:
    validate: Callable[[Sequence[Operand], Sequence[Operand]], "Refusal | None"]
    run: Callable[[Sequence[np.ndarray], Sequence[Operand], Operand, "np.ndarray | None"], np.ndarray]


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
}
# activations, element-wise functions, comparisons, logical operations, SELECT and conversions: one table per module
KERNELS.update({op: Kernel(*pair) for module in (activations, pointwise, comparisons, conversions)
                for op, pair in module.TABLE.items()})
