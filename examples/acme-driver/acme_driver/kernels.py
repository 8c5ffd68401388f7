"""The operations Acme runs, each a signature check and a numpy kernel.

Every operation here takes float32 tensors of rank 1 to 4 (NNAPI's limit for them); ADD and MUL
broadcast their two tensors as numpy does and end with a fused activation, an INT32 scalar that
is a constant or a model input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.api.hal import Operand, OperandType, Operation, OperationType

F32, INT32 = OperandType.TENSOR_FLOAT32, OperandType.INT32
MAX_RANK = 4
#: A fused activation code (NONE, RELU, RELU1, RELU6) -> the interval its result is clamped to.
ACTIVATION_BOUNDS: dict[int, tuple[float, float]] = {
    0: (-np.inf, np.inf),
    1: (0.0, np.inf),
    2: (-1.0, 1.0),
    3: (0.0, 6.0),
}


class Unsupported(Exception):
    """An operation this driver cannot run, with why."""


class KernelFailure(Exception):
    """An operation that met values it cannot compute at execution (a bad activation code, shapes
    that do not broadcast): the execution fails."""


@dataclass(frozen=True)
class Kernel:
    """How many inputs an operation takes, and the function computing its one output."""

    inputs: int
    run: Callable[[Sequence[np.ndarray]], np.ndarray]


def _activation(code: np.ndarray) -> tuple[float, float]:
    value = int(code.reshape(()))
    if value not in ACTIVATION_BOUNDS:
        raise KernelFailure(f"fused activation code {value} (NNAPI: 0 to 3)")
    return ACTIVATION_BOUNDS[value]


def _binary(ufunc: np.ufunc) -> Callable[[Sequence[np.ndarray]], np.ndarray]:
    def run(values: Sequence[np.ndarray]) -> np.ndarray:
        left, right, code = values
        low, high = _activation(code)
        try:
            shape = np.broadcast_shapes(left.shape, right.shape)
        except ValueError:
            raise KernelFailure(f"shapes {left.shape} and {right.shape} do not broadcast") from None
        result = np.empty(shape, np.float32)
        with np.errstate(all="ignore"):  # overflow gives inf, as IEEE float32 does
            ufunc(left, right, out=result)
        return np.clip(result, low, high, out=result) if (low, high) != (-np.inf, np.inf) else result

    return run


def _relu(values: Sequence[np.ndarray]) -> np.ndarray:
    return np.maximum(values[0], np.float32(0))


KERNELS: dict[OperationType, Kernel] = {
    OperationType.ADD: Kernel(3, _binary(np.add)),
    OperationType.MUL: Kernel(3, _binary(np.multiply)),
    OperationType.RELU: Kernel(1, _relu),
}


def check_signature(operation: Operation, operands: Sequence[Operand]) -> None:
    """Raise `Unsupported` unless this driver runs ``operation`` on these operands."""
    kernel = KERNELS.get(operation.type)
    if kernel is None:
        raise Unsupported(f"{operation.type.name} is not an operation of this driver")
    count = len(operands)
    if any(not 0 <= i < count for i in (*operation.inputs, *operation.outputs)):
        raise Unsupported("an operand index is out of range")
    ins = [operands[i] for i in operation.inputs]
    outs = [operands[i] for i in operation.outputs]
    if len(ins) != kernel.inputs or len(outs) != 1:
        raise Unsupported(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: {kernel.inputs} and 1)")
    tensors = [*ins[:2], outs[0]] if kernel.inputs == 3 else [ins[0], outs[0]]
    if any(t.type != F32 for t in tensors):
        raise Unsupported("only TENSOR_FLOAT32 tensors")
    if kernel.inputs == 3 and ins[2].type != INT32:
        raise Unsupported("the fused activation must be an INT32 scalar")
    if any(len(t.dimensions) > MAX_RANK for t in tensors):
        raise Unsupported(f"a tensor of rank above {MAX_RANK}")
