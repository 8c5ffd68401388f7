"""Numeric helpers shared by the kernels: quantization, activations, kernel errors.

Quantized operands compute in float64 on their real values and are requantized with
round-half-away-from-zero (the rounding of C's ``round``, which the NNAPI CPU kernels
use), then saturated to the element range.
"""

from __future__ import annotations

import numpy as np

from harness.api.hal import FusedActivation, Operand, OperandType, is_quantized_type, numpy_dtype

FLOAT_TENSORS = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16})
QUANT_TENSORS = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})
_RANGE = {OperandType.TENSOR_QUANT8_ASYMM: (0, 255), OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127)}


class KernelError(ValueError):
    """An operation cannot run on these values (shapes or values known only at run time)."""


def to_real(value: np.ndarray, operand: Operand) -> np.ndarray:
    """The real values of a tensor: dequantized for quantized types, as stored otherwise."""
    if is_quantized_type(operand.type):
        return (value.astype(np.float64) - operand.zero_point) * operand.scale
    return value


def round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def from_real(x: np.ndarray, operand: Operand) -> np.ndarray:
    """Store real values as ``operand``'s type (requantizing with saturation when quantized)."""
    if is_quantized_type(operand.type):
        low, high = _RANGE[operand.type]
        q = round_half_away(np.asarray(x, dtype=np.float64) / operand.scale) + operand.zero_point
        return np.clip(q, low, high).astype(numpy_dtype(operand.type))
    return np.asarray(x).astype(numpy_dtype(operand.type), copy=False)


def activate(x: np.ndarray, activation: int, *, in_place: bool = False) -> np.ndarray:
    """Apply a fused activation (NONE, RELU, RELU1, RELU6) to real values."""
    out = x if in_place else None
    match FusedActivation(activation):
        case FusedActivation.NONE:
            return x
        case FusedActivation.RELU:
            return np.maximum(x, 0, out=out)
        case FusedActivation.RELU1:
            return np.clip(x, -1, 1, out=out)
        case FusedActivation.RELU6:
            return np.clip(x, 0, 6, out=out)
    raise KernelError(f"unknown fused activation {activation}")  # pragma: no cover - enum guards


def scalar(value: np.ndarray) -> int:
    return int(np.asarray(value).reshape(()))
