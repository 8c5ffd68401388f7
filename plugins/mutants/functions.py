"""Seeded bugs in the activations, element-wise functions, comparisons and SELECT: each computes
one NNAPI rule wrongly, and the generated suites' models of its family catch it (their values
differ from the reference's: OPS-1, the operation's values, whatever the test's theme)."""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.api.hal import OperandType, OperationType, is_quantized_type
from reference_driver.ops import _numeric, activations, comparisons, conversions, pointwise

from ._registry import mutant, with_kernels


@mutant("logistic-quantized-as-tanh", "OPS-1",
        "a quantized LOGISTIC stores its result with TANH's output quantization (scale 1/128, zeroPoint 128, or 0 "
        "signed) instead of its own fixed scale 1/256 and zeroPoint 0 (-128 signed)",
        operations=(OperationType.LOGISTIC,))
def logistic_quantized_as_tanh():
    reference = activations.saturating(OperationType.LOGISTIC)

    def run(values, ins, out_op, out):
        wrong = activations.FIXED_OUTPUT_QUANTIZATION[OperationType.TANH].get(out_op.type)
        if wrong is None:
            return reference(values, ins, out_op, out)
        return reference(values, ins, dataclasses.replace(out_op, scale=wrong[0], zero_point=wrong[1]), out)

    return with_kernels({OperationType.LOGISTIC: run})


@mutant("comparison-tiles-instead-of-broadcasting", "OPS-1",
        "the comparisons repeat the smaller input's elements in order to fill the larger shape (right when only leading "
        "axes broadcast) instead of broadcasting each axis",
        operations=(OperationType.EQUAL, OperationType.GREATER, OperationType.GREATER_EQUAL, OperationType.LESS, OperationType.LESS_EQUAL, OperationType.NOT_EQUAL))
def comparison_tiles_instead_of_broadcasting():
    def tiled(op):
        reference = comparisons.comparison(op)

        def run(values, ins, out_op, out):
            a, b = values
            shape = pointwise.broadcast_shape(a.shape, b.shape)
            if shape is None:
                return reference(values, ins, out_op, out)
            return reference([np.resize(a, shape), np.resize(b, shape)], ins, out_op, out)
        return run

    return with_kernels({op: tiled(op) for op in comparisons.COMPARISONS})


@mutant("select-quantized-copies-stored-values", "OPS-1",
        "a quantized SELECT copies the chosen input's stored values, as if its scale and zeroPoint were the output's",
        operations=(OperationType.SELECT,))
def select_quantized_copies_stored_values():
    def run(values, ins, out_op, out):
        condition, a, b = values
        if not is_quantized_type(out_op.type):
            return comparisons.run_select(values, ins, out_op, out)
        comparisons.run_select(values, ins, out_op, out)  # the reference's shape checks
        return np.where(condition != 0, a, b)

    return with_kernels({OperationType.SELECT: run})


@mutant("maximum-quantized-copies-stored-values", "OPS-1",
        "a quantized MAXIMUM or MINIMUM compares and copies stored values, as if every input had the output's scale and "
        "zeroPoint",
        operations=(OperationType.MAXIMUM, OperationType.MINIMUM))
def maximum_quantized_copies_stored_values():
    def stored(op):
        reference = pointwise.binary(op)
        function = np.maximum if op == OperationType.MAXIMUM else np.minimum

        def run(values, ins, out_op, out):
            result = reference(values, ins, out_op, out)
            return function(*values).astype(result.dtype) if is_quantized_type(out_op.type) else result
        return run

    return with_kernels({op: stored(op) for op in (OperationType.MAXIMUM, OperationType.MINIMUM)})


@mutant("elu-alpha-ignored", "OPS-1", "ELU computes exp(x) - 1 below zero whatever its alpha (alpha taken as 1)",
        operations=(OperationType.ELU,))
def elu_alpha_ignored():
    def run(values, ins, out_op, out):
        alpha = np.ones((), np.float32 if ins[1].type == OperandType.FLOAT32 else np.float16)
        return activations.run_elu([values[0], alpha], ins, out_op, out)

    return with_kernels({OperationType.ELU: run})


@mutant("hard-swish-unclamped", "OPS-1", "HARD_SWISH computes x * relu(x + 3) / 6, without relu6's clamp at 6",
        operations=(OperationType.HARD_SWISH,))
def hard_swish_unclamped():
    def run(values, ins, out_op, out):
        x = _numeric.to_real(values[0], ins[0]).astype(np.float64)
        return _numeric.from_real(x * np.maximum(x + 3, 0) / 6, out_op)

    return with_kernels({OperationType.HARD_SWISH: run})


@mutant("floor-truncates", "OPS-1", "FLOOR rounds toward zero (C's trunc) instead of toward minus infinity",
        operations=(OperationType.FLOOR,))
def floor_truncates():
    def run(values, ins, out_op, out):
        return _numeric.from_real(np.trunc(np.asarray(values[0], np.float64)), out_op)

    return with_kernels({OperationType.FLOOR: run})


@mutant("cast-wraps-around", "OPS-1",
        "CAST to TENSOR_QUANT8_ASYMM or TENSOR_INT32 keeps the low bits of an out-of-range value (C's conversion of an "
        "integer) instead of saturating to the target's range",
        operations=(OperationType.CAST,))
def cast_wraps_around():
    def run(values, ins, out_op, out):
        result = conversions.run_cast(values, ins, out_op, out)
        if ins[0].type == out_op.type or result.dtype.kind == "f":
            return result
        wide = np.nan_to_num(np.trunc(np.asarray(values[0], np.float64)), nan=0.0, posinf=0.0, neginf=0.0)
        return wide.astype(np.int64).astype(result.dtype)

    return with_kernels({OperationType.CAST: run})


@mutant("dequantize-ignores-zero-point", "OPS-1",
        "DEQUANTIZE multiplies the stored value by the scale without subtracting the zeroPoint, as for a symmetric type",
        operations=(OperationType.DEQUANTIZE,))
def dequantize_ignores_zero_point():
    def run(values, ins, out_op, out):
        return _numeric.from_real(np.asarray(values[0], np.float64) * ins[0].scale, out_op) if ins[0].scale else \
            conversions.run_dequantize(values, ins, out_op, out)

    return with_kernels({OperationType.DEQUANTIZE: run})


@mutant("softmax-beta-ignored", "OPS-1", "SOFTMAX and LOG_SOFTMAX take beta as 1 whatever its value",
        operations=(OperationType.LOG_SOFTMAX, OperationType.SOFTMAX))
def softmax_beta_ignored():
    def ignoring(op):
        reference = activations.softmax(op)

        def run(values, ins, out_op, out):
            return reference([values[0], np.ones((), np.asarray(values[1]).dtype), *values[2:]], ins, out_op, out)
        return run

    return with_kernels({op: ignoring(op) for op in (OperationType.SOFTMAX, OperationType.LOG_SOFTMAX)})


@mutant("softmax-axis-ignored", "OPS-1", "SOFTMAX and LOG_SOFTMAX normalize along the last axis whatever their axis input",
        operations=(OperationType.LOG_SOFTMAX, OperationType.SOFTMAX))
def softmax_axis_ignored():
    def ignoring(op):
        reference = activations.softmax(op)

        def run(values, ins, out_op, out):
            return reference([*values[:2], np.int32(-1)], ins, out_op, out)
        return run

    return with_kernels({op: ignoring(op) for op in (OperationType.SOFTMAX, OperationType.LOG_SOFTMAX)})


@mutant("cast-16-bit-as-8-bit", "OPS-1",
        "an identity CAST of a 16-bit quantized tensor keeps each element's low byte only (its copy takes every "
        "quantized type to be 8 bits wide)",
        operations=(OperationType.CAST,))
def cast_16_bit_as_8_bit():
    def run(values, ins, out_op, out):
        result = conversions.run_cast(values, ins, out_op, out)
        if out_op.type in (OperandType.TENSOR_QUANT16_ASYMM, OperandType.TENSOR_QUANT16_SYMM):
            return (result.view(np.uint16) & 0xFF).astype(np.uint16).view(result.dtype)
        return result

    return with_kernels({OperationType.CAST: run})


@mutant("prelu-quantized-alpha-keeps-zero-point", "OPS-1",
        "a quantized PRELU scales alpha's stored values by alpha's scale without taking alpha's zeroPoint away",
        operations=(OperationType.PRELU,))
def prelu_quantized_alpha_keeps_zero_point():
    reference = activations.run_prelu

    def run(values, ins, out_op, out):
        if not is_quantized_type(ins[1].type):
            return reference(values, ins, out_op, out)
        x = np.asarray(_numeric.to_real(values[0], ins[0]), np.float64)
        alpha = values[1].astype(np.float64) * ins[1].scale
        return _numeric.from_real(np.where(x >= 0, x, alpha * x), out_op)

    return with_kernels({OperationType.PRELU: run})


@mutant("logical-not-bitwise", "OPS-1",
        "LOGICAL_NOT inverts every bit of its byte (~x): False becomes 0xFF, rightly True, but True becomes 0xFE, "
        "still True",
        operations=(OperationType.LOGICAL_NOT,))
def logical_not_bitwise():
    def run(values, ins, out_op, out):
        return np.invert(np.asarray(values[0], np.uint8))

    return with_kernels({OperationType.LOGICAL_NOT: run})
