"""Small builders for models and requests, used by tests, strategies and reproducers.

They only assemble the plain data of `harness.api.hal`; drivers never see a builder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.api.hal import (
    DataLocation,
    Device,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
    is_scalar_type,
    numpy_dtype,
    operand_byte_size,
)
from harness.api.memory import Memory, create_ashmem

__all__ = ["ModelBuilder", "pack_request", "run_outputs"]

_ALIGN = 8


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


class ModelBuilder:
    """Assemble a model operand by operand.  Every add method returns the operand index."""

    def __init__(self) -> None:
        self.operands: list[Operand] = []
        self.operations: list[Operation] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.values = bytearray()
        self.pool_data = bytearray()

    def _add(self, operand: Operand) -> int:
        self.operands.append(operand)
        return len(self.operands) - 1

    def input(self, type: OperandType, dims: Sequence[int] = (), scale: float = 0.0, zero_point: int = 0,
              *, channel_quant: SymmPerChannelQuantParams | None = None) -> int:
        index = self._add(Operand(type, tuple(dims), scale, zero_point, OperandLifeTime.SUBGRAPH_INPUT,
                                  channel_quant=channel_quant))
        self.inputs.append(index)
        return index

    def constant(self, type: OperandType, value: object, scale: float = 0.0, zero_point: int = 0,
                 *, by_reference: bool = False, channel_quant: SymmPerChannelQuantParams | None = None) -> int:
        """A constant: CONSTANT_COPY into operandValues, or CONSTANT_REFERENCE into pool 0."""
        array = np.asarray(value, dtype=numpy_dtype(type))
        dims = () if is_scalar_type(type) else tuple(array.shape)
        raw = array.tobytes()
        store = self.pool_data if by_reference else self.values
        offset = _aligned(len(store))
        store.extend(b"\0" * (offset - len(store)))
        store.extend(raw)
        lifetime = OperandLifeTime.CONSTANT_REFERENCE if by_reference else OperandLifeTime.CONSTANT_COPY
        return self._add(Operand(type, dims, scale, zero_point, lifetime, DataLocation(0, offset, len(raw)), channel_quant))

    def scalar(self, value: int) -> int:
        return self.constant(OperandType.INT32, value)

    def reference(self, index: int) -> int:
        """A SUBGRAPH operand naming the model's referenced subgraph ``index`` (an IF's branch, a
        WHILE's condition or body): NNAPI gives its index as the operand's location offset."""
        return self._add(Operand(OperandType.SUBGRAPH, (), lifetime=OperandLifeTime.SUBGRAPH,
                                 location=DataLocation(0, index, 0)))

    def omitted(self, type: OperandType, dims: Sequence[int] = (), scale: float = 0.0) -> int:
        """An optional operand given no value (lifetime NO_VALUE), such as LSH_PROJECTION's weights; a
        quantized one still has the positive scale its type asks of every operand."""
        return self._add(Operand(type, tuple(dims), scale, lifetime=OperandLifeTime.NO_VALUE))

    def operation(self, op: OperationType, inputs: Sequence[int], type: OperandType, dims: Sequence[int] = (),
                  scale: float = 0.0, zero_point: int = 0, *, output: bool = True) -> int:
        """Add an operation and its output operand (a model output unless ``output=False``)."""
        lifetime = OperandLifeTime.SUBGRAPH_OUTPUT if output else OperandLifeTime.TEMPORARY_VARIABLE
        result = self._add(Operand(type, tuple(dims), scale, zero_point, lifetime))
        self.operations.append(Operation(op, tuple(inputs), (result,)))
        if output:
            self.outputs.append(result)
        return result

    def operation_outputs(self, op: OperationType, inputs: Sequence[int],
                          outputs: Sequence[tuple[OperandType, Sequence[int], float, int]], *, output: bool = True) -> list[int]:
        """Add an operation of several outputs (SPLIT, TOPK_V2), each given as (type, dims, scale, zeroPoint)."""
        lifetime = OperandLifeTime.SUBGRAPH_OUTPUT if output else OperandLifeTime.TEMPORARY_VARIABLE
        results = [self._add(Operand(type, tuple(dims), scale, zero_point, lifetime)) for type, dims, scale, zero_point in outputs]
        self.operations.append(Operation(op, tuple(inputs), tuple(results)))
        if output:
            self.outputs.extend(results)
        return results

    def subgraph(self) -> Subgraph:
        return Subgraph(tuple(self.operands), tuple(self.operations), tuple(self.inputs), tuple(self.outputs))

    def build(self, pool_factory: Callable[[int], Memory] = create_ashmem, referenced: Sequence[Subgraph] = ()) -> Model:
        """The model of this builder's subgraph as its main one, and ``referenced`` (built by
        builders sharing this one's ``values``, so that their constants are in its operandValues)."""
        pools: tuple[Memory, ...] = ()
        if self.pool_data:
            pool = pool_factory(len(self.pool_data))
            pool.write(bytes(self.pool_data))
            pools = (pool,)
        return Model(self.subgraph(), bytes(self.values), pools, referenced=tuple(referenced))


def pack_request(
    model: Model,
    inputs: Sequence[np.ndarray | None],
    output_capacity: Sequence[int] | None = None,
    memory_factory: Callable[[int], Memory] = create_ashmem,
) -> tuple[Request, Memory, Memory]:
    """A request with all inputs packed in one memory and all outputs in another.

    An input given as None is omitted (hasNoValue).  Output regions are sized from the model's
    output dimensions unless ``output_capacity`` gives their byte sizes.  Returns (request, input
    memory, output memory).
    """
    operands = model.main.operands
    in_args, offset = [], 0
    blobs = []
    for index, value in zip(model.main.input_indexes, inputs):
        if value is None:
            in_args.append(RequestArgument(has_no_value=True))
            continue
        array = np.ascontiguousarray(value, dtype=numpy_dtype(operands[index].type))
        offset = _aligned(offset)
        in_args.append(RequestArgument(False, DataLocation(0, offset, array.nbytes), tuple(array.shape)))
        blobs.append((offset, array))
        offset += array.nbytes
    in_memory = memory_factory(max(offset, 1))
    for at, array in blobs:
        in_memory.write(array.tobytes(), at)
    if output_capacity is None:
        output_capacity = [operand_byte_size(operands[i].type, operands[i].dimensions) for i in model.main.output_indexes]
    out_args, offset = [], 0
    for capacity in output_capacity:
        offset = _aligned(offset)
        out_args.append(RequestArgument(False, DataLocation(1, offset, capacity)))
        offset += capacity
    out_memory = memory_factory(max(offset, 1))
    return Request(tuple(in_args), tuple(out_args), (in_memory, out_memory)), in_memory, out_memory


def run_outputs(device: Device, model: Model, inputs: Sequence[np.ndarray | None], capacity: int = 1 << 14) -> list[np.ndarray]:
    """``model`` prepared on ``device`` and executed once on ``inputs`` (None: omitted), each output
    of unknown shape given ``capacity`` bytes: every output's value, of the shape the execution reports."""
    operands = model.main.operands
    sizes = [operand_byte_size(operands[i].type, operands[i].dimensions) if operands[i].dimensions and
             all(operands[i].dimensions) else capacity for i in model.main.output_indexes]
    request, _, out = pack_request(model, inputs, output_capacity=sizes)
    shapes = device.prepare_model(model).execute(request).output_shapes
    data = out.read()
    return [np.frombuffer(data, numpy_dtype(model.main.operands[index].type), count=int(np.prod(shape.dimensions)),
                          offset=argument.location.offset).reshape(shape.dimensions)
            for index, shape, argument in zip(model.main.output_indexes, shapes, request.outputs)]


def binary_model(
    op: OperationType = OperationType.ADD,
    type: OperandType = OperandType.TENSOR_FLOAT32,
    dims: Sequence[int] = (2, 2),
    *,
    out_dims: Sequence[int] | None = None,
    scale: float = 0.0,
    zero_point: int = 0,
    activation: int = 0,
) -> Model:
    """``out = op(in0, in1)`` with a constant fused activation: the model of most role tests."""
    b = ModelBuilder()
    a = b.input(type, dims, scale, zero_point)
    c = b.input(type, dims, scale, zero_point)
    act = b.scalar(activation)
    b.operation(op, [a, c, act], type, dims if out_dims is None else out_dims, scale, zero_point)
    return b.build()
