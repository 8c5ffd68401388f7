"""ADD, SUB, MUL, DIV (with fused activation and broadcasting) and RELU, RELU1, RELU6."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.api.hal import FusedActivation, Operand, OperandType, is_quantized_type, numpy_dtype

from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, activate, activation_code, check_rank, first,
                       from_real, quantization_kept, rank_at_most, to_real, type_in)

ARITHMETIC_TYPES = FLOAT_TENSORS | QUANT_TENSORS | {OperandType.TENSOR_INT32}
#: DIV: floating point, and TENSOR_INT32 since HAL 1.3 (no quantized division in NNAPI).
DIV_TYPES = FLOAT_TENSORS | {OperandType.TENSOR_INT32}
I32 = OperandType.TENSOR_INT32


def _broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        return None


def _output_scale_above_product(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """NNAPI MUL (NeuralNetworks.h, HAL 1.3): a quantized output needs output_scale > input1_scale * input2_scale."""
    out, product = outs[0], ins[0].scale * ins[1].scale
    if is_quantized_type(out.type) and not out.scale > product:
        return Refusal(f"output scale {out.scale} is not above the input scales' product {product} (NNAPI)", 0, True)
    return None


def binary_types(types: frozenset[OperandType], *, output_scale_above_product: bool = False):
    """The operand rules of ADD, SUB, MUL and DIV (``output_scale_above_product``: MUL's own)."""

    def validate(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
        if len(ins) != 3 or len(outs) != 1:
            return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 3 inputs, 1 output)")
        a, b, act = ins
        known = a.dimensions and b.dimensions and 0 not in a.dimensions + b.dimensions
        return first((
            type_in(ins, 0, types, "input"),
            None if b.type == a.type else Refusal(f"type {b.type.name} differs from input 0's {a.type.name}", 1),
            None if outs[0].type == a.type else Refusal(f"type {outs[0].type.name} differs from input 0's {a.type.name}", 0, True),
            type_in(ins, 2, {OperandType.INT32}, "fused activation"),
            rank_at_most(ins[:2]), rank_at_most(outs, output=True),
            Refusal(f"shape {b.dimensions} does not broadcast with {a.dimensions}", 1)
            if known and _broadcast_shape(a.dimensions, b.dimensions) is None else None,
            _output_scale_above_product(ins, outs) if output_scale_above_product else None,
        ))

    return validate


def binary(ufunc: Callable[..., np.ndarray], name: str = "", integer: Callable[..., np.ndarray] | None = None):
    """A kernel for an element-wise binary op with a fused activation (``integer``: its TENSOR_INT32 form)."""

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        a, b, act_value = values
        activation = activation_code(act_value)
        check_rank((a, b), name)
        shape = _broadcast_shape(a.shape, b.shape)
        if shape is None:
            raise KernelError(f"shapes {a.shape} and {b.shape} do not broadcast")
        if out_op.type == I32 and activation != FusedActivation.NONE:
            raise KernelError("TENSOR_INT32 arithmetic takes no fused activation")
        if is_quantized_type(out_op.type):
            real = ufunc(to_real(a, ins[0]), to_real(b, ins[1]))
            return from_real(activate(real, activation), out_op)
        function = integer if integer is not None and out_op.type == I32 else ufunc
        with np.errstate(all="ignore"):  # overflow and division by zero follow IEEE / wrap around
            if out is not None and out.shape == shape and out.dtype == np.dtype(numpy_dtype(out_op.type)):
                function(a, b, out=out)  # straight into the output region: no extra pass over the data
                return activate(out, activation, in_place=True)
            return activate(function(a, b), activation).astype(numpy_dtype(out_op.type), copy=False)

    return run


def _floor_divide(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """NNAPI DIV on TENSOR_INT32 rounds toward negative infinity (-5 / 2 is -3)."""
    return np.floor_divide(a, b, out=out)


def validate_relu(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 1 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 1 input, 1 output)")
    return first((
        type_in(ins, 0, FLOAT_TENSORS | QUANT_TENSORS, "input"),
        None if outs[0].type == ins[0].type else Refusal(f"type {outs[0].type.name} differs from the input's", 0, True),
        rank_at_most(ins), rank_at_most(outs, output=True),
        quantization_kept(ins[0], outs[0]),
    ))


def clamp(activation: FusedActivation, name: str):
    """RELU, RELU1 and RELU6: the fused activation of the same name as an operation."""

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        check_rank(values, name)
        return from_real(activate(to_real(values[0], ins[0]), activation), out_op)

    return run


add = binary(np.add, "ADD")
sub = binary(np.subtract, "SUB")
mul = binary(np.multiply, "MUL")
div = binary(np.divide, "DIV", integer=_floor_divide)
