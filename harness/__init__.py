"""driver-harness: conformance and fuzz testing for accelerator drivers.

The public surface: the Driver API and data model (`harness.api.hal`), shared memory
(`harness.api.memory`), plugin hooks (`hookimpl`, `DriverSpec`) and the harness's errors.
"""

from harness.api.errors import (
    ConformanceError,
    DriverCrash,
    DriverFault,
    DriverHang,
    DriverLoadError,
    ExpectationsError,
    HarnessError,
    UsageError,
)
from harness.api.hal import (
    Buffer,
    BufferDesc,
    BufferRole,
    Capabilities,
    DataLocation,
    Device,
    DriverError,
    ErrorStatus,
    ExecutionResult,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    OutputShape,
    PreparedModel,
    Request,
    RequestArgument,
    Subgraph,
)
from harness.api.hookspecs import hookimpl
from harness.api.memory import Memory
from harness.api.drivers import DriverSpec

__version__ = "0.1.0"

__all__ = [
    "Buffer",
    "BufferDesc",
    "BufferRole",
    "Capabilities",
    "ConformanceError",
    "DataLocation",
    "Device",
    "DriverCrash",
    "DriverFault",
    "DriverHang",
    "DriverError",
    "DriverLoadError",
    "DriverSpec",
    "ErrorStatus",
    "ExecutionResult",
    "ExpectationsError",
    "HarnessError",
    "Memory",
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
    "Subgraph",
    "UsageError",
    "__version__",
    "hookimpl",
]
