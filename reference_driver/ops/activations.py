"""LOGISTIC, TANH, ELU, HARD_SWISH, PRELU, SOFTMAX and LOG_SOFTMAX, as NeuralNetworks.h (HAL 1.3)
defines them.

Floats compute in float64 and round once to the output type.  Quantized operands compute on
their real values and are requantized (`_numeric.from_real`): round half away from zero, then
saturate.  NNAPI fixes the quantization of a quantized LOGISTIC's output (scale 1/256, zeroPoint
0, or -128 signed: [0, 1) in 256 steps) and of a TANH's (scale 1/128, zeroPoint 128, or 0 signed:
[-1, 1) in 256 steps) and of a quantized SOFTMAX's (LOGISTIC's); HARD_SWISH and PRELU take any
output quantization.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType

from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, check_rank, first, from_real, rank_at_most,
                       to_real, type_in)
from .pointwise import broadcast_shape, same_types, unary_operands

QU8, QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
F32, F16 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16

#: NeuralNetworks.h: the output quantization (scale, zeroPoint) a quantized LOGISTIC or TANH must have.
FIXED_OUTPUT_QUANTIZATION: dict[OperationType, dict[OperandType, tuple[float, int]]] = {
    OperationType.LOGISTIC: {QU8: (1 / 256, 0), QS8: (1 / 256, -128)},
    OperationType.SOFTMAX: {QU8: (1 / 256, 0), QS8: (1 / 256, -128)},
    OperationType.TANH: {QU8: (1 / 128, 128), QS8: (1 / 128, 0)},
}
#: ELU's alpha scalar, per input type.
_ALPHA = {F32: OperandType.FLOAT32, F16: OperandType.FLOAT16}


def _fixed_output_quantization(op: OperationType):
    def check(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
        out = outs[0]
        wanted = FIXED_OUTPUT_QUANTIZATION[op].get(out.type)
        if wanted is None or (out.scale, out.zero_point) == wanted:
            return None
        return Refusal(f"scale {out.scale} and zeroPoint {out.zero_point} (NNAPI {op.name}: scale {wanted[0]}, "
                       f"zeroPoint {wanted[1]})", 0, True)
    return check


def validate_saturating(op: OperationType):
    """LOGISTIC and TANH: one tensor of rank up to 4 (HAL 1.0 operations), the output of its type."""
    fixed = _fixed_output_quantization(op)

    def validate(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
        return (unary_operands(ins, outs, FLOAT_TENSORS | QUANT_TENSORS) or rank_at_most(ins) or
                rank_at_most(outs, output=True) or fixed(ins, outs))
    return validate


def _logistic(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def saturating(op: OperationType):
    function = _logistic if op == OperationType.LOGISTIC else np.tanh

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        check_rank(values, op.name)
        return from_real(function(np.asarray(to_real(values[0], ins[0]), np.float64)), out_op)
    return run


def validate_elu(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 2 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input and alpha, 1 output)")
    return first((
        type_in(ins, 0, FLOAT_TENSORS, "input"),
        same_types(ins[:1], outs),
        type_in(ins, 1, {_ALPHA.get(ins[0].type, OperandType.FLOAT32)}, "alpha"),
    ))


def run_elu(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    """max(0, x) + min(0, alpha * (exp(x) - 1))."""
    x = np.asarray(values[0], np.float64)
    alpha = float(np.asarray(values[1]).reshape(()))
    with np.errstate(over="ignore", invalid="ignore"):
        return from_real(np.where(x < 0, alpha * np.expm1(np.minimum(x, 0)), x), out_op)


def validate_hard_swish(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return unary_operands(ins, outs, FLOAT_TENSORS | QUANT_TENSORS)


def run_hard_swish(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    """x * relu6(x + 3) / 6."""
    x = np.asarray(to_real(values[0], ins[0]), np.float64)
    return from_real(x * np.clip(x + 3, 0, 6) / 6, out_op)


def validate_prelu(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 2 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input and alpha, 1 output)")
    x, alpha = ins
    known = x.dimensions and alpha.dimensions and 0 not in x.dimensions + alpha.dimensions
    return first((
        type_in(ins, 0, FLOAT_TENSORS | QUANT_TENSORS, "input"),
        same_types(ins[:1], [alpha], position=1),
        same_types(ins[:1], outs),
        Refusal(f"shape {alpha.dimensions} does not broadcast with {x.dimensions}", 1)
        if known and broadcast_shape(x.dimensions, alpha.dimensions) is None else None,
    ))


def run_prelu(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    """x where x >= 0, alpha * x elsewhere; alpha broadcast against x (the output takes the broadcast shape)."""
    x_value, alpha_value = values
    if broadcast_shape(x_value.shape, alpha_value.shape) is None:
        raise KernelError(f"PRELU: alpha's shape {alpha_value.shape} does not broadcast with the input's {x_value.shape}")
    x = np.asarray(to_real(x_value, ins[0]), np.float64)
    alpha = np.asarray(to_real(alpha_value, ins[1]), np.float64)
    return from_real(np.where(x >= 0, x, alpha * x), out_op)


def validate_softmax(op: OperationType):
    """SOFTMAX: input (float or quantized, rank up to 4), beta (the input's float scalar; FLOAT32 for a
    quantized input), optional axis.  LOG_SOFTMAX: a float input of any rank, beta and axis, both required."""
    fixed = _fixed_output_quantization(OperationType.SOFTMAX)
    types = FLOAT_TENSORS | QUANT_TENSORS if op == OperationType.SOFTMAX else FLOAT_TENSORS
    counts = (2, 3) if op == OperationType.SOFTMAX else (3,)

    def validate(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
        if len(ins) not in counts or len(outs) != 1:
            axis = "axis" if op == OperationType.LOG_SOFTMAX else "optionally axis"
            return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input, beta and {axis}; 1 output)")
        return first((
            type_in(ins, 0, types, "input"),
            same_types(ins[:1], outs),
            type_in(ins, 1, {_ALPHA.get(ins[0].type, OperandType.FLOAT32)}, "beta"),
            type_in(ins, 2, {OperandType.INT32}, "axis") if len(ins) == 3 else None,
            (rank_at_most(ins[:1]) or rank_at_most(outs, output=True)) if op == OperationType.SOFTMAX else None,
            fixed(ins, outs),
        ))
    return validate


def softmax(op: OperationType):
    """exp(beta * (x - max)) / sum over the axis of the same (LOG_SOFTMAX: its logarithm), in float64."""

    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
        if op == OperationType.SOFTMAX:
            check_rank(values[:1], op.name)
        x = np.asarray(to_real(values[0], ins[0]), np.float64)
        beta = float(np.asarray(values[1], np.float64).reshape(()))
        axis = int(np.asarray(values[2]).reshape(())) if len(values) > 2 else -1
        if not -x.ndim <= axis < x.ndim:
            raise KernelError(f"{op.name}: axis {axis} out of range for rank {x.ndim}")
        if x.size == 0:
            return from_real(x, out_op)
        scaled = beta * (x - np.max(x, axis=axis, keepdims=True))
        log_sum = np.log(np.sum(np.exp(scaled), axis=axis, keepdims=True))
        return from_real(scaled - log_sum if op == OperationType.LOG_SOFTMAX else np.exp(scaled - log_sum), out_op)
    return run


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.LOGISTIC: (validate_saturating(OperationType.LOGISTIC), saturating(OperationType.LOGISTIC)),
    OperationType.TANH: (validate_saturating(OperationType.TANH), saturating(OperationType.TANH)),
    OperationType.ELU: (validate_elu, run_elu),
    OperationType.HARD_SWISH: (validate_hard_swish, run_hard_swish),
    OperationType.PRELU: (validate_prelu, run_prelu),
    OperationType.SOFTMAX: (validate_softmax(OperationType.SOFTMAX), softmax(OperationType.SOFTMAX)),
    OperationType.LOG_SOFTMAX: (validate_softmax(OperationType.LOG_SOFTMAX), softmax(OperationType.LOG_SOFTMAX)),
}
