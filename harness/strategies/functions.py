"""Models of the activations, element-wise functions, comparisons, logical operations, SELECT,
the conversions (QUANTIZE, DEQUANTIZE, CAST) and SOFTMAX and LOG_SOFTMAX.

One family per kind of signature (`FAMILIES`); each model is one operation on inputs and
constants, of a type NNAPI gives the operation and the driver declares, with the companion types
it needs declared too (TENSOR_BOOL8 for a comparison's output, ELU's alpha, SOFTMAX's beta).  Values stay
where the functions are defined and finite (LOG, SQRT and RSQRT on positive inputs, POW on a
positive base and an exponent in [-2, 2)), so that what is judged is the arithmetic, not IEEE's
special values.  Quantized comparisons' inputs have scales whose ratio is a power of two: their
real values then compare the same in float32 and in float64, and only then is a comparison's
answer a driver's arithmetic cannot move.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from harness.api.hal import Capabilities, OperandType, OperationType

from .models import ModelCase, _broadcast_pair, _Case, _Choices, _narrowed_to, _operation_and_type_of, _start
from .values import FLOAT_TYPES, QUANT_TYPES, arrays, usable_types

Op = OperationType
I32, BOOL8 = OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
F32, F16 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16

_FLOAT_QUANT = FLOAT_TYPES + QUANT_TYPES
_COMPARED = FLOAT_TYPES + QUANT_TYPES + (I32, BOOL8)
#: CAST converts between any two of these (HAL 1.2)...
_CONVERTIBLE = FLOAT_TYPES + (I32, OperandType.TENSOR_QUANT8_ASYMM)
#: ...and casts each of these to itself only (HAL 1.3): the identity, quantization kept.
_CAST_TO_ITSELF = (BOOL8, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM,
                   OperandType.TENSOR_QUANT16_ASYMM, OperandType.TENSOR_QUANT16_SYMM)
#: NeuralNetworks.h's data types of each operation (HAL 1.3).
OPERATION_TYPES: dict[OperationType, tuple[OperandType, ...]] = {
    Op.LOGISTIC: _FLOAT_QUANT, Op.TANH: _FLOAT_QUANT, Op.HARD_SWISH: _FLOAT_QUANT, Op.ELU: FLOAT_TYPES,
    Op.PRELU: _FLOAT_QUANT,
    Op.ABS: FLOAT_TYPES + (I32,), Op.NEG: FLOAT_TYPES + (I32,), Op.FLOOR: FLOAT_TYPES, Op.EXP: FLOAT_TYPES,
    Op.LOG: FLOAT_TYPES, Op.SIN: FLOAT_TYPES, Op.SQRT: FLOAT_TYPES, Op.RSQRT: FLOAT_TYPES,
    Op.MAXIMUM: _FLOAT_QUANT + (I32,), Op.MINIMUM: _FLOAT_QUANT + (I32,), Op.POW: FLOAT_TYPES,
    **{op: _COMPARED for op in (Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LESS, Op.LESS_EQUAL)},
    Op.LOGICAL_AND: (BOOL8,), Op.LOGICAL_OR: (BOOL8,), Op.LOGICAL_NOT: (BOOL8,),
    Op.SELECT: _FLOAT_QUANT + (I32,),
    Op.SOFTMAX: _FLOAT_QUANT, Op.LOG_SOFTMAX: FLOAT_TYPES,
    Op.QUANTIZE: FLOAT_TYPES, Op.DEQUANTIZE: QUANT_TYPES + (OperandType.TENSOR_QUANT8_SYMM,),
    Op.CAST: _CONVERTIBLE + _CAST_TO_ITSELF,
}
#: The output types of the operations whose output type is not their input's.
_OUTPUT_TYPES = {Op.QUANTIZE: QUANT_TYPES, Op.DEQUANTIZE: FLOAT_TYPES, Op.CAST: _CONVERTIBLE}
FAMILIES: dict[str, tuple[OperationType, ...]] = {
    "activation": (Op.LOGISTIC, Op.TANH, Op.HARD_SWISH, Op.ELU),
    "prelu": (Op.PRELU,),
    "unary_function": (Op.ABS, Op.NEG, Op.FLOOR, Op.EXP, Op.LOG, Op.SIN, Op.SQRT, Op.RSQRT),
    "binary_function": (Op.MAXIMUM, Op.MINIMUM, Op.POW),
    "comparison": (Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LESS, Op.LESS_EQUAL),
    "logical": (Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_NOT),
    "select": (Op.SELECT,),
    "conversion": (Op.QUANTIZE, Op.DEQUANTIZE, Op.CAST),
    "softmax": (Op.SOFTMAX, Op.LOG_SOFTMAX),
}
#: NeuralNetworks.h: the output quantization of a quantized LOGISTIC and TANH.
_QU8, _QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
_FIXED_OUTPUT = {Op.SOFTMAX: {_QU8: (1 / 256, 0), _QS8: (1 / 256, -128)},
                 Op.LOGISTIC: {_QU8: (1 / 256, 0), _QS8: (1 / 256, -128)},
                 Op.TANH: {_QU8: (1 / 128, 128), _QS8: (1 / 128, 0)}}
_ALPHA = {F32: OperandType.FLOAT32, F16: OperandType.FLOAT16}
#: Quantized comparisons: both scales from one group, a power of two apart (see the module's docstring).
_SCALE_GROUPS = ((0.05, 0.1), (0.25, 0.5, 1.0))


def _companions(op: OperationType, type: OperandType) -> frozenset[OperandType]:
    if op in FAMILIES["comparison"] or op == Op.SELECT:
        return frozenset({BOOL8})
    if op in (Op.ELU, Op.SOFTMAX, Op.LOG_SOFTMAX):  # alpha or beta: the input's float scalar (FLOAT32 if quantized)
        return frozenset({_ALPHA.get(type, OperandType.FLOAT32), OperandType.INT32})
    return frozenset()


@functools.lru_cache(maxsize=1024)
def operation_types(caps: Capabilities, op: OperationType) -> tuple[OperandType, ...]:
    """The data types a model of ``op`` can have for this driver: NNAPI's, declared, with companions declared."""
    declared = caps.types_of(op)
    return tuple(t for t in usable_types(OPERATION_TYPES[op], declared)
                 if _companions(op, t) <= declared and (op not in _OUTPUT_TYPES or output_types(caps, op)))


def output_types(caps: Capabilities, op: OperationType) -> tuple[OperandType, ...]:
    """The declared output types of a conversion (`_OUTPUT_TYPES`)."""
    return usable_types(_OUTPUT_TYPES[op], caps.types_of(op))


def operations(caps: Capabilities, family: str) -> tuple[OperationType, ...]:
    """The operations of ``family`` a model can be built of for this driver (declared, on a type it declares)."""
    return tuple(op for op in FAMILIES[family] if op in caps.operations and operation_types(caps, op))


def _operation_and_type(c: _Choices, caps: Capabilities, family: str) -> tuple[OperationType, OperandType]:
    return _operation_and_type_of(c, operations(caps, family), functools.partial(operation_types, caps))


def _positive(value: np.ndarray) -> np.ndarray:
    """Away from zero and positive: |x|, and 1/4 where it is below 1/4."""
    return np.where(np.abs(value) < 0.25, 0.25, np.abs(value)).astype(value.dtype)


@st.composite
def activation_models(draw, caps: Capabilities) -> ModelCase:
    """LOGISTIC, TANH (a quantized output with NNAPI's fixed quantization), HARD_SWISH (any) and ELU
    (its alpha a scalar of the input's float type)."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "activation")
    shape = c.shape("shape")
    case = _Case(c)
    x = case.operand(type, draw(arrays(type, shape), label="x"), c.quantization(type, "x"), label="x")
    inputs = [x]
    if op == Op.ELU:
        inputs.append(case.b.constant(_ALPHA[type], c.choice((0.5, 1.0, 1.5, 2.0), "alpha")))
    out_quant = _FIXED_OUTPUT[op].get(type, (0.0, 0)) if op in _FIXED_OUTPUT else c.quantization(type, "output")
    case.output(op, inputs, type, shape, out_quant)
    return case.done([shape], f"{op.name} {type.name}")


@st.composite
def prelu_models(draw, caps: Capabilities) -> ModelCase:
    """PRELU with alpha broadcast against the input (the output takes the broadcast shape)."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "prelu")
    (x_shape, alpha_shape), result = _broadcast_pair(c, None)
    case = _Case(c)
    x = case.operand(type, draw(arrays(type, x_shape), label="x"), c.quantization(type, "x"), label="x")
    alpha = case.operand(type, draw(arrays(type, alpha_shape), label="alpha"), c.quantization(type, "alpha"),
                         c.choice(("input", "copy", "reference"), "alpha given as"), "alpha")
    case.output(op, [x, alpha], type, result, c.quantization(type, "output"))
    return case.done([result], f"PRELU {type.name}")


@st.composite
def unary_function_models(draw, caps: Capabilities) -> ModelCase:
    """ABS, NEG, FLOOR, EXP, LOG, SIN, SQRT, RSQRT on one tensor (LOG, SQRT, RSQRT on positive values)."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "unary_function")
    shape = c.shape("shape")
    value = draw(arrays(type, shape), label="x")
    if op in (Op.LOG, Op.SQRT, Op.RSQRT):
        value = _positive(value)
    case = _Case(c)
    x = case.operand(type, value, label="x")
    case.output(op, [x], type, shape)
    return case.done([shape], f"{op.name} {type.name}")


@st.composite
def binary_function_models(draw, caps: Capabilities) -> ModelCase:
    """MAXIMUM and MINIMUM (quantized: each input and the output quantized their own way) and POW,
    broadcasting."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "binary_function")
    (shape_a, shape_b), result = _broadcast_pair(c, None)
    a_value, b_value = draw(arrays(type, shape_a), label="a"), draw(arrays(type, shape_b), label="b")
    if op == Op.POW:  # a positive base, an exponent in [-2, 2): finite results of moderate size
        a_value, b_value = _positive(a_value), (b_value / 4).astype(b_value.dtype)
    case = _Case(c)
    how_a, how_b = c.choice((("input", "input"), ("input", "copy"), ("reference", "input")), "operands")
    a = case.operand(type, a_value, c.quantization(type, "a"), how_a, "a")
    b = case.operand(type, b_value, c.quantization(type, "b"), how_b, "b")
    case.output(op, [a, b], type, result, c.quantization(type, "output"))
    return case.done([result], f"{op.name} {type.name}")


def _ties(value: np.ndarray, type: OperandType) -> np.ndarray:
    """Floats rounded to halves: equal elements on both sides happen, as comparisons need."""
    return np.round(value * 2).astype(value.dtype) / 2 if type in FLOAT_TYPES else value


@st.composite
def comparison_models(draw, caps: Capabilities) -> ModelCase:
    """The six comparisons, broadcasting, with ties; TENSOR_BOOL8 out."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "comparison")
    (shape_a, shape_b), result = _broadcast_pair(c, None)
    case = _Case(c)
    if type in QUANT_TYPES:
        group = c.choice(_SCALE_GROUPS, "scale group")
        quants = [(c.choice(group, f"{name} scale"), c.quantization(type, name)[1]) for name in "ab"]
    else:
        quants = [(0.0, 0), (0.0, 0)]
    operands = []
    for name, shape, quant in zip("ab", (shape_a, shape_b), quants):
        value = (draw(arrays(F32, shape), label=name) > 0).astype(np.uint8) if type == BOOL8 else \
            _ties(draw(arrays(type, shape), label=name), type)
        operands.append(case.operand(type, value, quant, c.choice(("input", "copy"), f"{name} given as") if name == "b"
                                     else "input", name))
    case.output(op, operands, BOOL8, result)
    return case.done([result], f"{op.name} {type.name}")


@st.composite
def logical_models(draw, caps: Capabilities) -> ModelCase:
    """LOGICAL_AND and LOGICAL_OR, broadcasting, and LOGICAL_NOT."""
    c = _start(draw)
    op, _ = _operation_and_type(c, caps, "logical")
    (shape_a, shape_b), result = _broadcast_pair(c, None)
    if op == Op.LOGICAL_NOT:
        shape_a = result
    case = _Case(c)
    shapes = (shape_a,) if op == Op.LOGICAL_NOT else (shape_a, shape_b)
    operands = [case.operand(BOOL8, (draw(arrays(F32, shape), label=name) > 0).astype(np.uint8), label=name)
                for name, shape in zip("ab", shapes)]
    case.output(op, operands, BOOL8, result)
    return case.done([result], f"{op.name}")


@st.composite
def select_models(draw, caps: Capabilities) -> ModelCase:
    """SELECT: a condition and two tensors of one shape; quantized, each and the output its own way."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "select")
    shape = c.shape("shape")
    case = _Case(c)
    condition = case.operand(BOOL8, (draw(arrays(F32, shape), label="condition") > 0).astype(np.uint8), label="condition")
    a = case.operand(type, draw(arrays(type, shape), label="a"), c.quantization(type, "a"), label="a")
    b = case.operand(type, draw(arrays(type, shape), label="b"), c.quantization(type, "b"),
                     c.choice(("input", "copy", "reference"), "b given as"), "b")
    case.output(op, [condition, a, b], type, shape, c.quantization(type, "output"))
    return case.done([shape], f"SELECT {type.name}")


@st.composite
def conversion_models(draw, caps: Capabilities) -> ModelCase:
    """QUANTIZE (any output quantization), DEQUANTIZE (from QUANT8_SYMM too, to either float type) and
    CAST between any two of FLOAT16, FLOAT32, INT32 and QUANT8_ASYMM, with values past QUANT8_ASYMM's
    range, where it saturates, or from BOOL8 and the other quantized types to themselves."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "conversion")
    out_type = type if op == Op.CAST and type in _CAST_TO_ITSELF else c.choice(output_types(caps, op), "output type")
    shape = c.shape("shape")
    value = draw(arrays(type, shape), label="x")
    if op == Op.CAST and type in FLOAT_TYPES:  # [-320, 320): past both ends of QUANT8_ASYMM's stored range
        value = (value.astype(np.float64) * 40).astype(value.dtype)
    case = _Case(c)
    in_quant = c.quantization(type, "x")
    if op == Op.CAST and type == out_type:  # NNAPI: an identity cast keeps its quantization
        out_quant = in_quant
    else:
        out_quant = c.quantization(out_type, "output")
    x = case.operand(type, value, in_quant, label="x")
    case.output(op, [x], out_type, shape, out_quant)
    return case.done([shape], f"{op.name} {type.name} to {out_type.name}")


@st.composite
def softmax_models(draw, caps: Capabilities) -> ModelCase:
    """SOFTMAX (float or quantized, its output quantization NNAPI's; rank up to 4; the axis optional)
    and LOG_SOFTMAX (float; the axis required), with beta and an axis counted from either end."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "softmax")
    shape = c.shape("shape")
    case = _Case(c)
    x = case.operand(type, draw(arrays(type, shape), label="x"), c.quantization(type, "x"), label="x")
    inputs = [x, case.b.constant(_ALPHA.get(type, OperandType.FLOAT32), c.choice((1.0, 0.5, 2.0, 1e-3), "beta"))]
    if op == Op.LOG_SOFTMAX or c.boolean("axis given"):
        axis = c.integer(0, len(shape) - 1, "axis")
        inputs.append(case.b.scalar(axis - len(shape) if c.boolean("axis from the end") else axis))
    case.output(op, inputs, type, shape, _FIXED_OUTPUT[op].get(type, (0.0, 0)) if op in _FIXED_OUTPUT else (0.0, 0))
    return case.done([shape], f"{op.name} {type.name}")


MAKERS: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    "activation": activation_models,
    "prelu": prelu_models,
    "unary_function": unary_function_models,
    "binary_function": binary_function_models,
    "comparison": comparison_models,
    "logical": logical_models,
    "select": select_models,
    "conversion": conversion_models,
    "softmax": softmax_models,
}


@functools.lru_cache(maxsize=256)
def single_operation_models(caps: Capabilities, op: OperationType) -> st.SearchStrategy[ModelCase]:
    """Models of ``op`` alone (of one of `FAMILIES`): the driver's declarations narrowed to it."""
    return _narrowed_to(op, FAMILIES, MAKERS, caps)
