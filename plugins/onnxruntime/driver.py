"""A driver built on ONNX Runtime: the harness model translated to an ONNX graph, run on the CPU.

This is the example to copy when wrapping a real runtime.  It does everything a driver does on
its own, without the reference driver:

- declares exactly what it supports (`capabilities`; `get_supported_operations` per operation);
- validates models (operand locations, constant pools) and requests (REQ-1, REQ-2, POOL-5), and at
  execution what the model left open: ranks, and the shapes it declares for the tensors inside it;
- reads inputs from and writes outputs to the request's pools with ``pread``/``pwrite`` on the
  memory's descriptor, so a client that shrinks or closes a memory causes an error, never a fault;
- translates each NNAPI operation to ONNX nodes (`_translate`) and runs them with an
  ``InferenceSession`` on the CPU execution provider.

It supports TENSOR_FLOAT32, and TENSOR_INT32 and TENSOR_BOOL8 where an ONNX operator takes them
(`functions`); every operation ONNX expresses directly: the arithmetic here, the element-wise
functions, activations, comparisons and conversions in `functions`, the convolutions (transposed
too), pools and resizes in `windows`, the shape and layout operations in
`layouts`, the reductions and INSTANCE_NORMALIZATION in `reductions`, EMBEDDING_LOOKUP, FILL and
RANDOM_MULTINOMIAL in `tables`.  No float16 (onnxruntime's
CPU kernels lack most float16 operators), no memory domains (allocation is refused, DOM-ALLOC-3).

The 8-bit quantized types are declared as the own types (`Capabilities.operation_types`) of the
operations ONNX's standard operators compute on 8-bit values (`OWN_TYPES`): QUANTIZE and
DEQUANTIZE, the convolutions and FULLY_CONNECTED (``QLinearConv``), MAX_POOL_2D and the resizes,
the RELUs, RESHAPE and the shape and layout operations but TOPK_V2.
"""

from __future__ import annotations

import math
import os
import stat
import threading
from collections.abc import Sequence

import numpy as np

from harness.api.hal import (BufferDesc, BufferRole, Capabilities, DataLocation, DriverError, ErrorStatus,
                             ExecutionResult, Model, Operand, OperandLifeTime, OperandType, Operation, OperationType,
                             OutputShape, Request, RequestArgument, is_fully_specified,
                             is_scalar_type, numpy_dtype)
from harness.api.memory import Memory, MemoryKind

from . import functions, layouts, reductions, tables, windows
from .functions import Builder, Unsupported

F32, I32, INT32, BOOL = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.INT32, OperandType.BOOL
BOOL8, FLOAT32 = OperandType.TENSOR_BOOL8, OperandType.FLOAT32
OPSET = 17
MEMORY_KINDS = frozenset({MemoryKind.ASHMEM, MemoryKind.MMAP_FD, MemoryKind.HARDWARE_BUFFER_BLOB})
OPERATIONS = frozenset({OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV, OperationType.RELU,
                        OperationType.RELU1, OperationType.RELU6, OperationType.RESHAPE, OperationType.CONCATENATION,
                        OperationType.FULLY_CONNECTED}) | functions.OPERATIONS | windows.OPERATIONS | layouts.OPERATIONS \
    | reductions.OPERATIONS | tables.OPERATIONS
OPERAND_TYPES = frozenset({F32, I32, BOOL8, INT32, FLOAT32, BOOL})
_QUANTIZED = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM)
_TENSORS = (F32, I32, BOOL8, *_QUANTIZED)
_MAX_RANK = 4  # NNAPI's limit on the tensors of every operation this driver supports but _ANY_RANK
_ANY_RANK = functions.ANY_RANK | layouts.ANY_RANK
_ELEMENTWISE = {OperationType.ADD: "Add", OperationType.SUB: "Sub", OperationType.MUL: "Mul", OperationType.DIV: "Div"}
_CLAMP = {OperationType.RELU: (0.0, math.inf), OperationType.RELU1: (-1.0, 1.0), OperationType.RELU6: (0.0, 6.0)}
#: Fused activation code -> (min, max) of the Clip that applies it (NONE, RELU, RELU1, RELU6).
_ACTIVATION_MIN = [-math.inf, 0.0, -1.0, 0.0]
_ACTIVATION_MAX = [math.inf, math.inf, 1.0, 6.0]
_QUANTIZED = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})
#: The operations of this module that move or clamp 8-bit stored values as they are (their output
#: keeping the input's scale and zeroPoint, as NNAPI requires): a RELU is a Clip of the stored
#: values at its bounds' stored values, a RESHAPE the same move.
_OWN_TYPES = {op: _QUANTIZED for op in (*_CLAMP, OperationType.RESHAPE)}
#: Every operation's own types: the quantized forms ONNX has an operator for.
OWN_TYPES = {**functions.OWN_TYPES, **windows.OWN_TYPES, **layouts.OWN_TYPES, **tables.OWN_TYPES, **_OWN_TYPES}
#: RELU, RELU1, RELU6 -> their fused-activation code (for the bounds of a quantized one).
_CLAMP_CODE = {OperationType.RELU: 1, OperationType.RELU1: 2, OperationType.RELU6: 3}


def _fail(status: ErrorStatus, message: str) -> DriverError:
    return DriverError(status, message)


def _pread(memory: Memory, offset: int, length: int) -> bytes:
    try:
        data = os.pread(memory.fd, length, memory.offset + offset)
    except OSError as error:
        raise _fail(ErrorStatus.GENERAL_FAILURE, f"cannot read {memory.kind} memory: {error.strerror}") from None
    if len(data) != length:
        raise _fail(ErrorStatus.GENERAL_FAILURE, f"{memory.kind} memory holds {len(data)} of {length} bytes at {offset}")
    return data


def _check_usable(memory: Memory, what: str) -> None:
    """The memory's descriptor really holds its region (POOL-4): a closed, short or non-file
    descriptor is a general failure here, before any byte is read or written."""
    try:
        info = os.fstat(memory.fd)
    except OSError as error:
        raise _fail(ErrorStatus.GENERAL_FAILURE, f"{what}: cannot use {memory.kind} memory: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size < memory.offset + memory.size:
        raise _fail(ErrorStatus.GENERAL_FAILURE, f"{what}: the descriptor does not hold {memory.size} bytes at {memory.offset}")


def _byte_size(operand_type: OperandType, dims: Sequence[int]) -> int:
    return int(np.dtype(numpy_dtype(operand_type)).itemsize * math.prod(dims))


def _combine(model_dims: Sequence[int], request_dims: Sequence[int]) -> tuple[int, ...] | None:
    if not request_dims:
        return tuple(model_dims)
    if not model_dims:
        return tuple(request_dims)
    if len(model_dims) != len(request_dims) or any(a and b and a != b for a, b in zip(model_dims, request_dims)):
        return None
    return tuple(a or b for a, b in zip(model_dims, request_dims))


class OrtPreparedModel:
    def __init__(self, model: Model, session, input_names: list[str], returned: list[int], output_names: list[str]) -> None:
        self.model = model
        self.session = session
        self.input_names = input_names
        # what the graph returns: the model's outputs, then the tensors inside it (checked, not returned)
        self._returned, self.output_names = returned, output_names
        self._ranks = _rank_bounds(model.main)
        self._non_negative = tables.non_negative_inputs(model.main)
        self._lock = threading.Lock()

    def execute(self, request: Request) -> ExecutionResult:
        main = self.model.main
        if len(request.inputs) != len(main.input_indexes) or len(request.outputs) != len(main.output_indexes):
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"{len(request.inputs)} inputs and {len(request.outputs)} outputs "
                                                      f"for a model of {len(main.input_indexes)} and {len(main.output_indexes)}")
        memories = []
        for number, pool in enumerate(request.pools):
            if not isinstance(pool, Memory):
                raise _fail(ErrorStatus.INVALID_ARGUMENT, f"pool {number}: this driver has no driver-managed buffers")
            if pool.kind not in MEMORY_KINDS:
                raise _fail(ErrorStatus.INVALID_ARGUMENT, f"pool {number}: memory kind {pool.kind!r} is not supported")
            memories.append(pool)
        for number, pool in enumerate(memories):
            _check_usable(pool, f"pool {number}")
        feeds = {}
        for name, argument, index in zip(self.input_names, request.inputs, main.input_indexes):
            operand = main.operands[index]
            dims = self._check_argument(argument, operand, memories, "input")
            if not is_fully_specified(operand.type, dims):  # a 0 (unknown) or negative count, or no rank
                raise _fail(ErrorStatus.INVALID_ARGUMENT, f"input {name}: dimensions {dims} not fully specified")
            if index in self._ranks:
                _check_rank(index, len(dims), *self._ranks[index])
            raw = _pread(memories[argument.location.pool_index], argument.location.offset, argument.location.length)
            feeds[name] = _tensor(np.frombuffer(raw, numpy_dtype(operand.type)).reshape(dims), operand.type)
            if index in self._non_negative and (np.frombuffer(raw, np.int32) < 0).any():
                raise _fail(ErrorStatus.GENERAL_FAILURE, f"input {name}: a negative EMBEDDING_LOOKUP lookup")
        output_dims = [self._check_argument(a, main.operands[i], memories, "output")
                       for a, i in zip(request.outputs, main.output_indexes)]
        try:
            with self._lock:
                results = self.session.run(self.output_names, feeds)
        except Exception as error:  # the runtime's own failure: a general failure of this execution
            raise _fail(ErrorStatus.GENERAL_FAILURE, f"onnxruntime: {type(error).__name__}: {error}") from None
        for index, value in zip(self._returned, results):
            if index in self._ranks:
                _check_rank(index, np.ndim(value), *self._ranks[index])
            declared = main.operands[index].dimensions
            if index not in main.output_indexes and _combine(declared, np.shape(value)) is None:
                raise _fail(ErrorStatus.GENERAL_FAILURE, f"operand {index}: shape {np.shape(value)} at execution, "
                                                         f"where the model declares {declared}")
        shapes = []
        for argument, value, dims, index in zip(request.outputs, results, output_dims, main.output_indexes):
            value = np.ascontiguousarray(value, numpy_dtype(main.operands[index].type))
            if _combine(dims, value.shape) is None:
                raise _fail(ErrorStatus.GENERAL_FAILURE, f"an output of shape {value.shape} cannot be stored as {dims}")
            shapes.append(OutputShape(tuple(value.shape), value.nbytes <= argument.location.length))
        if not all(s.is_sufficient for s in shapes):
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "an output region is too small", tuple(shapes))
        for argument, value in zip(request.outputs, results):
            memory = memories[argument.location.pool_index]
            try:
                os.pwrite(memory.fd, np.ascontiguousarray(value).tobytes(), memory.offset + argument.location.offset)
            except OSError as error:
                raise _fail(ErrorStatus.GENERAL_FAILURE, f"cannot write the output: {error.strerror}") from None
        return ExecutionResult(True, tuple(shapes))

    @staticmethod
    def _check_argument(argument: RequestArgument, operand: Operand, memories: list[Memory], where: str) -> tuple[int, ...]:
        loc = argument.location
        if argument.has_no_value:
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"{where}: every input and output of this driver's models needs a value")
        if not 0 <= loc.pool_index < len(memories):
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"{where}: pool index {loc.pool_index} of {len(memories)}")
        if min(loc.offset, loc.length, loc.padding) < 0 or loc.offset + loc.length + loc.padding > memories[loc.pool_index].size:
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"{where}: region {loc} outside its pool")
        if is_scalar_type(operand.type) and argument.dimensions:
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"{where}: a scalar has no dimensions, the request gives {argument.dimensions}")
        dims = _combine(operand.dimensions, argument.dimensions)
        if dims is None:
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"{where}: dimensions {argument.dimensions} conflict with {operand.dimensions}")
        if is_fully_specified(operand.type, dims) and loc.length != _byte_size(operand.type, dims):
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"{where}: length {loc.length} does not hold dimensions {dims}")
        return dims


class OrtDevice:
    """ONNX Runtime on the CPU, presented through the Driver API."""

    name = "onnxruntime"

    def __init__(self) -> None:
        import onnxruntime

        self.version = onnxruntime.__version__

    def capabilities(self) -> Capabilities:
        return Capabilities(memory_kinds=frozenset(MEMORY_KINDS), memory_domains=False, operations=OPERATIONS,
                            operand_types=OPERAND_TYPES, dynamic_buffers=False,
                            operation_types=tuple(sorted(OWN_TYPES.items())))

    def get_supported_operations(self, model: Model) -> list[bool]:
        operands = model.main.operands
        try:
            values = _constants(model)
        except DriverError:  # a constant it cannot read: the operations that need one are not supported
            values = {}
        supported = []
        for operation in model.main.operations:
            try:
                _check_supported(operation, operands, values)
                supported.append(True)
            except (Unsupported, IndexError):
                supported.append(False)
        return supported

    def prepare_model(self, model: Model) -> OrtPreparedModel:
        import onnxruntime

        constants = _constants(model)
        graph, input_names, returned, output_names = _graph(model, constants)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        try:
            session = onnxruntime.InferenceSession(graph.SerializeToString(), options, providers=["CPUExecutionProvider"])
        except Exception as error:
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"onnxruntime refused the translated model: {error}") from None
        return OrtPreparedModel(model, session, input_names, returned, output_names)

    def allocate(self, desc: BufferDesc, prepared_models: list, input_roles: list[BufferRole],
                 output_roles: list[BufferRole]):
        raise _fail(ErrorStatus.GENERAL_FAILURE, "this driver has no driver-managed buffers (memory domains)")


# --------------------------------------------------------------------------- model checks


def _check_supported(operation: Operation, operands: Sequence[Operand], values: dict[int, np.ndarray]) -> None:
    ins = [operands[i] for i in operation.inputs]
    outs = [operands[i] for i in operation.outputs]
    if operation.type not in OPERATIONS or (len(outs) != 1 and operation.type not in layouts.SEVERAL_OUTPUTS):
        raise Unsupported(f"{operation.type.name} is not supported")
    own = OWN_TYPES.get(operation.type, frozenset())
    if any(o.type not in OPERAND_TYPES | own for o in (*ins, *outs)):
        raise Unsupported("an operand type other than TENSOR_FLOAT32, TENSOR_INT32, TENSOR_BOOL8, INT32, FLOAT32 or BOOL "
                          "(or an 8-bit quantized type on a conversion or a convolution)")
    if operation.type not in _ANY_RANK and any(len(o.dimensions) > _MAX_RANK for o in (*ins, *outs)):
        raise Unsupported("a tensor of rank above 4")
    kind = operation.type
    data = ins[0]
    if kind in functions.OPERATIONS:
        functions.check(kind, ins, outs)
    elif kind in windows.OPERATIONS:
        windows.check(kind, ins, outs, values, operation.inputs)
    elif kind in layouts.OPERATIONS:
        layouts.check(kind, ins, outs, values, operation.inputs)
    elif kind in reductions.OPERATIONS:
        reductions.check(kind, ins, outs, values, operation.inputs)
    elif kind in tables.OPERATIONS:
        tables.check(kind, ins, outs, values, operation.inputs)
    elif kind in _ELEMENTWISE:
        if len(ins) != 3 or ins[1].type != data.type or outs[0].type != data.type or ins[2].type != INT32:
            raise Unsupported("operand types")
        if data.type not in (F32, I32):
            raise Unsupported("operand types")
    elif kind in _CLAMP:
        if len(ins) != 1 or data.type not in (F32, *_QUANTIZED) or outs[0].type != data.type:
            raise Unsupported("operand types")
    elif kind == OperationType.RESHAPE:
        if len(ins) != 2 or ins[1].type != I32 or outs[0].type != data.type or len(ins[1].dimensions) > 1:
            raise Unsupported("operand types")
    if kind in _OWN_TYPES and data.type in _QUANTIZED and (outs[0].scale, outs[0].zero_point) != (data.scale, data.zero_point):
        raise Unsupported(f"{kind.name}: an 8-bit output of another scale or zeroPoint than its input's")
    elif kind == OperationType.CONCATENATION:
        if len(ins) < 2 or ins[-1].type != INT32 or not _constant(ins[-1]) or any(t.type != data.type for t in ins[:-1]):
            raise Unsupported("CONCATENATION needs tensors of one type and a constant axis")
    elif kind == OperationType.FULLY_CONNECTED and data.type in windows.OWN_TYPES[kind]:
        windows.check_quantized_fully_connected(ins, outs)
    elif kind == OperationType.FULLY_CONNECTED:
        if len(ins) != 4 or any(o.type != F32 for o in ins[:3]) or ins[3].type != INT32 or len(ins[1].dimensions) != 2 \
                or 0 in ins[1].dimensions or len(data.dimensions) == 1:
            raise Unsupported("FULLY_CONNECTED needs float32 operands and weights of known shape")


def _rank_bounds(main) -> dict[int, tuple[int, int | None]]:
    """Operand index -> the least and the greatest rank NNAPI allows (None: no limit), for each tensor an
    operation reads or writes whose rank the model leaves unknown: known only at execution, where
    onnxruntime takes what NNAPI does not (a rank-1 input that FULLY_CONNECTED's Reshape flattens, an
    Add of rank 5).  Rank 4 at most but for _ANY_RANK; FULLY_CONNECTED's input at least 2,
    INSTANCE_NORMALIZATION's input and output 4."""
    bounds: dict[int, tuple[int, int | None]] = {}
    for operation in main.operations:
        for position, index in enumerate((*operation.inputs, *operation.outputs)):
            operand = main.operands[index]
            if operand.type in _TENSORS and not operand.dimensions:
                least, most = bounds.get(index, (0, None))
                if operation.type == OperationType.FULLY_CONNECTED and position == 0:
                    least = max(least, 2)
                if operation.type == OperationType.INSTANCE_NORMALIZATION and position in (0, 5):
                    least = max(least, 4)  # onnxruntime normalizes a rank-3 input too
                if operation.type not in _ANY_RANK:
                    most = _MAX_RANK
                bounds[index] = (least, most)
    return bounds


def _probed(main) -> list[int]:
    """The tensors inside the model (what an operation writes that is no model output): graph outputs
    too, so that their shapes at execution are checked against what the model declares, which
    onnxruntime does not know of."""
    outputs = {index for operation in main.operations for index in operation.outputs}
    return sorted(outputs.difference(main.output_indexes))


def _check_rank(index: int, rank: int, least: int, most: int | None) -> None:
    if rank < least or (most is not None and rank > most):
        raise _fail(ErrorStatus.GENERAL_FAILURE, f"operand {index}: rank {rank} at execution "
                                                 f"(NNAPI: {least} to {'any' if most is None else most})")


def _constant(operand: Operand) -> bool:
    return operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _constants(model: Model) -> dict[int, np.ndarray]:
    """Every constant's value, read at preparation (a pool closed later cannot matter)."""
    values: dict[int, np.ndarray] = {}
    for number, pool in enumerate(model.pools):  # every pool, used or not (CHOICE-2 lets a driver check them all)
        if pool.kind not in MEMORY_KINDS:
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"model pool {number}: memory kind {pool.kind!r} is not supported")
        _check_usable(pool, f"model pool {number}")
    for index, operand in enumerate(model.main.operands):
        loc: DataLocation = operand.location
        if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
            raw = model.operand_values[loc.offset: loc.offset + loc.length]
            if loc.pool_index != 0 or loc.offset < 0 or len(raw) != loc.length:  # a copy names no pool
                raise _fail(ErrorStatus.INVALID_ARGUMENT, f"operand {index}: location {loc} outside operandValues")
        elif operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
            if not 0 <= loc.pool_index < len(model.pools):
                raise _fail(ErrorStatus.INVALID_ARGUMENT, f"operand {index}: pool {loc.pool_index} does not exist")
            pool = model.pools[loc.pool_index]
            if pool.kind not in MEMORY_KINDS:
                raise _fail(ErrorStatus.INVALID_ARGUMENT, f"operand {index}: constants in {pool.kind!r} memory are not supported")
            if loc.offset < 0 or loc.offset + loc.length > pool.size:
                raise _fail(ErrorStatus.INVALID_ARGUMENT, f"operand {index}: location {loc} outside its pool")
            raw = _pread(pool, loc.offset, loc.length)
        else:
            continue
        if not operand.dimensions and operand.type in _TENSORS or 0 in operand.dimensions \
                or loc.length != _byte_size(operand.type, operand.dimensions):
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"operand {index}: length {loc.length} for dimensions {operand.dimensions}")
        values[index] = np.frombuffer(raw, numpy_dtype(operand.type)).reshape(operand.dimensions).copy()
    return values


# --------------------------------------------------------------------------- translation


def _graph(model: Model, constants: dict[int, np.ndarray]):
    from onnx import TensorProto, helper, numpy_helper

    main = model.main
    for number, operation in enumerate(main.operations):
        try:
            _check_supported(operation, main.operands, constants)
        except (Unsupported, IndexError) as error:
            raise _fail(ErrorStatus.INVALID_ARGUMENT, f"operation {number} ({operation.type.name}): {error}") from None
    elem = {F32: TensorProto.FLOAT, I32: TensorProto.INT32, INT32: TensorProto.INT32, BOOL: TensorProto.BOOL,
            BOOL8: TensorProto.BOOL, FLOAT32: TensorProto.FLOAT, OperandType.TENSOR_QUANT8_ASYMM: TensorProto.UINT8,
            OperandType.TENSOR_QUANT8_ASYMM_SIGNED: TensorProto.INT8, OperandType.TENSOR_QUANT8_SYMM: TensorProto.INT8}
    name = [f"t{i}" for i in range(len(main.operands))]
    nodes: list = []
    initializers = [numpy_helper.from_array(_tensor(value, main.operands[i].type), name[i]) for i, value in constants.items()]
    counter = iter(range(1 << 30))

    def fresh(hint: str) -> str:
        return f"{hint}_{next(counter)}"

    def const(value: np.ndarray | np.generic, hint: str) -> str:
        label = fresh(hint)
        initializers.append(numpy_helper.from_array(np.asarray(value), label))
        return label

    def node(op: str, inputs: list[str], **attributes) -> str:
        out = fresh(op.lower())
        nodes.append(helper.make_node(op, inputs, [out], **attributes))
        return out

    def scalar(index: int) -> int:
        return int(constants[index].reshape(()))

    def emit(op: str, inputs: list[str], out: str, **attributes) -> None:
        nodes.append(helper.make_node(op, inputs, [out], **attributes))

    def emit_several(op: str, inputs: list[str], outs: list[str], **attributes) -> None:
        nodes.append(helper.make_node(op, inputs, outs, **attributes))

    def activation(x: str, code_index: int, out: str) -> None:
        code = node("Cast", [name[code_index]], to=TensorProto.INT64)
        low = node("Gather", [const(np.asarray(_ACTIVATION_MIN, np.float32), "act_min"), code])
        high = node("Gather", [const(np.asarray(_ACTIVATION_MAX, np.float32), "act_max"), code])
        nodes.append(helper.make_node("Clip", [x, low, high], [out]))

    builder = Builder(name, node, emit, const, lambda index: constants[index].reshape(()).item(), activation, emit_several)

    for operation in main.operations:
        ins, out = list(operation.inputs), name[operation.outputs[0]]
        kind = operation.type
        if kind in functions.OPERATIONS:
            functions.translate(kind, ins, operation.outputs[0], main.operands, builder)
        elif kind in windows.OPERATIONS:
            windows.translate(kind, ins, operation.outputs[0], main.operands, constants, builder)
        elif kind in layouts.OPERATIONS:
            layouts.translate(kind, ins, operation.outputs, main.operands, constants, builder)
        elif kind in reductions.OPERATIONS:
            reductions.translate(kind, ins, operation.outputs[0], main.operands, constants, builder)
        elif kind in tables.OPERATIONS:
            tables.translate(kind, ins, operation.outputs[0], main.operands, constants, builder)
        elif kind == OperationType.DIV and main.operands[ins[0]].type == I32:
            nodes.append(helper.make_node("Identity", [_floor_divide(name[ins[0]], name[ins[1]], node, const)], [out]))
        elif kind in _ELEMENTWISE:
            result = node(_ELEMENTWISE[kind], [name[ins[0]], name[ins[1]]])
            if main.operands[ins[0]].type == I32:
                nodes.append(helper.make_node("Identity", [result], [out]))  # no activation on integers (NNAPI)
            else:
                activation(result, ins[2], out)
        elif kind in _CLAMP and main.operands[ins[0]].type in _QUANTIZED:
            nodes.append(helper.make_node("Identity", [windows.quantized_activation(
                name[ins[0]], main.operands[operation.outputs[0]], _CLAMP_CODE[kind], builder)], [out]))
        elif kind in _CLAMP:
            low, high = _CLAMP[kind]
            nodes.append(helper.make_node("Clip", [name[ins[0]], const(np.float32(low), "min"), const(np.float32(high), "max")], [out]))
        elif kind == OperationType.RESHAPE:
            shape = node("Cast", [name[ins[1]]], to=TensorProto.INT64)
            nodes.append(helper.make_node("Reshape", [name[ins[0]], shape], [out], allowzero=1))
        elif kind == OperationType.CONCATENATION:
            nodes.append(helper.make_node("Concat", [name[i] for i in ins[:-1]], [out], axis=scalar(ins[-1])))
        elif kind == OperationType.FULLY_CONNECTED and main.operands[ins[0]].type in windows.OWN_TYPES[kind]:
            windows.quantized_fully_connected(ins, operation.outputs[0], main.operands, builder)
        elif kind == OperationType.FULLY_CONNECTED:
            size = main.operands[ins[1]].dimensions[1]
            flat = node("Reshape", [name[ins[0]], const(np.asarray([-1, size], np.int64), "fc_shape")])
            result = node("Gemm", [flat, name[ins[1]], name[ins[2]]], transB=1)
            activation(result, ins[3], out)
    graph_inputs = [helper.make_tensor_value_info(name[i], elem[main.operands[i].type],
                                                  _onnx_shape(main.operands[i].dimensions, f"in{i}"))
                    for i in main.input_indexes]
    returned = [*main.output_indexes, *_probed(main)]
    graph_outputs = [helper.make_tensor_value_info(name[i], elem[main.operands[i].type], None) for i in returned]
    graph = helper.make_graph(nodes, "harness_model", graph_inputs, graph_outputs, initializers)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx_model.ir_version = 8
    return onnx_model, [name[i] for i in main.input_indexes], returned, [name[i] for i in returned]


def _onnx_shape(dimensions: Sequence[int], label: str):
    if not dimensions:
        return None  # unknown rank
    return [d if d > 0 else f"{label}_{axis}" for axis, d in enumerate(dimensions)]


def _floor_divide(a: str, b: str, node, const) -> str:
    """NNAPI's DIV on TENSOR_INT32 rounds toward minus infinity; ONNX's Div truncates. The truncated
    quotient is one too large exactly when the remainder is non-zero and its sign differs from the
    divisor's (no intermediate can overflow: |quotient x divisor| <= |dividend|)."""
    from onnx import TensorProto

    zero = const(np.int32(0), "zero")
    # A zero divisor's quotient is undefined (NNAPI CTS ignores it) but the execution completes;
    # onnxruntime fails the whole run on one, so those elements divide by 1 instead.
    b = node("Where", [node("Equal", [b, zero]), const(np.int32(1), "one"), b])
    quotient = node("Div", [a, b])
    remainder = node("Sub", [a, node("Mul", [quotient, b])])
    inexact = node("Not", [node("Equal", [remainder, zero])])
    signs_differ = node("Xor", [node("Less", [remainder, zero]), node("Less", [b, zero])])
    return node("Sub", [quotient, node("Cast", [node("And", [inexact, signs_differ])], to=TensorProto.INT32)])


def _tensor(value: np.ndarray, operand_type: OperandType) -> np.ndarray:
    """A value as ONNX takes it: a TENSOR_BOOL8 or BOOL byte other than 0 is true (NNAPI)."""
    return value != 0 if operand_type in (BOOL8, BOOL) else value
