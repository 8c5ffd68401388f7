"""ADD, SUB, MUL, DIV (with fused activation and numpy broadcasting) and RELU."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import FusedActivation, Operand, OperandType, is_quantized_type, numpy_dtype

from ._numeric import FLOAT_TENSORS, QUANT_TENSORS, KernelError, activate, from_real, scalar, to_real

_ARITHMETIC_TYPES = FLOAT_TENSORS | QUANT_TENSORS | {OperandType.TENSOR_INT32}


def _broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        return None


def binary_types(types: frozenset[OperandType]):
    def validate(ins: Sequence[Operand], outs: Sequence[Operand]) -> bool:
        if len(ins) != 3 or len(outs) != 1:
            return False
        a, b, act = ins
        if a.type not in types or b.type != a.type or outs[0].type != a.type:
            return False
        if act.type != OperandType.INT32:
            return False
        if a.dimensions and b.dimensions and 0 not in a.dimensions + b.dimensions:
            if _broadcast_shape(a.dimensions, b.dimensions) is None:
                return False
        return True

    return validate


def binary(ufunc: np.ufunc):
    """A kernel for an element-wise binary op with a fused activation."""

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        a, b, act_value = values
        activation = scalar(act_value)
        if activation not in FusedActivation.__members__.values():
            raise KernelError(f"unknown fused activation {activation}")
        shape = _broadcast_shape(a.shape, b.shape)
        if shape is None:
            raise KernelError(f"shapes {a.shape} and {b.shape} do not broadcast")
        if out_op.type == OperandType.TENSOR_INT32 and activation != FusedActivation.NONE:
            raise KernelError("TENSOR_INT32 arithmetic takes no fused activation")
        if is_quantized_type(out_op.type):
            real = ufunc(to_real(a, ins[0]), to_real(b, ins[1]))
            return from_real(activate(real, activation), out_op)
        with np.errstate(all="ignore"):  # overflow and division by zero follow IEEE / wrap around
            if out is not None and out.shape == shape and out.dtype == np.dtype(numpy_dtype(out_op.type)):
                ufunc(a, b, out=out)  # straight into the output region: no extra pass over the data
                return activate(out, activation, in_place=True)
            return activate(ufunc(a, b), activation).astype(numpy_dtype(out_op.type), copy=False)

    return run


def validate_relu(ins: Sequence[Operand], outs: Sequence[Operand]) -> bool:
    return len(ins) == 1 and len(outs) == 1 and ins[0].type in FLOAT_TENSORS | QUANT_TENSORS and outs[0].type == ins[0].type


def run_relu(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    return from_real(activate(to_real(values[0], ins[0]), FusedActivation.RELU), out_op)


ARITHMETIC_TYPES = _ARITHMETIC_TYPES
