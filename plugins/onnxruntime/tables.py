"""EMBEDDING_LOOKUP, FILL and RANDOM_MULTINOMIAL, translated to ONNX's Gather, ConstantOfShape and
Multinomial.

EMBEDDING_LOOKUP gathers rows of its values (TENSOR_FLOAT32, TENSOR_INT32, and the 8-bit types as
its own, rows copied as stored); ONNX's Gather fails an index past the last row, as NNAPI does, but
reads a negative one from the end, where NNAPI fails it.  Constant lookups are checked at
preparation; lookups given as request inputs are checked at execution by the driver, before
onnxruntime runs (`non_negative_inputs`); lookups computed inside the model are reported
unsupported, since nothing would check them.

FILL's value must be a constant (ConstantOfShape takes it as an attribute); its shape may be a
constant or a request input, of TENSOR_INT32 cast to int64.

RANDOM_MULTINOMIAL draws from onnxruntime's own random stream: NNAPI fixes the samples'
distribution, not which samples two seeds give (CHOICE-8), so the seeds are not read.  Its sample
count must be a constant (an attribute).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.api.hal import Operand, OperandLifeTime, OperandType, OperationType, Subgraph

from .functions import Builder, Unsupported

F32, I32, INT32, FLOAT32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.INT32, OperandType.FLOAT32
QU8, QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
Op = OperationType
OPERATIONS = frozenset({Op.EMBEDDING_LOOKUP, Op.FILL, Op.RANDOM_MULTINOMIAL})
#: The types these operations take beyond the driver's (`Capabilities.operation_types`).
OWN_TYPES: dict[OperationType, frozenset[OperandType]] = {Op.EMBEDDING_LOOKUP: frozenset({QU8, QS8})}
_FILLED = {F32: FLOAT32, I32: INT32}  # FILL's output type -> its value's


def _constant(operand: Operand) -> bool:
    return operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _need(condition: bool, why: str) -> None:
    if not condition:
        raise Unsupported(why)


def check(kind: OperationType, ins: Sequence[Operand], outs: Sequence[Operand], values: Mapping[int, np.ndarray],
          indexes: Sequence[int]) -> None:
    if kind == Op.EMBEDDING_LOOKUP:
        lookups, table, out = ins[0], ins[1], outs[0]
        _need(len(ins) == 2 and lookups.type == I32 and len(lookups.dimensions) in (0, 1), "EMBEDDING_LOOKUP: lookups")
        _need(table.type in (F32, I32, QU8, QS8) and out.type == table.type
              and (out.scale, out.zero_point) == (table.scale, table.zero_point), "EMBEDDING_LOOKUP: operand types")
        _need(lookups.lifetime == OperandLifeTime.SUBGRAPH_INPUT or _constant(lookups),
              "EMBEDDING_LOOKUP: lookups computed in the model (nothing would check them)")
        if _constant(lookups) and indexes[0] in values:
            _need(bool((np.asarray(values[indexes[0]]) >= 0).all()), "EMBEDDING_LOOKUP: a negative lookup")
    elif kind == Op.FILL:
        shape, value, out = ins[0], ins[1], outs[0]
        _need(len(ins) == 2 and shape.type == I32 and out.type in _FILLED and value.type == _FILLED[out.type],
              "FILL: operand types")
        _need(_constant(value) and indexes[1] in values, "FILL: a constant value")
    elif kind == Op.RANDOM_MULTINOMIAL:
        _need(len(ins) == 3 and ins[0].type == F32 and len(ins[0].dimensions) in (0, 2) and ins[1].type == INT32
              and ins[2].type == I32 and outs[0].type == I32, "RANDOM_MULTINOMIAL: operand types")
        _need(_constant(ins[1]) and indexes[1] in values and int(np.asarray(values[indexes[1]]).reshape(())) > 0,
              "RANDOM_MULTINOMIAL: a constant, positive sample count")
    else:
        raise Unsupported(f"{kind.name} is not supported")


def non_negative_inputs(main: Subgraph) -> frozenset[int]:
    """The model inputs an EMBEDDING_LOOKUP reads as lookups: the driver fails an execution that
    gives one a negative value (NNAPI), which ONNX's Gather would read from the end."""
    return frozenset(operation.inputs[0] for operation in main.operations
                     if operation.type == Op.EMBEDDING_LOOKUP and operation.inputs[0] in main.input_indexes)


def translate(kind: OperationType, ins: Sequence[int], out: int, operands: Sequence[Operand],
              values: Mapping[int, np.ndarray], g: Builder) -> None:
    from onnx import TensorProto, numpy_helper

    if kind == Op.EMBEDDING_LOOKUP:
        g.emit("Gather", [g.name[ins[1]], g.name[ins[0]]], g.name[out], axis=0)
    elif kind == Op.RANDOM_MULTINOMIAL:
        samples = int(np.asarray(values[ins[1]]).reshape(()))
        g.emit("Multinomial", [g.name[ins[0]]], g.name[out], sample_size=samples, dtype=TensorProto.INT32)
    else:
        dtype = np.float32 if operands[out].type == F32 else np.int32
        filled = numpy_helper.from_array(np.asarray(values[ins[1]], dtype).reshape(1), name="fill_value")
        shape = g.node("Cast", [g.name[ins[0]]], to=TensorProto.INT64)
        g.emit("ConstantOfShape", [shape], g.name[out], value=filled)
