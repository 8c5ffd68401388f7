"""The data model of SPEC §1 and the Driver API every driver presents.

Plain frozen dataclasses and IntEnums, mirroring the NN HAL AIDL types with Python
names.  Nothing here has behaviour beyond small helpers (element sizes, byte sizes),
so a scenario built from these types is plain data that can be printed, compared
and sent to another process.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
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
    "Timing",
    "element_size",
    "is_fully_specified",
    "is_scalar_type",
    "is_quantized_type",
    "numpy_dtype",
    "operand_byte_size",
]


class ErrorStatus(enum.IntEnum):
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
    """NNAPI operand codes (the numbering of the AIDL OperandType)."""

    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_FLOAT16 = 8
    FLOAT16 = 10
    TENSOR_QUANT8_ASYMM_SIGNED = 14


class OperandLifeTime(enum.IntEnum):
    TEMPORARY_VARIABLE = 0
    SUBGRAPH_INPUT = 1
    SUBGRAPH_OUTPUT = 2
    CONSTANT_COPY = 3
    CONSTANT_REFERENCE = 4  # AIDL: CONSTANT_POOL
    NO_VALUE = 5


class OperationType(enum.IntEnum):
    """The NNAPI operation codes the reference driver implements."""

    ADD = 0
    CONCATENATION = 2
    CONV_2D = 3
    FULLY_CONNECTED = 9
    MUL = 18
    RELU = 19
    RESHAPE = 22
    DIV = 30
    SUB = 36


class FusedActivation(enum.IntEnum):
    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class IODirection(enum.Enum):
    INPUT = "input"
    OUTPUT = "output"


_ELEMENT_SIZE: dict[OperandType, int] = {
    OperandType.FLOAT32: 4,
    OperandType.INT32: 4,
    OperandType.UINT32: 4,
    OperandType.TENSOR_FLOAT32: 4,
    OperandType.TENSOR_INT32: 4,
    OperandType.TENSOR_QUANT8_ASYMM: 1,
    OperandType.BOOL: 1,
    OperandType.TENSOR_FLOAT16: 2,
    OperandType.FLOAT16: 2,
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 1,
}

_NUMPY_DTYPE: dict[OperandType, str] = {
    OperandType.FLOAT32: "<f4",
    OperandType.INT32: "<i4",
    OperandType.UINT32: "<u4",
    OperandType.TENSOR_FLOAT32: "<f4",
    OperandType.TENSOR_INT32: "<i4",
    OperandType.TENSOR_QUANT8_ASYMM: "u1",
    OperandType.BOOL: "u1",
    OperandType.TENSOR_FLOAT16: "<f2",
    OperandType.FLOAT16: "<f2",
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: "i1",
}

_SCALAR_TYPES = frozenset(
    {OperandType.FLOAT32, OperandType.INT32, OperandType.UINT32, OperandType.BOOL, OperandType.FLOAT16}
)
_QUANTIZED_TYPES = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED})


def element_size(operand_type: OperandType) -> int:
    return _ELEMENT_SIZE[operand_type]


def numpy_dtype(operand_type: OperandType) -> str:
    """Little-endian numpy dtype string of one element of `operand_type`."""
    return _NUMPY_DTYPE[operand_type]


def is_scalar_type(operand_type: OperandType) -> bool:
    return operand_type in _SCALAR_TYPES


def is_quantized_type(operand_type: OperandType) -> bool:
    return operand_type in _QUANTIZED_TYPES


def is_fully_specified(operand_type: OperandType, dimensions: tuple[int, ...]) -> bool:
    """Scalars are always fully specified; a tensor needs a known rank and no 0 dimension."""
    if is_scalar_type(operand_type):
        return True
    return len(dimensions) > 0 and all(d > 0 for d in dimensions)


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
    pool_index: int = 0
    offset: int = 0
    length: int = 0
    padding: int = 0


@dataclass(frozen=True)
class Operand:
    type: OperandType
    dimensions: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0
    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE
    location: DataLocation = field(default_factory=DataLocation)


@dataclass(frozen=True)
class Operation:
    type: OperationType
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class Subgraph:
    operands: tuple[Operand, ...]
    operations: tuple[Operation, ...]
    input_indexes: tuple[int, ...]
    output_indexes: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Model:
    """A model; compared by identity because its pools are live memories."""

    main: Subgraph
    operand_values: bytes = b""
    pools: tuple[Memory, ...] = ()


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class RequestArgument:
    has_no_value: bool = False
    location: DataLocation = field(default_factory=DataLocation)
    dimensions: tuple[int, ...] = ()


#: A request pool is a shared memory or the token of a driver-managed buffer.
RequestPool = Union["Memory", int]


@dataclass(frozen=True, eq=False)
class Request:
    inputs: tuple[RequestArgument, ...]
    outputs: tuple[RequestArgument, ...]
    pools: tuple[RequestPool, ...]


@dataclass(frozen=True)
class OutputShape:
    dimensions: tuple[int, ...]
    is_sufficient: bool = True


@dataclass(frozen=True)
class Timing:
    """Durations in nanoseconds; -1 means not measured (the AIDL convention)."""

    time_on_device_ns: int = -1
    time_in_driver_ns: int = -1


@dataclass(frozen=True)
class ExecutionResult:
    output_sufficient_size: bool
    output_shapes: tuple[OutputShape, ...]
    timing: Timing = field(default_factory=Timing)


# --------------------------------------------------------------------------- memory domains


@dataclass(frozen=True)
class BufferDesc:
    dimensions: tuple[int, ...] = ()


@dataclass(frozen=True)
class BufferRole:
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

    def copy_from(self, memory: Memory, dimensions: tuple[int, ...]) -> None: ...

    def copy_to(self, memory: Memory) -> None: ...

    def release(self) -> None:
        """Free the buffer; its token is invalid from then on."""


@runtime_checkable
class PreparedModel(Protocol):
    def execute(self, request: Request) -> ExecutionResult: ...


@runtime_checkable
class Device(Protocol):
    name: str
    version: str

    def capabilities(self) -> Capabilities: ...

    def get_supported_operations(self, model: Model) -> list[bool]: ...

    def prepare_model(self, model: Model) -> PreparedModel: ...

    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: list[PreparedModel],
        input_roles: list[BufferRole],
        output_roles: list[BufferRole],
    ) -> tuple[Buffer, int]: ...
