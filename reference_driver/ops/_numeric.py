"""Numeric helpers shared by the kernels: quantization, activations, refusals, kernel errors.

Quantized operands compute in float64 on their real values and are requantized with
round-half-away-from-zero (the rounding of C's ``round``, which the NNAPI CPU kernels
use), then saturated to the element range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.api.hal import FusedActivation, Operand, OperandType, is_quantized_type, numpy_dtype

FLOAT_TENSORS = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16})
QUANT_TENSORS = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})
PER_CHANNEL = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
_RANGE = {
    OperandType.TENSOR_QUANT8_ASYMM: (0, 255),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    OperandType.TENSOR_QUANT8_SYMM: (-128, 127),
    OperandType.TENSOR_QUANT16_ASYMM: (0, 65535),
    OperandType.TENSOR_QUANT16_SYMM: (-32768, 32767),
}

#: NNAPI (NeuralNetworks.h): the tensors of every operation the reference implements have rank up to 4.
MAX_RANK = 4


class KernelError(ValueError):
    """An operation cannot run on these values (shapes or values known only at run time)."""


@dataclass(frozen=True)
class Refusal:
    """Why an operation's operands are not accepted, as data: which operand and what feature.

    ``position`` is the operation input (or output, with ``output=True``) it concerns, or None
    for the operation as a whole (its operand count); the device adds the operand's index.
    """

    feature: str
    position: int | None = None
    output: bool = False


def first(refusals: Iterable[Refusal | None]) -> Refusal | None:
    """The first refusal of several checks, or None when all pass."""
    return next((r for r in refusals if r is not None), None)


def type_in(operands: Sequence[Operand], position: int, allowed: Iterable[OperandType], what: str) -> Refusal | None:
    operand = operands[position]
    allowed = frozenset(allowed)
    if operand.type in allowed:
        return None
    names = ", ".join(sorted(t.name for t in allowed))
    return Refusal(f"{what} of type {operand.type.name} (NNAPI allows {names})", position)


def rank_at_most(operands: Sequence[Operand], limit: int = MAX_RANK, *, output: bool = False) -> Refusal | None:
    """NNAPI's rank limit on tensors whose rank is known (an unknown rank is checked at run time)."""
    for position, operand in enumerate(operands):
        if len(operand.dimensions) > limit:
            return Refusal(f"rank {len(operand.dimensions)} (NNAPI allows up to {limit})", position, output)
    return None


def quantization_kept(source: Operand, output: Operand) -> Refusal | None:
    """NeuralNetworks.h (HAL 1.3): an output (RESHAPE's, the RELUs') with its input's scale and zeroPoint."""
    if (output.scale, output.zero_point) == (source.scale, source.zero_point):
        return None
    return Refusal("scale and zeroPoint differ from the input's (NNAPI: the same)", 0, True)


def check_rank(arrays: Sequence[np.ndarray], operation: str, limit: int = MAX_RANK) -> None:
    for array in arrays:
        if np.ndim(array) > limit:
            raise KernelError(f"{operation}: rank {np.ndim(array)} above NNAPI's limit of {limit}")


def to_real(value: np.ndarray, operand: Operand) -> np.ndarray:
    """The real values of a tensor: dequantized for quantized types, as stored otherwise."""
    if operand.type == PER_CHANNEL and operand.channel_quant is not None:
        shape = [1] * np.ndim(value)
        shape[operand.channel_quant.channel_dim] = -1
        return value.astype(np.float64) * np.asarray(operand.channel_quant.scales, np.float64).reshape(shape)
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


def activation_code(value: np.ndarray) -> int:
    """A fused-activation input's value, checked: NONE, RELU, RELU1 or RELU6."""
    code = scalar(value)
    if code not in FusedActivation.__members__.values():
        raise KernelError(f"unknown fused activation {code}")
    return code


def scalar(value: np.ndarray) -> int:
    return int(np.asarray(value).reshape(()))
