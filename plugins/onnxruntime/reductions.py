"""The reductions MEAN, REDUCE_SUM, REDUCE_PROD, REDUCE_MAX and REDUCE_MIN, ARGMAX and ARGMIN, and
INSTANCE_NORMALIZATION, translated to ONNX's ReduceMean, ReduceSum, ReduceProd, ReduceMax, ReduceMin,
ArgMax, ArgMin and InstanceNormalization (NNAPI's scalar gamma and beta expanded to one per channel,
its epsilon a constant, the attribute).

Types: TENSOR_FLOAT32 (ARGMAX and ARGMIN on TENSOR_INT32 too); no quantized type (the driver
declares none), no REDUCE_ALL or REDUCE_ANY (ONNX reduces no booleans).  The axes and keep_dims
(ARGMAX's axis) must be constants: ONNX takes them as attributes (opset 17; ReduceSum's axes are
an input there, but a constant one all the same).  NNAPI names an axis once or more, counted from
either end, and gives shape [1] where every axis is reduced away; ONNX names each axis once and
gives a scalar, so such a result is reshaped to [1].

Not translated, though ONNX has operators of their names: L2_NORMALIZATION, since LpNormalization
divides by the norm itself where NNAPI's CPU implementation divides by at least 1e-6 (a slice of
norm below it would come out up to a million times larger); LOCAL_RESPONSE_NORMALIZATION, since
onnxruntime's LRN raises to the power beta approximately, hundreds of float32 ulps from the exact
value where CHOICE-7's bound allows a few.  Composing either from Pow, ReduceL2 or Max would emulate
NNAPI's operation, not translate it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.api.hal import Operand, OperandLifeTime, OperandType, OperationType

from .functions import Builder, Unsupported
from .layouts import at_least_one_axis

F32, I32, INT32, BOOL = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.INT32, OperandType.BOOL
Op = OperationType
REDUCTIONS: dict[OperationType, str] = {Op.MEAN: "ReduceMean", Op.REDUCE_SUM: "ReduceSum", Op.REDUCE_PROD: "ReduceProd",
                                        Op.REDUCE_MAX: "ReduceMax", Op.REDUCE_MIN: "ReduceMin"}
ARGS: dict[OperationType, str] = {Op.ARGMAX: "ArgMax", Op.ARGMIN: "ArgMin"}
OPERATIONS = frozenset(REDUCTIONS) | frozenset(ARGS) | {Op.INSTANCE_NORMALIZATION}
FLOAT32 = OperandType.FLOAT32


def _constant(operand: Operand) -> bool:
    return operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _need(condition: bool, why: str) -> None:
    if not condition:
        raise Unsupported(why)


def _given(ins: Sequence[Operand], indexes: Sequence[int], values: Mapping[int, np.ndarray], position: int,
           wanted: OperandType) -> bool:
    return ins[position].type == wanted and _constant(ins[position]) and indexes[position] in values


def _axes(named: Sequence[int], rank: int | None) -> list[int]:
    """Each named axis once, counted from 0, where the rank is known.  Where it is not, the axes as
    named (each value once): onnxruntime reduces an axis named twice, as -1 and as rank - 1, once,
    as NNAPI does (ONNX's text leaves it unsaid), so an axis counted from either end needs no rank."""
    if rank is not None:
        _need(all(-rank <= a < rank for a in named), f"axes {list(named)} for rank {rank}")
        return sorted({a % rank for a in named})
    return sorted(set(named))


def check(kind: OperationType, ins: Sequence[Operand], outs: Sequence[Operand], values: Mapping[int, np.ndarray],
          indexes: Sequence[int]) -> None:
    data, out = ins[0], outs[0]
    rank = len(data.dimensions) or None  # None: known only at execution
    if kind in REDUCTIONS:
        _need(len(ins) == 3 and data.type == F32 and out.type == F32, f"{kind.name}: float32 input, axes, keep_dims")
        _need(_given(ins, indexes, values, 1, I32) and len(ins[1].dimensions) == 1, f"{kind.name}: constant axes")
        _need(_given(ins, indexes, values, 2, INT32 if kind == Op.MEAN else BOOL), f"{kind.name}: a constant keep_dims")
        _axes([int(a) for a in values[indexes[1]].reshape(-1)], rank)
    elif kind in ARGS:
        _need(len(ins) == 2 and data.type in (F32, I32) and out.type == I32, f"{kind.name}: operand types")
        _need(_given(ins, indexes, values, 1, INT32), f"{kind.name}: a constant axis")
        _axes([int(values[indexes[1]].reshape(()))], rank)
    elif kind == Op.INSTANCE_NORMALIZATION:
        # gamma and beta may be inputs (broadcast over the channels in the graph); epsilon and the
        # layout flag become an attribute and a transpose, so they must be constants
        _need(len(ins) == 5 and data.type == F32 and out.type == F32 and rank in (None, 4)
              and all(o.type == FLOAT32 for o in ins[1:4]), "INSTANCE_NORMALIZATION: float32 operands of rank 4")
        _need(_given(ins, indexes, values, 3, FLOAT32) and _given(ins, indexes, values, 4, BOOL),
              "INSTANCE_NORMALIZATION: a constant epsilon and layout flag")
    else:
        raise Unsupported(f"{kind.name} is not supported")


def _instance_normalization(ins: Sequence[int], out: int, values: Mapping[int, np.ndarray], g: Builder) -> None:
    """InstanceNormalization of the NCHW input (an NHWC one transposed in and out), NNAPI's scalar
    gamma and beta expanded to one per channel: each (batch, channel) plane centred on its mean,
    divided by sqrt(its population variance + epsilon), scaled and shifted."""
    nchw = bool(values[ins[4]].reshape(()))
    x = g.name[ins[0]] if nchw else g.node("Transpose", [g.name[ins[0]]], perm=[0, 3, 1, 2])
    channels = g.node("Slice", [g.node("Shape", [x]), g.const(np.asarray([1], np.int64), "start"),
                                g.const(np.asarray([2], np.int64), "end")])
    gamma, beta = (g.node("Expand", [g.node("Reshape", [g.name[i], g.const(np.asarray([1], np.int64), "one")]), channels])
                   for i in ins[1:3])
    epsilon = float(values[ins[3]].reshape(()))
    if nchw:
        g.emit("InstanceNormalization", [x, gamma, beta], g.name[out], epsilon=epsilon)
    else:
        normalized = g.node("InstanceNormalization", [x, gamma, beta], epsilon=epsilon)
        g.emit("Transpose", [normalized], g.name[out], perm=[0, 2, 3, 1])


def translate(kind: OperationType, ins: Sequence[int], out: int, operands: Sequence[Operand],
              values: Mapping[int, np.ndarray], g: Builder) -> None:
    from onnx import TensorProto

    x, target = g.name[ins[0]], g.name[out]
    rank = len(operands[ins[0]].dimensions) or None
    if kind == Op.INSTANCE_NORMALIZATION:
        _instance_normalization(ins, out, values, g)
        return
    if kind in REDUCTIONS:
        axes = _axes([int(a) for a in values[ins[1]].reshape(-1)], rank)
        keep = int(values[ins[2]].reshape(())) > 0  # MEAN keeps when positive; a BOOL is 0 or 1 here
        if kind == Op.REDUCE_SUM:  # opset 13 made ReduceSum's axes an input; the others follow only at 18
            reduced = g.node("ReduceSum", [x, g.const(np.asarray(axes, np.int64), "axes")], keepdims=int(keep))
        else:
            reduced = g.node(REDUCTIONS[kind], [x], axes=axes, keepdims=int(keep))
    else:
        (axis,) = _axes([int(values[ins[1]].reshape(()))], rank)
        # select_last_index=0: the first index of the extreme value among equal ones, as NNAPI's
        index = g.node(ARGS[kind], [x], axis=axis, keepdims=0, select_last_index=0)
        reduced = g.node("Cast", [index], to=TensorProto.INT32)
        keep = False
    if keep:
        g.emit("Identity", [reduced], target)
    else:
        g.emit("Reshape", [reduced, at_least_one_axis(reduced, g)], target)
