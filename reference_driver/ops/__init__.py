"""The operation table: for each OperationType a static check and a numpy kernel.

``validate(inputs, outputs)`` looks only at operand metadata (prepare time);
``run(values, inputs, output, out)`` computes the single output from input values,
writing into ``out`` when it can and returning the result array.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.api.hal import Operand, OperationType

from . import elementwise, nn, shape
from ._numeric import FLOAT_TENSORS, KernelError

__all__ = ["KERNELS", "Kernel", "KernelError"]


@dataclass(frozen=True)
class Kernel:
    validate: Callable[[Sequence[Operand], Sequence[Operand]], bool]
    run: Callable[[Sequence[np.ndarray], Sequence[Operand], Operand, "np.ndarray | None"], np.ndarray]


KERNELS: dict[OperationType, Kernel] = {
    OperationType.ADD: Kernel(elementwise.binary_types(elementwise.ARITHMETIC_TYPES), elementwise.binary(np.add)),
    OperationType.SUB: Kernel(elementwise.binary_types(elementwise.ARITHMETIC_TYPES), elementwise.binary(np.subtract)),
    OperationType.MUL: Kernel(elementwise.binary_types(elementwise.ARITHMETIC_TYPES), elementwise.binary(np.multiply)),
    OperationType.DIV: Kernel(elementwise.binary_types(FLOAT_TENSORS), elementwise.binary(np.divide)),
    OperationType.RELU: Kernel(elementwise.validate_relu, elementwise.run_relu),
    OperationType.RESHAPE: Kernel(shape.validate_reshape, shape.run_reshape),
    OperationType.CONCATENATION: Kernel(shape.validate_concatenation, shape.run_concatenation),
    OperationType.FULLY_CONNECTED: Kernel(nn.validate_fully_connected, nn.run_fully_connected),
    OperationType.CONV_2D: Kernel(nn.validate_conv_2d, nn.run_conv_2d),
}
