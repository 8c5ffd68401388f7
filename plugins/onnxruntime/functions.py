"""The element-wise operations, activations, comparisons, logical operations, SELECT, the softmaxes,
CAST, QUANTIZE and DEQUANTIZE, each translated to the ONNX operator that computes it (float32 and
the integer and boolean types ONNX Runtime's CPU kernels take; no float16).  The quantized types
are QUANTIZE's outputs and DEQUANTIZE's inputs only (`OWN_TYPES`): ``QuantizeLinear`` and
``DequantizeLinear`` are NNAPI's two conversions, where every other quantized operation would be
computed through float (emulated, not translated).  ``QuantizeLinear`` rounds a tie to even where
NNAPI rounds it away from zero: one step at a tie, no bias over ties of both signs, which CHOICE-7
accepts.

`check` says whether an operation, with its operands, has a translation (raising `Unsupported`
otherwise); `translate` appends its nodes through a `Builder`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.api.hal import Operand, OperandLifeTime, OperandType, OperationType

F32, I32, BOOL8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
INT32, FLOAT32 = OperandType.INT32, OperandType.FLOAT32
QU8, QS8, QSYMM8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM
Op = OperationType

#: Operation -> (the ONNX operator, the tensor types it takes here).
UNARY: dict[OperationType, tuple[str, frozenset[OperandType]]] = {
    Op.ABS: ("Abs", frozenset({F32, I32})), Op.NEG: ("Neg", frozenset({F32, I32})), Op.EXP: ("Exp", frozenset({F32})),
    Op.LOG: ("Log", frozenset({F32})), Op.SQRT: ("Sqrt", frozenset({F32})), Op.SIN: ("Sin", frozenset({F32})),
    Op.FLOOR: ("Floor", frozenset({F32})), Op.LOGISTIC: ("Sigmoid", frozenset({F32})), Op.TANH: ("Tanh", frozenset({F32})),
    Op.HARD_SWISH: ("HardSwish", frozenset({F32})), Op.LOGICAL_NOT: ("Not", frozenset({BOOL8})),
}
BINARY: dict[OperationType, tuple[str, frozenset[OperandType]]] = {
    Op.MAXIMUM: ("Max", frozenset({F32, I32})), Op.MINIMUM: ("Min", frozenset({F32, I32})), Op.POW: ("Pow", frozenset({F32})),
    Op.LOGICAL_AND: ("And", frozenset({BOOL8})), Op.LOGICAL_OR: ("Or", frozenset({BOOL8})),
}
#: Comparisons give TENSOR_BOOL8.  ONNX orders numbers only (its Less and Greater take no bool): booleans
#: are compared as the integers 0 and 1, false before true, as NNAPI orders them.
COMPARISONS: dict[OperationType, tuple[str, frozenset[OperandType]]] = {
    Op.EQUAL: ("Equal", frozenset({F32, I32, BOOL8})), Op.NOT_EQUAL: ("Equal", frozenset({F32, I32, BOOL8})),
    Op.LESS: ("Less", frozenset({F32, I32, BOOL8})), Op.LESS_EQUAL: ("LessOrEqual", frozenset({F32, I32, BOOL8})),
    Op.GREATER: ("Greater", frozenset({F32, I32, BOOL8})), Op.GREATER_EQUAL: ("GreaterOrEqual", frozenset({F32, I32, BOOL8})),
}
OTHERS = frozenset({Op.RSQRT, Op.ELU, Op.PRELU, Op.SOFTMAX, Op.LOG_SOFTMAX, Op.SELECT, Op.CAST, Op.QUANTIZE, Op.DEQUANTIZE})
OPERATIONS = frozenset(UNARY) | frozenset(BINARY) | frozenset(COMPARISONS) | OTHERS
#: The types these operations take beyond the driver's (`Capabilities.operation_types`): the quantized
#: side of the two conversions.
OWN_TYPES: dict[OperationType, frozenset[OperandType]] = {Op.QUANTIZE: frozenset({QU8, QS8}),
                                                          Op.DEQUANTIZE: frozenset({QU8, QS8, QSYMM8})}
#: The ONNX element type of each quantized type's stored values and zero point.
_ZERO_POINT_DTYPE = {QU8: np.uint8, QS8: np.int8, QSYMM8: np.int8}
#: The operations whose tensors NeuralNetworks.h allows of any rank (those of HAL 1.0 stop at 4).
ANY_RANK = OPERATIONS - {Op.FLOOR, Op.LOGISTIC, Op.TANH, Op.SOFTMAX}
_CAST_TYPES = frozenset({F32, I32})
#: The float32 values nearest INT32's limits from inside (one at 2**31 or above becomes INT32's maximum).
_INT32_FLOOR, _INT32_CEILING = np.float32(-2.0 ** 31), np.float32(2.0 ** 31 - 128)


class Unsupported(Exception):
    """This operation, with these operands, has no translation."""


@dataclass(frozen=True)
class Builder:
    """What a translation appends nodes with: `name` of each operand, `node` (a new node, its output
    named fresh), `emit` (a node writing a given name), `const` (an initializer), `scalar` (a
    constant scalar operand's value), `activation` (a fused activation code's Clip, writing a name),
    `emit_several` (a node writing several given names)."""

    name: Sequence[str]
    node: Callable[..., str]
    emit: Callable[..., None]
    const: Callable[[np.ndarray | np.generic, str], str]
    scalar: Callable[[int], float]
    activation: Callable[[str, int, str], None]
    emit_several: Callable[..., None]


def _constant(operand: Operand) -> bool:
    return operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _need(condition: bool, why: str) -> None:
    if not condition:
        raise Unsupported(why)


def check(kind: OperationType, ins: Sequence[Operand], outs: Sequence[Operand]) -> None:
    data, out = ins[0], outs[0]
    if kind in UNARY or kind == Op.RSQRT:
        types = UNARY[kind][1] if kind in UNARY else frozenset({F32})
        _need(len(ins) == 1 and data.type in types and out.type == data.type, f"{kind.name}: operand types")
    elif kind in BINARY:
        _need(len(ins) == 2 and data.type in BINARY[kind][1] and ins[1].type == data.type and out.type == data.type,
              f"{kind.name}: operand types")
    elif kind in COMPARISONS:
        _need(len(ins) == 2 and data.type in COMPARISONS[kind][1] and ins[1].type == data.type and out.type == BOOL8,
              f"{kind.name}: operand types")
    elif kind == Op.ELU:
        _need(len(ins) == 2 and data.type == F32 and out.type == F32 and ins[1].type == FLOAT32 and _constant(ins[1]),
              "ELU: float32 and a constant alpha")
    elif kind == Op.PRELU:
        _need(len(ins) == 2 and data.type == F32 and ins[1].type == F32 and out.type == F32, "PRELU: float32")
    elif kind in (Op.SOFTMAX, Op.LOG_SOFTMAX):
        _need(len(ins) in ((2, 3) if kind == Op.SOFTMAX else (3,)) and data.type == F32 and out.type == F32
              and ins[1].type == FLOAT32 and all(_constant(o) for o in ins[1:])
              and (len(ins) == 2 or ins[2].type == INT32), f"{kind.name}: float32, constant beta and axis")
    elif kind == Op.SELECT:
        _need(len(ins) == 3 and ins[0].type == BOOL8 and ins[1].type in (F32, I32) and ins[2].type == ins[1].type
              and out.type == ins[1].type, "SELECT: operand types")
    elif kind == Op.CAST:
        _need(len(ins) == 1 and (data.type == out.type and data.type in (F32, I32, BOOL8)
                                 or {data.type, out.type} <= _CAST_TYPES), "CAST: operand types")
    elif kind == Op.QUANTIZE:
        _need(len(ins) == 1 and data.type == F32 and out.type in OWN_TYPES[kind], "QUANTIZE: float32 to 8-bit")
    elif kind == Op.DEQUANTIZE:
        _need(len(ins) == 1 and data.type in OWN_TYPES[kind] and data.channel_quant is None and out.type == F32,
              "DEQUANTIZE: 8-bit (one scale) to float32")
    else:
        raise Unsupported(f"{kind.name} is not supported")


def translate(kind: OperationType, ins: Sequence[int], out: int, operands: Sequence[Operand], g: Builder) -> None:
    from onnx import TensorProto

    x, target = g.name[ins[0]], g.name[out]
    if kind in UNARY:
        g.emit(UNARY[kind][0], [x], target)
    elif kind == Op.RSQRT:
        g.emit("Reciprocal", [g.node("Sqrt", [x])], target)
    elif kind in BINARY:
        g.emit(BINARY[kind][0], [x, g.name[ins[1]]], target)
    elif kind == Op.NOT_EQUAL:
        g.emit("Not", [g.node("Equal", [x, g.name[ins[1]]])], target)
    elif kind in COMPARISONS and operands[ins[0]].type == BOOL8:
        g.emit(COMPARISONS[kind][0], [g.node("Cast", [x], to=TensorProto.INT32),
                                      g.node("Cast", [g.name[ins[1]]], to=TensorProto.INT32)], target)
    elif kind in COMPARISONS:
        g.emit(COMPARISONS[kind][0], [x, g.name[ins[1]]], target)
    elif kind == Op.ELU:
        g.emit("Elu", [x], target, alpha=float(g.scalar(ins[1])))
    elif kind == Op.PRELU:
        # ONNX's PRelu broadcasts alpha to the input's shape only; NNAPI broadcasts both ways
        negative = g.node("Less", [x, g.const(np.float32(0), "zero")])
        g.emit("Where", [negative, g.node("Mul", [x, g.name[ins[1]]]), x], target)
    elif kind in (Op.SOFTMAX, Op.LOG_SOFTMAX):
        beta = g.scalar(ins[1])
        axis = int(g.scalar(ins[2])) if len(ins) > 2 else -1
        scaled = x if beta == 1.0 else g.node("Mul", [x, g.const(np.float32(beta), "beta")])
        g.emit("Softmax" if kind == Op.SOFTMAX else "LogSoftmax", [scaled], target, axis=axis)
    elif kind == Op.SELECT:
        g.emit("Where", [x, g.name[ins[1]], g.name[ins[2]]], target)
    elif kind == Op.CAST:
        source, wanted = operands[ins[0]].type, operands[out].type
        if source == wanted:
            g.emit("Identity", [x], target)
        elif wanted == I32:
            # onnxruntime converts a float beyond int32's range (or NaN) as C++ does, undefined; NNAPI
            # saturates, NaN giving 0: the value is clipped and NaN replaced before the Cast
            finite = g.node("Where", [g.node("IsNaN", [x]), g.const(np.float32(0), "zero"), x])
            clipped = g.node("Clip", [finite, g.const(_INT32_FLOOR, "low"), g.const(_INT32_CEILING, "high")])
            converted = g.node("Cast", [clipped], to=TensorProto.INT32)
            beyond = g.node("GreaterOrEqual", [x, g.const(np.float32(2.0 ** 31), "limit")])
            g.emit("Where", [beyond, g.const(np.int32(2 ** 31 - 1), "int32_max"), converted], target)
        else:
            g.emit("Cast", [x], target, to=TensorProto.FLOAT)
    elif kind in (Op.QUANTIZE, Op.DEQUANTIZE):
        quantized = operands[out] if kind == Op.QUANTIZE else operands[ins[0]]
        scale = g.const(np.float32(quantized.scale), "scale")
        zero_point = g.const(_ZERO_POINT_DTYPE[quantized.type](quantized.zero_point), "zero_point")
        g.emit("QuantizeLinear" if kind == Op.QUANTIZE else "DequantizeLinear", [x, scale, zero_point], target)
    else:
        raise Unsupported(f"{kind.name} is not supported")
