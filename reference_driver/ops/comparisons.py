"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL; LOGICAL_AND, LOGICAL_OR,
LOGICAL_NOT; SELECT, as NeuralNetworks.h (HAL 1.3) defines them.

Comparisons take two tensors of one type that broadcast together and give TENSOR_BOOL8 (one
byte, 0 or 1).  Quantized inputs may each have their own scale and zeroPoint: their real values
are compared, in float64.  SELECT takes a TENSOR_BOOL8 condition and two tensors, all of one
shape (NNAPI does not broadcast it), and picks input 1 where the condition is true, input 2
elsewhere, requantized to the output's scale and zeroPoint when quantized.  A TENSOR_BOOL8
value other than 0 counts as true.  All take tensors of any rank from 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType

from ._numeric import FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, first, from_real, to_real, type_in
from .pointwise import binary_operands, broadcast_shape, unary_operands

BOOL8, I32 = OperandType.TENSOR_BOOL8, OperandType.TENSOR_INT32
COMPARISON_TYPES = FLOAT_TENSORS | QUANT_TENSORS | {I32, BOOL8}
SELECT_TYPES = FLOAT_TENSORS | QUANT_TENSORS | {I32}
COMPARISONS: dict[OperationType, Callable[..., np.ndarray]] = {
    OperationType.EQUAL: np.equal,
    OperationType.NOT_EQUAL: np.not_equal,
    OperationType.GREATER: np.greater,
    OperationType.GREATER_EQUAL: np.greater_equal,
    OperationType.LESS: np.less,
    OperationType.LESS_EQUAL: np.less_equal,
}
LOGICAL: dict[OperationType, Callable[..., np.ndarray]] = {
    OperationType.LOGICAL_AND: np.logical_and,
    OperationType.LOGICAL_OR: np.logical_or,
}


def _compared(value: np.ndarray, operand: Operand) -> np.ndarray:
    """What a comparison compares: real values of quantized tensors, truth of BOOL8, values otherwise."""
    if operand.type == BOOL8:
        return np.asarray(value) != 0
    if operand.type in QUANT_TENSORS:
        return np.asarray(to_real(value, operand), np.float64)
    return np.asarray(value)


def _bool8(truth: np.ndarray) -> np.ndarray:
    return np.asarray(truth, np.bool_).astype(np.uint8)


def validate_comparison(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return binary_operands(ins, outs, COMPARISON_TYPES, output_types={BOOL8})


def comparison(op: OperationType):
    function = COMPARISONS[op]

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        a, b = values
        if broadcast_shape(a.shape, b.shape) is None:
            raise KernelError(f"{op.name}: shapes {a.shape} and {b.shape} do not broadcast")
        return _bool8(function(_compared(a, ins[0]), _compared(b, ins[1])))
    return run


def validate_logical(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return binary_operands(ins, outs, {BOOL8})


def logical(op: OperationType):
    function = LOGICAL[op]

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        a, b = values
        if broadcast_shape(a.shape, b.shape) is None:
            raise KernelError(f"{op.name}: shapes {a.shape} and {b.shape} do not broadcast")
        return _bool8(function(np.asarray(a) != 0, np.asarray(b) != 0))
    return run


def validate_logical_not(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return unary_operands(ins, outs, {BOOL8})


def run_logical_not(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    return _bool8(np.asarray(values[0]) == 0)


def validate_select(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 3 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: condition and 2 tensors, 1 output)")
    shapes = [o.dimensions for o in (*ins, *outs)]
    known = [s for s in shapes if s and 0 not in s]
    return first((
        type_in(ins, 0, {BOOL8}, "condition"),
        type_in(ins, 1, SELECT_TYPES, "input"),
        None if ins[2].type == ins[1].type else Refusal(f"type {ins[2].type.name} differs from input 1's {ins[1].type.name}", 2),
        None if outs[0].type == ins[1].type else Refusal(f"type {outs[0].type.name} differs from input 1's", 0, True),
        Refusal(f"shapes {shapes} differ (NNAPI: every tensor of SELECT has one shape)", 1)
        if any(s != known[0] for s in known) else None,
    ))


def run_select(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    condition, a, b = values
    if not condition.shape == a.shape == b.shape:
        raise KernelError(f"SELECT: shapes {condition.shape}, {a.shape} and {b.shape} differ (NNAPI: one shape)")
    if out_op.type in QUANT_TENSORS:
        return from_real(np.where(condition != 0, to_real(a, ins[1]), to_real(b, ins[2])), out_op)
    return np.where(condition != 0, a, b)


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    **{op: (validate_comparison, comparison(op)) for op in COMPARISONS},
    **{op: (validate_logical, logical(op)) for op in LOGICAL},
    OperationType.LOGICAL_NOT: (validate_logical_not, run_logical_not),
    OperationType.SELECT: (validate_select, run_select),
}
