"""MEAN, REDUCE_SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ALL, REDUCE_ANY, ARGMAX and ARGMIN,
as NeuralNetworks.h (HAL 1.3) defines them.

A reduction's axes are a 1-D TENSOR_INT32, each in [-rank, rank), repeats allowed (an axis
reduced once); keep_dims (MEAN: an INT32, kept when positive; the REDUCE_ operations: a BOOL)
keeps the reduced axes as 1s.  When every axis is reduced away the output has shape [1].
ARGMAX and ARGMIN take one axis (INT32) and give the TENSOR_INT32 index of the first largest
(smallest) element along it, the axis removed (shape [1] for a 1-D input).

Floats compute in float64 and round once to the output type.  A quantized MEAN averages real
values and requantizes them to the output's scale and zeroPoint (NNAPI lets them differ from the
input's); a quantized REDUCE_MAX or REDUCE_MIN picks a stored value (the output's quantization is
the input's), and a quantized ARGMAX or ARGMIN compares stored values, in the order of the real
ones.  Tensors have rank up to 4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType

from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, check_rank, first, from_real,
                       quantization_kept, rank_at_most, scalar, to_real, type_in)
from .pointwise import same_types

I32, BOOL8 = OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
INT32, BOOL = OperandType.INT32, OperandType.BOOL
#: NeuralNetworks.h's input types of each reduction.
REDUCTION_TYPES: dict[OperationType, frozenset[OperandType]] = {
    OperationType.MEAN: FLOAT_TENSORS | QUANT_TENSORS,
    OperationType.REDUCE_SUM: FLOAT_TENSORS,
    OperationType.REDUCE_PROD: FLOAT_TENSORS,
    OperationType.REDUCE_MAX: FLOAT_TENSORS | QUANT_TENSORS,
    OperationType.REDUCE_MIN: FLOAT_TENSORS | QUANT_TENSORS,
    OperationType.REDUCE_ALL: frozenset({BOOL8}),
    OperationType.REDUCE_ANY: frozenset({BOOL8}),
}
ARG_TYPES = FLOAT_TENSORS | QUANT_TENSORS | {I32}
_FUNCTIONS: dict[OperationType, Callable[..., np.ndarray]] = {
    OperationType.MEAN: np.mean, OperationType.REDUCE_SUM: np.sum, OperationType.REDUCE_PROD: np.prod,
    OperationType.REDUCE_MAX: np.max, OperationType.REDUCE_MIN: np.min,
    OperationType.REDUCE_ALL: np.all, OperationType.REDUCE_ANY: np.any,
}
#: The reductions that pick one of their input's stored values (a quantized one keeps its quantization).
_SELECTING = (OperationType.REDUCE_MAX, OperationType.REDUCE_MIN)
_LOGICAL = (OperationType.REDUCE_ALL, OperationType.REDUCE_ANY)


def reduced_axes(axes: np.ndarray, rank: int, what: str) -> tuple[int, ...]:
    """The axes a reduction's axes tensor names, counted from 0, each once."""
    named = [int(a) for a in np.asarray(axes).reshape(-1)]
    wrong = [a for a in named if not -rank <= a < rank]
    if wrong:
        raise KernelError(f"{what}: axes {wrong} out of range for rank {rank}")
    return tuple(sorted({a % rank for a in named}))


def reduced_shape(shape: Sequence[int], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    """NNAPI's output shape of a reduction: [1] when every axis goes."""
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    return kept or (1,)


def validate_reduction(op: OperationType):
    keep_type = INT32 if op == OperationType.MEAN else BOOL

    def validate(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
        if len(ins) != 3 or len(outs) != 1:
            return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input, axes and keep_dims; 1 output)")
        return first((
            type_in(ins, 0, REDUCTION_TYPES[op], "input"),
            same_types(ins[:1], outs),
            type_in(ins, 1, {I32}, "axes"),
            Refusal(f"axes of rank {len(ins[1].dimensions)} (NNAPI: 1)", 1) if len(ins[1].dimensions) > 1 else None,
            type_in(ins, 2, {keep_type}, "keep_dims"),
            rank_at_most(ins[:1]), rank_at_most(outs, output=True),
            quantization_kept(ins[0], outs[0]) if op in _SELECTING and ins[0].type in QUANT_TENSORS else None,
        ))
    return validate


def reduction(op: OperationType):
    function = _FUNCTIONS[op]

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        check_rank(values[:1], op.name)
        x = values[0]
        axes = reduced_axes(values[1], x.ndim, op.name)
        keep = scalar(values[2]) > 0 if op == OperationType.MEAN else bool(np.asarray(values[2]).reshape(()))
        shape = reduced_shape(x.shape, axes, keep)
        if op in _SELECTING and x.size == 0:
            raise KernelError(f"{op.name}: an empty input has no element to pick")
        if op in _SELECTING or op in _LOGICAL:  # a stored value picked, or a truth value: exact
            return np.asarray(function(x, axis=axes)).astype(x.dtype).reshape(shape)
        with np.errstate(invalid="ignore", over="ignore"):
            result = function(np.asarray(to_real(x, ins[0]), np.float64), axis=axes)
        return from_real(np.asarray(result).reshape(shape), out_op)
    return run


def validate_arg(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 2 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input and axis; 1 output)")
    return first((
        type_in(ins, 0, ARG_TYPES, "input"),
        type_in(ins, 1, {INT32}, "axis"),
        Refusal(f"type {outs[0].type.name} (NNAPI: TENSOR_INT32)", 0, True) if outs[0].type != I32 else None,
        rank_at_most(ins[:1]),
    ))


def arg(op: OperationType):
    pick = np.argmax if op == OperationType.ARGMAX else np.argmin

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        check_rank(values[:1], op.name)
        x = values[0]
        if x.ndim == 0:
            raise KernelError(f"{op.name}: a scalar input (NNAPI: rank 1 to 4)")
        axis = scalar(values[1])
        if not -x.ndim <= axis < x.ndim:
            raise KernelError(f"{op.name}: axis {axis} out of range for rank {x.ndim}")
        if x.shape[axis] == 0:
            raise KernelError(f"{op.name}: axis {axis} has no element")
        # a quantized tensor's stored values are in the order of its real values (a positive scale)
        return pick(x, axis=axis).astype(np.int32).reshape(reduced_shape(x.shape, (axis % x.ndim,), False))
    return run


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    **{op: (validate_reduction(op), reduction(op)) for op in REDUCTION_TYPES},
    OperationType.ARGMAX: (validate_arg, arg(OperationType.ARGMAX)),
    OperationType.ARGMIN: (validate_arg, arg(OperationType.ARGMIN)),
}
