"""The data model of SPEC §1 and the Driver API every driver presents.

Plain frozen dataclasses and IntEnums, mirroring the NN HAL AIDL types with Python
names.  Nothing here has behaviour beyond small helpers (element sizes, byte sizes),
so a scenario built from these types is plain data that can be printed, compared
and sent to another process.
"""

from __future__ import annotations

import enum
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, Union, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover - typing only
    from harness.api.memory import Memory

__all__ = [
    "BufferDesc",
    "BufferRole",
    "Capabilities",
    "DataLocation",
    "Device",
    "Buffer",
    "DriverError",
    "ErrorStatus",
    "ExecutionResult",
    "FusedActivation",
    "IODirection",
    "Model",
    "Operand",
    "OperandLifeTime",
    "OperandType",
    "Operation",
    "OperationType",
    "OutputShape",
    "PreparedModel",
    "Request",
    "RequestArgument",
    "RequestPool",
    "Subgraph",
    "SymmPerChannelQuantParams",
    "Timing",
    "conv_2d_has_padding_scheme",
    "element_size",
    "dimensions_at_execution",
    "is_fully_specified",
    "is_scalar_type",
    "is_quantized_type",
    "is_token",
    "numpy_dtype",
    "operand_byte_size",
    "support_answers",
    "truth_value_outputs",
    "undefined_outputs",
]


class ErrorStatus(enum.IntEnum):
    """The status of a failed call (NONE for success), with the HAL's numbers."""

    NONE = 0
    DEVICE_UNAVAILABLE = 1
    GENERAL_FAILURE = 2
    OUTPUT_INSUFFICIENT_SIZE = 3
    INVALID_ARGUMENT = 4
    MISSED_DEADLINE_TRANSIENT = 5
    MISSED_DEADLINE_PERSISTENT = 6
    RESOURCE_EXHAUSTED_TRANSIENT = 7
    RESOURCE_EXHAUSTED_PERSISTENT = 8


class OperandType(enum.IntEnum):
    """Every NNAPI operand code of HAL 1.3 (the numbering of the AIDL OperandType), and the OEM codes."""

    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    SUBGRAPH = 15  # an operand naming a referenced subgraph (IF/WHILE bodies)
    OEM = 10000  # HAL 1.0-1.2 vendor types: opaque to everyone but their driver
    TENSOR_OEM_BYTE = 10001


class OperandLifeTime(enum.IntEnum):
    """Where an operand's value comes from: computed, a model input or output, a constant, or absent."""

    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4  # AIDL: CONSTANT_POOL
    NO_VALUE = 5
    SUBGRAPH = 6  # location.offset is the index of a subgraph in Model.referenced


class OperationType(enum.IntEnum):
    """Every NNAPI operation code of HAL 1.3, numbered as in NeuralNetworks.h (0 to 101), and the
    HAL's OEM operation."""

    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101
    OEM_OPERATION = 10000  # HAL 1.0-1.3: a vendor's own operation, opaque to every driver but its vendor's


class FusedActivation(enum.IntEnum):
    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class IODirection(enum.Enum):
    INPUT = "input"
    OUTPUT = "output"


#: The little-endian numpy dtype of one element of each type (BOOL and TENSOR_BOOL8 are one byte, 0 or 1).
_NUMPY_DTYPE: dict[OperandType, str] = {
    OperandType.FLOAT32: "<f4",
    OperandType.INT32: "<i4",
    OperandType.UINT32: "<u4",
    OperandType.TENSOR_FLOAT32: "<f4",
    OperandType.TENSOR_INT32: "<i4",
    OperandType.TENSOR_QUANT8_ASYMM: "u1",
    OperandType.BOOL: "u1",
    OperandType.TENSOR_QUANT16_SYMM: "<i2",
    OperandType.TENSOR_FLOAT16: "<f2",
    OperandType.TENSOR_BOOL8: "u1",
    OperandType.FLOAT16: "<f2",
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: "i1",
    OperandType.TENSOR_QUANT16_ASYMM: "<u2",
    OperandType.TENSOR_QUANT8_SYMM: "i1",
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: "i1",
    OperandType.SUBGRAPH: "<u4",
    OperandType.OEM: "u1",
    OperandType.TENSOR_OEM_BYTE: "u1",
}

_SCALAR_TYPES = frozenset(
    {OperandType.FLOAT32, OperandType.INT32, OperandType.UINT32, OperandType.BOOL, OperandType.FLOAT16,
     OperandType.SUBGRAPH, OperandType.OEM}
)
#: Types whose stored integers stand for real values through scale and zeroPoint (one scale each).
_QUANTIZED_TYPES = frozenset({
    OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM,
    OperandType.TENSOR_QUANT16_ASYMM, OperandType.TENSOR_QUANT16_SYMM,
})


def element_size(operand_type: OperandType) -> int:
    return int(_NUMPY_DTYPE[operand_type][-1])


def numpy_dtype(operand_type: OperandType) -> str:
    """Little-endian numpy dtype string of one element of `operand_type`."""
    return _NUMPY_DTYPE[operand_type]


def is_scalar_type(operand_type: OperandType) -> bool:
    return operand_type in _SCALAR_TYPES


def is_quantized_type(operand_type: OperandType) -> bool:
    """A type with one scale and zeroPoint; TENSOR_QUANT8_SYMM_PER_CHANNEL has a scale per channel instead."""
    return operand_type in _QUANTIZED_TYPES


def is_fully_specified(operand_type: OperandType, dimensions: tuple[int, ...]) -> bool:
    """Scalars are always fully specified; a tensor needs a known rank and no 0 dimension."""
    if is_scalar_type(operand_type):
        return True
    return len(dimensions) > 0 and all(d > 0 for d in dimensions)


def dimensions_at_execution(declared: Sequence[int], given: Sequence[int]) -> tuple[int, ...]:
    """A request argument's dimensions merged with its operand's, for a pair that agrees (SPEC §1:
    empty is an unknown rank, 0 an unknown extent; each known value fills the other's gap)."""
    if not declared or not given:
        return tuple(given) or tuple(declared)
    return tuple(g or d for g, d in zip(given, declared))


def operand_byte_size(operand_type: OperandType, dimensions: tuple[int, ...]) -> int:
    """Bytes of a value of this type and shape; 0 when the shape is not fully known."""
    if is_scalar_type(operand_type):
        return element_size(operand_type)
    if not is_fully_specified(operand_type, dimensions):
        return 0
    return element_size(operand_type) * math.prod(dimensions)


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class DataLocation:
    """A region: ``length`` bytes at ``offset`` in pool ``pool_index``, and ``padding`` bytes after it
    that a driver may use for an output (CHOICE-3)."""

    pool_index: int = 0
    offset: int = 0
    length: int = 0
    padding: int = 0


@dataclass(frozen=True)
class SymmPerChannelQuantParams:
    """The extra parameters of TENSOR_QUANT8_SYMM_PER_CHANNEL: one scale per index of `channel_dim`."""

    scales: tuple[float, ...]
    channel_dim: int


@dataclass(frozen=True)
class Operand:
    """One operand of a subgraph: its type, dimensions (0: unknown extent; empty on a tensor: unknown
    rank), quantization, lifetime and, for a constant, where its value is."""

    type: OperandType
    dimensions: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0
    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE
    location: DataLocation = field(default_factory=DataLocation)
    #: Operand.extraParams: set for (and only for) TENSOR_QUANT8_SYMM_PER_CHANNEL.
    channel_quant: SymmPerChannelQuantParams | None = None


@dataclass(frozen=True)
class Operation:
    """One operation: its type and the indexes of its input and output operands."""

    type: OperationType
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


#: LSTM's weights NeuralNetworks.h lets a model omit, counted from its input-to-input weights: those
#: of the input gate (CIFG), the peepholes and the projection.
_LSTM_OPTIONAL_WEIGHTS = (0, 4, 8, 9, 10, 11, 15, 16)


def _lstm_optional(weights_at: Sequence[int], others: Sequence[int]) -> frozenset[int]:
    return frozenset({at + k for at in weights_at for k in _LSTM_OPTIONAL_WEIGHTS} | set(others))


#: Inputs NeuralNetworks.h marks optional (operation -> input positions): a model may give them no
#: value, as a constant of no value or as a request argument with hasNoValue.
OPTIONAL_INPUTS: Mapping[OperationType, frozenset[int]] = MappingProxyType({
    OperationType.TRANSPOSE: frozenset({1}),
    OperationType.SQUEEZE: frozenset({1}),
    OperationType.LSH_PROJECTION: frozenset({2}),
    OperationType.SVDF: frozenset({3}),
    OperationType.BIDIRECTIONAL_SEQUENCE_RNN: frozenset({9, 10, 11}),
    OperationType.QUANTIZED_LSTM: frozenset({1, 5, 9, 10, 11, 12, 16, 17, 20, 21, 22, 23}),
    OperationType.LSTM: _lstm_optional((1,), range(23, 27)),
    OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM: _lstm_optional((1,), range(24, 28)),
    OperationType.BIDIRECTIONAL_SEQUENCE_LSTM: _lstm_optional((1, 18), (*range(39, 48), *range(53, 61))),
})


#: Outputs NeuralNetworks.h defines as truth values stored in bytes of another type, any non-zero
#: byte being True (operation -> output positions): HASHTABLE_LOOKUP's hits.
_TRUTH_OUTPUTS = {OperationType.HASHTABLE_LOOKUP: (1,)}


def truth_value_outputs(subgraph: Subgraph) -> frozenset[int]:
    """The operands of ``subgraph`` that hold truth values as bytes, any non-zero byte being True, which
    two correct drivers may store differently: every TENSOR_BOOL8 (NeuralNetworks.h: zero is false,
    any other value true) and HASHTABLE_LOOKUP's hits."""
    hits = {operation.outputs[k] for operation in subgraph.operations
            for k in _TRUTH_OUTPUTS.get(operation.type, ()) if k < len(operation.outputs)}
    return frozenset(hits | {i for i, o in enumerate(subgraph.operands) if o.type == OperandType.TENSOR_BOOL8})


#: Outputs whose content NeuralNetworks.h leaves undefined (operation -> output positions): LSTM's
#: scratch buffer, which a driver may use as it likes; only its shape is the model's.
_UNDEFINED_OUTPUTS = {OperationType.LSTM: (0,)}


def undefined_outputs(subgraph: Subgraph) -> frozenset[int]:
    """The operands of ``subgraph`` whose values NeuralNetworks.h leaves to the driver (LSTM's scratch buffer)."""
    return frozenset(operation.outputs[k] for operation in subgraph.operations
                     for k in _UNDEFINED_OUTPUTS.get(operation.type, ()) if k < len(operation.outputs))


def conv_2d_has_padding_scheme(inputs: Sequence[Operand]) -> bool:
    """CONV_2D's implicit-padding signature (a padding scheme at input 3, the activation at 6): 7 or 8
    inputs, or 10 whose input 7 is the BOOL layout flag; explicit padding has 10, 11 or 13."""
    return len(inputs) in (7, 8) or (len(inputs) == 10 and inputs[7].type == OperandType.BOOL)


@dataclass(frozen=True)
class Subgraph:
    """Operands, the operations over them in execution order, and which operands are the inputs and outputs."""

    operands: tuple[Operand, ...]
    operations: tuple[Operation, ...]
    input_indexes: tuple[int, ...]
    output_indexes: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Model:
    """A model; compared by identity because its pools are live memories.

    `referenced` holds the subgraphs that SUBGRAPH operands name (the branches and bodies of IF
    and WHILE); `relax_computation_float32_to_float16` lets the driver compute TENSOR_FLOAT32 with
    the range and precision of IEEE float16 (Model.relaxComputationFloat32toFloat16).
    """

    main: Subgraph
    operand_values: bytes = b""
    pools: tuple[Memory, ...] = ()
    referenced: tuple[Subgraph, ...] = ()
    relax_computation_float32_to_float16: bool = False


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class RequestArgument:
    """One input or output of a request: where its bytes are, and its dimensions at execution
    (empty: the model's); ``has_no_value`` for an omitted optional input."""

    has_no_value: bool = False
    location: DataLocation = field(default_factory=DataLocation)
    dimensions: tuple[int, ...] = ()


#: A request pool is a shared memory or the token of a driver-managed buffer.
RequestPool = Union["Memory", int]


@dataclass(frozen=True, eq=False)
class Request:
    """An execution's inputs and outputs, one argument per model input and output, and the pools
    their locations name: each a `Memory` or the token of a driver-managed buffer.

    ``loop_timeout_ns``: HAL 1.3 ``execute_1_3``'s loopTimeoutDuration (the application's
    ``ANeuralNetworksExecution_setLoopTimeout``), how long a WHILE may run before the execution is
    aborted; None for NNAPI's default, 2 s, and one past NNAPI's maximum, 15 s, is the maximum."""

    inputs: tuple[RequestArgument, ...]
    outputs: tuple[RequestArgument, ...]
    pools: tuple[RequestPool, ...]
    loop_timeout_ns: int | None = None


@dataclass(frozen=True)
class OutputShape:
    """An output's dimensions, and whether its region was large enough to hold them."""

    dimensions: tuple[int, ...]
    is_sufficient: bool = True


@dataclass(frozen=True)
class Timing:
    """Durations in nanoseconds; -1 means not measured (the AIDL convention)."""

    time_on_device_ns: int = -1
    time_in_driver_ns: int = -1


@dataclass(frozen=True)
class ExecutionResult:
    """What a successful execution returns: the output shapes (may be empty when every output is fully
    specified, CHOICE-4) and how long it took."""

    output_sufficient_size: bool
    output_shapes: tuple[OutputShape, ...]
    timing: Timing = field(default_factory=Timing)


# --------------------------------------------------------------------------- memory domains


@dataclass(frozen=True)
class BufferDesc:
    """The dimensions asked for a driver-managed buffer (0 or empty: left to the roles)."""

    dimensions: tuple[int, ...] = ()


def support_answers(answer: object) -> list[bool] | None:
    """getSupportedOperations' answer as Python bools: a list, tuple or 1-D array whose every item
    is a bool (Python's or numpy's, as numpy code gives them); None when it is anything else."""
    import numpy as np

    if isinstance(answer, np.ndarray):
        if answer.ndim != 1 or answer.dtype != np.bool_:
            return None
        answer = answer.tolist()
    if not isinstance(answer, (list, tuple)) or not all(isinstance(item, (bool, np.bool_)) for item in answer):
        return None
    return [bool(item) for item in answer]


def is_token(value: object) -> bool:
    """A buffer's token as DOM-ALLOC-3 has it: a positive integer, of any integer type (a numpy
    integer is one; a bool is not)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) > 0


@dataclass(frozen=True)
class BufferRole:
    """A use a driver-managed buffer is allocated for: input or output ``io_index`` of the prepared model
    at ``model_index``, with the probability of that use (0 < p <= 1)."""

    model_index: int
    io_index: int
    probability: float = 1.0


@dataclass(frozen=True)
class Capabilities:
    """What a driver declares it supports; suites skip what is not declared."""

    memory_kinds: frozenset[str]
    memory_domains: bool
    operations: frozenset[OperationType]
    operand_types: frozenset[OperandType]
    # Whether the driver serves buffers of unknown shape (DOM-DYN).  DOM-ALLOC-3 lets a driver
    # refuse them; one that always does declares False, and the DOM-DYN-1 tests are then
    # not applicable instead of not run.
    dynamic_buffers: bool = True
    # Tensor types some operations take beyond `operand_types`, which every declared operation
    # takes: (operation, its own types) pairs.  NNAPI answers support per operation, so a device may
    # run QUANTIZE into TENSOR_QUANT8_ASYMM and compute nothing else on that type; the suites then
    # draw the type in that operation's models only.
    operation_types: tuple[tuple[OperationType, frozenset[OperandType]], ...] = ()

    def types_of(self, operation: OperationType) -> frozenset[OperandType]:
        """The operand types ``operation``'s models may hold: every declared one, and its own."""
        own = [types for listed, types in self.operation_types if listed == operation]
        return self.operand_types.union(*own) if own else self.operand_types


# --------------------------------------------------------------------------- errors


class DriverError(Exception):
    """How every driver reports a failed call: an ErrorStatus and a message.

    `output_shapes` is set with OUTPUT_INSUFFICIENT_SIZE: the shapes the outputs need.
    `rule` (optional) is the SPEC requirement ID that decided the error, as data: the reference
    sets it, and the judges read it, never the message, to know which statuses SPEC allows.
    """

    def __init__(
        self, status: ErrorStatus, message: str = "", output_shapes: tuple[OutputShape, ...] = (), rule: str = ""
    ) -> None:
        super().__init__(status, message)
        self.status = ErrorStatus(status)
        self.message = message
        self.output_shapes = tuple(output_shapes)
        self.rule = rule

    def __str__(self) -> str:
        return f"{self.status.name}: {self.message}" if self.message else self.status.name

    def __reduce__(self):  # keep status, shapes and rule when pickled
        return (type(self), (self.status, self.message, self.output_shapes, self.rule))


# --------------------------------------------------------------------------- the driver API


@runtime_checkable
class Buffer(Protocol):
    """A driver-managed buffer (AIDL IBuffer)."""

    def copy_from(self, memory: Memory, dimensions: tuple[int, ...]) -> None:
        """Copy ``memory``'s bytes into the buffer, with these dimensions (empty: the buffer's own)."""

    def copy_to(self, memory: Memory) -> None:
        """Copy the buffer's contents into ``memory``."""

    def release(self) -> None:
        """Free the buffer; its token is invalid from then on."""


@runtime_checkable
class PreparedModel(Protocol):
    """A model the driver prepared; it executes requests against it."""

    def execute(self, request: Request) -> ExecutionResult:
        """Run the model on ``request``'s inputs and write its outputs into the request's pools."""


@runtime_checkable
class Device(Protocol):
    """The Driver API: what a driver's factory returns.

    Every failed call raises `DriverError`.  ``name`` and ``version`` describe the driver in reports.
    """

    name: str
    version: str

    def capabilities(self) -> Capabilities:
        """What the driver supports; the suites generate only within it (CHOICE-5)."""

    def get_supported_operations(self, model: Model) -> list[bool]:
        """One flag per operation of ``model``'s main subgraph: whether the driver can run it."""

    def prepare_model(self, model: Model) -> PreparedModel:
        """Validate ``model``, read its constants, and return it prepared for execution."""

    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: list[PreparedModel],
        input_roles: list[BufferRole],
        output_roles: list[BufferRole],
    ) -> tuple[Buffer, int]:
        """A driver-managed buffer for the given roles, and its token (memory domains)."""
