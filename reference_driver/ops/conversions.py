"""QUANTIZE, DEQUANTIZE and CAST, as NeuralNetworks.h (HAL 1.3) defines them.

QUANTIZE stores float values with the output's scale and zeroPoint (round half away from zero,
saturated); DEQUANTIZE gives a quantized tensor's real values as floats, rounded once (a
per-channel tensor with each channel's scale).  CAST converts the values *as stored*, not their
real values (a TENSOR_QUANT8_ASYMM element 7 becomes 7.0): a float becomes an integer by dropping
its fraction (C's conversion), and a value outside the target's range saturates to it (NaN
becomes 0).  Between FLOAT16, FLOAT32, INT32 and QUANT8_ASYMM any cast; since HAL 1.3 a cast to
the same type of any of NNAPI's tensor types (an identity, quantized ones keeping their scale and
zeroPoint).  The output has the input's shape.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType, is_quantized_type, numpy_dtype

from ._numeric import (FLOAT_TENSORS, PER_CHANNEL, QUANT_TENSORS, Refusal, check_rank, first, from_real, quantization_kept,
                       rank_at_most, to_real, type_in)

QU8, QS8, QS8_SYMM = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM
I32, BOOL8 = OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
DEQUANTIZE_TYPES = QUANT_TENSORS | {QS8_SYMM, PER_CHANNEL}
#: CAST between any two of these (HAL 1.2).
CAST_TYPES = FLOAT_TENSORS | {I32, QU8}
#: CAST to itself only (HAL 1.3).
IDENTITY_CAST_TYPES = CAST_TYPES | {BOOL8, QS8, QS8_SYMM, OperandType.TENSOR_QUANT16_ASYMM, OperandType.TENSOR_QUANT16_SYMM}


def _single(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 1 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 1 input, 1 output)")
    return None


def _output_type(out: Operand, allowed: frozenset[OperandType]) -> Refusal | None:
    if out.type in allowed:
        return None
    return Refusal(f"type {out.type.name} (NNAPI allows {', '.join(sorted(t.name for t in allowed))})", 0, True)


def validate_quantize(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return _single(ins, outs) or first((type_in(ins, 0, FLOAT_TENSORS, "input"), _output_type(outs[0], QUANT_TENSORS)))


def run_quantize(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return from_real(np.asarray(values[0], np.float64), out_op)


def validate_dequantize(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return _single(ins, outs) or first((
        type_in(ins, 0, DEQUANTIZE_TYPES, "input"), _output_type(outs[0], FLOAT_TENSORS),
        rank_at_most(ins), rank_at_most(outs, output=True)))


def run_dequantize(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    check_rank(values, "DEQUANTIZE")
    return from_real(np.asarray(to_real(values[0], ins[0]), np.float64), out_op)


def validate_cast(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if (refused := _single(ins, outs)) is not None:
        return refused
    source, target = ins[0], outs[0]
    if source.type == target.type:
        return first((type_in(ins, 0, IDENTITY_CAST_TYPES, "input"),
                      quantization_kept(source, target) if is_quantized_type(source.type) else None))
    return first((type_in(ins, 0, CAST_TYPES, "input"), _output_type(target, CAST_TYPES)))


def run_cast(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    value = np.asarray(values[0])
    dtype = np.dtype(numpy_dtype(out_op.type))
    if ins[0].type == out_op.type:
        return value.copy()
    if dtype.kind == "f":  # past float16's range: an infinity, as IEEE's conversion gives
        with np.errstate(over="ignore"):
            return value.astype(dtype)
    limits = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        wide = np.nan_to_num(np.trunc(value.astype(np.float64)), nan=0.0)
    return np.clip(wide, limits.min, limits.max).astype(dtype)


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.QUANTIZE: (validate_quantize, run_quantize),
    OperationType.DEQUANTIZE: (validate_dequantize, run_dequantize),
    OperationType.CAST: (validate_cast, run_cast),
}
