"""ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT, FLOOR (one tensor in) and MAXIMUM, MINIMUM, POW (two,
broadcast against each other), as NeuralNetworks.h (HAL 1.3) defines them.

Floats compute in float64 and round once to the output type; a value outside a function's domain
gives IEEE's answer (NaN, an infinity), which NNAPI leaves to the implementation.  TENSOR_INT32
ABS and NEG wrap around at 32 bits (-(-2**31) is -2**31).  A quantized MAXIMUM or MINIMUM compares
real values and requantizes the one it picks to the output's scale and zeroPoint, which NNAPI lets
differ from the inputs'.  These operations came with HAL 1.2 or later and take tensors of any rank
from 1 (FLOOR, of HAL 1.0, up to 4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType

from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, check_rank, first, from_real, rank_at_most,
                       to_real, type_in)

I32 = OperandType.TENSOR_INT32
#: NeuralNetworks.h's types per operation of this module.
UNARY_TYPES: dict[OperationType, frozenset[OperandType]] = {
    OperationType.ABS: FLOAT_TENSORS | {I32},
    OperationType.NEG: FLOAT_TENSORS | {I32},
    OperationType.EXP: FLOAT_TENSORS,
    OperationType.LOG: FLOAT_TENSORS,
    OperationType.RSQRT: FLOAT_TENSORS,
    OperationType.SIN: FLOAT_TENSORS,
    OperationType.SQRT: FLOAT_TENSORS,
    OperationType.FLOOR: FLOAT_TENSORS,
}
BINARY_TYPES: dict[OperationType, frozenset[OperandType]] = {
    OperationType.MAXIMUM: FLOAT_TENSORS | QUANT_TENSORS | {I32},
    OperationType.MINIMUM: FLOAT_TENSORS | QUANT_TENSORS | {I32},
    OperationType.POW: FLOAT_TENSORS,
}


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """numpy's (and NNAPI's) broadcast of two shapes; None when they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        return None


def same_types(like: Sequence[Operand], operands: Iterable[Operand], *, position: int = 0) -> Refusal | None:
    """Each of ``operands`` (outputs from 0, or inputs from ``position`` when it is above 0) has the type of ``like[0]``."""
    output = position == 0
    for offset, operand in enumerate(operands):
        if operand.type != like[0].type:
            return Refusal(f"type {operand.type.name} differs from input 0's {like[0].type.name}", position + offset, output)
    return None


def unary_operands(ins: Sequence[Operand], outs: Sequence[Operand], types: Iterable[OperandType]) -> Refusal | None:
    """One tensor of one of ``types`` in, one of its type out."""
    if len(ins) != 1 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 1 input, 1 output)")
    return first((type_in(ins, 0, types, "input"), same_types(ins, outs)))


def binary_operands(ins: Sequence[Operand], outs: Sequence[Operand], types: Iterable[OperandType],
                    output_types: Iterable[OperandType] | None = None) -> Refusal | None:
    """Two tensors of one type in ``types`` that broadcast together; one output, of their type or
    of one of ``output_types`` when given."""
    if len(ins) != 2 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 2 inputs, 1 output)")
    a, b = ins
    known = a.dimensions and b.dimensions and 0 not in a.dimensions + b.dimensions
    return first((
        type_in(ins, 0, types, "input"),
        same_types(ins, [b], position=1),
        same_types(ins, outs) if output_types is None else _output_type_in(outs[0], frozenset(output_types)),
        Refusal(f"shape {b.dimensions} does not broadcast with {a.dimensions}", 1)
        if known and broadcast_shape(a.dimensions, b.dimensions) is None else None,
    ))


def _output_type_in(output: Operand, allowed: frozenset[OperandType]) -> Refusal | None:
    if output.type in allowed:
        return None
    return Refusal(f"type {output.type.name} (NNAPI allows {', '.join(sorted(t.name for t in allowed))})", 0, True)


def _check_broadcast(name: str, a: np.ndarray, b: np.ndarray) -> None:
    if broadcast_shape(a.shape, b.shape) is None:
        raise KernelError(f"{name}: shapes {a.shape} and {b.shape} do not broadcast")


def _floats(value: np.ndarray) -> np.ndarray:
    return np.asarray(value, np.float64)


_UNARY_FUNCTIONS: dict[OperationType, Callable[[np.ndarray], np.ndarray]] = {
    OperationType.EXP: np.exp,
    OperationType.LOG: np.log,
    OperationType.RSQRT: lambda x: 1.0 / np.sqrt(x),
    OperationType.SIN: np.sin,
    OperationType.SQRT: np.sqrt,
    OperationType.FLOOR: np.floor,
    OperationType.ABS: np.abs,
    OperationType.NEG: np.negative,
}


def validate_unary(op: OperationType):
    types = UNARY_TYPES[op]
    if op == OperationType.FLOOR:  # HAL 1.0: rank up to 4
        return lambda ins, outs: unary_operands(ins, outs, types) or rank_at_most(ins) or rank_at_most(outs, output=True)
    return lambda ins, outs: unary_operands(ins, outs, types)


def unary(op: OperationType):
    function = _UNARY_FUNCTIONS[op]

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        if op == OperationType.FLOOR:
            check_rank(values, op.name)
        x = values[0]
        if out_op.type == I32:  # ABS and NEG: wrap-around at 32 bits
            with np.errstate(over="ignore"):
                return function(np.asarray(x, np.int32)).astype(np.int32)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return from_real(function(_floats(x)), out_op)
    return run


def validate_binary(op: OperationType):
    types = BINARY_TYPES[op]
    return lambda ins, outs: binary_operands(ins, outs, types)


def binary(op: OperationType):
    function = {OperationType.MAXIMUM: np.maximum, OperationType.MINIMUM: np.minimum, OperationType.POW: np.power}[op]

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        a, b = values
        _check_broadcast(op.name, a, b)
        if out_op.type == I32:
            return function(a, b).astype(np.int32)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return from_real(function(_floats(to_real(a, ins[0])), _floats(to_real(b, ins[1]))), out_op)
    return run


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    **{op: (validate_unary(op), unary(op)) for op in UNARY_TYPES},
    **{op: (validate_binary(op), binary(op)) for op in BINARY_TYPES},
}
