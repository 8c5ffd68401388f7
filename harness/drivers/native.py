"""Native drivers through tvm-ffi: a shared library that exports the driver-harness native ABI
becomes a Driver API object (`harness.api.hal.Device`).

The library exports module functions (``TVM_FFI_DLL_EXPORT_TYPED_FUNC``):

    harness_capabilities() -> str                       JSON: name, version, memory_kinds,
                                                        memory_domains, operations, operand_types,
                                                        and optionally operation_types
    harness_get_supported_operations(model) -> [bool]
    harness_prepare(model) -> int                       a model id
    harness_execute(model id, request) -> [status, [shape], [bool]]   NONE or OUTPUT_INSUFFICIENT_SIZE
    harness_release_model(model id)
    harness_allocate(dims, [model id], input roles, output roles) -> [buffer id, token]
                                                        a role is [model index, io index, probability]
    harness_copy_from(buffer id, memory, dims)
    harness_copy_to(buffer id, memory)
    harness_release_buffer(buffer id)

A model is ``[operands, operations, input indexes, output indexes, operand values, pools]``
(operand values: a 1-d uint8 tensor, by DLPack);
an operand ``[type, dims, scale, zero point, lifetime, pool, offset, length, padding]``; an
operation ``[type, inputs, outputs]``; a request ``[inputs, outputs, pools]``; an argument
``[has no value, pool, offset, length, padding, dims]``; a memory ``[kind, fd, offset, size,
described]`` (the descriptor itself, not bytes: the driver reads and writes the same memory);
dims and index lists are tvm-ffi Shapes, enums their SPEC numbers.  Every other failure is a
tvm-ffi error of kind ``DriverError`` whose message starts with the ErrorStatus name
(``INVALID_ARGUMENT: [REQ-2] input 0: ...``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from harness.api.errors import DriverLoadError
from harness.api.hal import (
    Capabilities,
    DriverError,
    ErrorStatus,
    ExecutionResult,
    Model,
    OperandType,
    OperationType,
    OutputShape,
    Request,
    RequestArgument,
    Timing,
)
from harness.api.memory import Memory
from harness.tooling import coverage

_ERROR_CLASS: Any = None


def _driver_error_class() -> Any:
    """The Python class tvm-ffi raises for errors of kind DriverError (registered once)."""
    global _ERROR_CLASS
    if _ERROR_CLASS is None:
        import tvm_ffi

        class NativeDriverError(RuntimeError):
            """A native driver's DriverError, before it becomes `harness.api.hal.DriverError`."""

        try:
            tvm_ffi.register_error("DriverError", NativeDriverError)
        except Exception:  # noqa: BLE001 - already registered by an earlier load in this process
            pass
        _ERROR_CLASS = NativeDriverError
    return _ERROR_CLASS


def _translated(call, *args: Any) -> Any:
    """Call into the library; its DriverError becomes `harness.api.hal.DriverError`."""
    try:
        return call(*args)
    except Exception as error:  # noqa: BLE001 - every tvm-ffi error is examined, only DriverError translated
        text = str(error.args[0]) if error.args else str(error)
        name, _, detail = text.partition(": ")
        if type(error).__name__ == "NativeDriverError" or (name in ErrorStatus.__members__ and detail):
            status = ErrorStatus.__members__.get(name, ErrorStatus.GENERAL_FAILURE)
            raise DriverError(status, detail or text) from None
        raise


def _shape(values: Sequence[int]) -> Any:
    import tvm_ffi

    return tvm_ffi.Shape(tuple(int(v) for v in values))


def encode_memory(memory: Any) -> list:
    if isinstance(memory, Memory):
        fd = -1 if memory.closed else memory.fd
        return [memory.kind, fd, memory.offset, memory.size, memory.hardware_desc is not None]
    return ["token", int(memory) if isinstance(memory, int) else -1, 0, 0, False]


def encode_model(model: Model) -> list:
    main = model.main
    operands = [[int(o.type), _shape(o.dimensions), float(o.scale), int(o.zero_point), int(o.lifetime),
                 o.location.pool_index, o.location.offset, o.location.length, o.location.padding] for o in main.operands]
    operations = [[int(op.type), _shape(op.inputs), _shape(op.outputs)] for op in main.operations]
    return [operands, operations, _shape(main.input_indexes), _shape(main.output_indexes),
            _values_tensor(model.operand_values), [encode_memory(p) for p in model.pools]]


def _values_tensor(values: bytes) -> Any:
    """CONSTANT_COPY bytes as a 1-d uint8 DLPack tensor (DLPack cannot carry read-only memory,
    so immutable bytes are copied once into a writable array first)."""
    import numpy as np
    import tvm_ffi

    return tvm_ffi.from_dlpack(np.frombuffer(bytearray(values), dtype=np.uint8))


def _encode_argument(argument: RequestArgument) -> list:
    loc = argument.location
    return [bool(argument.has_no_value), loc.pool_index, loc.offset, loc.length, loc.padding, _shape(argument.dimensions)]


def encode_request(request: Request) -> list:
    return [[_encode_argument(a) for a in request.inputs], [_encode_argument(a) for a in request.outputs],
            [encode_memory(p) for p in request.pools]]


class NativePreparedModel:
    def __init__(self, device: NativeDevice, model_id: int) -> None:
        self._device = device
        self._id = model_id

    def execute(self, request: Request) -> ExecutionResult:
        started = time.perf_counter_ns()
        status, shapes, sufficient = _translated(self._device.module.harness_execute, self._id, encode_request(request))
        outputs = tuple(OutputShape(tuple(int(d) for d in s), bool(f)) for s, f in zip(shapes, sufficient))
        if int(status) == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
            raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "[DOM-DYN-2] an output region is too small", outputs)
        elapsed = time.perf_counter_ns() - started
        return ExecutionResult(True, outputs, Timing(elapsed, elapsed))

    def __del__(self) -> None:
        try:
            self._device.module.harness_release_model(self._id)
        except Exception:  # noqa: BLE001 - at interpreter exit the library may be gone
            pass


class NativeDevice:
    """A driver in a shared library that exports the native ABI (see the module docstring)."""

    def __init__(self, path: str) -> None:
        try:
            import tvm_ffi
        except ImportError:
            raise DriverLoadError(f"native driver {path}: apache-tvm-ffi is not installed "
                                  f"(pip install 'driver-harness[native]')") from None
        _driver_error_class()
        try:
            self.module = tvm_ffi.load_module(str(path))
        except Exception as error:  # noqa: BLE001 - any load failure is one clear error
            raise DriverLoadError(f"native driver {path}: cannot load the library: {error}") from None
        coverage.lend(path)  # a library built with coverage: its edges go with the service's replies
        if not self._exports("harness_capabilities"):
            raise DriverLoadError(f"native driver {path}: the library does not export harness_capabilities")
        try:
            self._declared = json.loads(str(self.module.harness_capabilities()))
            self.capabilities()
        except (ValueError, KeyError, TypeError) as error:
            raise DriverLoadError(f"native driver {path}: harness_capabilities() is not the JSON the ABI asks for: "
                                  f"{type(error).__name__}: {error}") from None
        required = ["harness_get_supported_operations", "harness_prepare", "harness_execute", "harness_release_model"]
        if self._declared["memory_domains"]:
            required += ["harness_allocate", "harness_copy_from", "harness_copy_to", "harness_release_buffer"]
        missing = [name for name in required if not self._exports(name)]
        if missing:
            raise DriverLoadError(f"native driver {path}: the library does not export {', '.join(missing)}")
        self.name = self._declared.get("name", str(path))
        self.version = self._declared.get("version", "")

    def _exports(self, name: str) -> bool:
        try:
            return bool(self.module.implements_function(name))
        except Exception:  # noqa: BLE001 - tvm-ffi raises for a missing function
            return False

    def capabilities(self) -> Capabilities:
        d = self._declared
        return Capabilities(frozenset(d["memory_kinds"]), bool(d["memory_domains"]),
                            frozenset(OperationType[n] for n in d["operations"]),
                            frozenset(OperandType[n] for n in d["operand_types"]),
                            operation_types=tuple((OperationType[op], frozenset(OperandType[n] for n in types))
                                                  for op, types in sorted(d.get("operation_types", {}).items())))

    def get_supported_operations(self, model: Model) -> list[bool]:
        return [bool(b) for b in _translated(self.module.harness_get_supported_operations, encode_model(model))]

    def prepare_model(self, model: Model) -> NativePreparedModel:
        return NativePreparedModel(self, int(_translated(self.module.harness_prepare, encode_model(model))))

    def allocate(self, desc: Any, prepared_models: Sequence[Any], input_roles: Sequence[Any],
                 output_roles: Sequence[Any]) -> tuple[NativeBuffer, int]:
        # A model of another driver (or another library) reaches the driver as an id it never gave out.
        ids = [m._id if isinstance(m, NativePreparedModel) and m._device is self else -1 for m in prepared_models]
        roles = [[[r.model_index, r.io_index, float(r.probability)] for r in group] for group in (input_roles, output_roles)]
        buffer_id, token = _translated(self.module.harness_allocate, _shape(desc.dimensions), ids, *roles)
        return NativeBuffer(self, int(buffer_id)), int(token)


class NativeBuffer:
    """A driver-managed buffer of a native driver, named by its token."""

    def __init__(self, device: NativeDevice, token: int) -> None:
        self._device = device
        self.token = token

    def copy_from(self, memory: Memory, dimensions: Sequence[int] = ()) -> None:
        _translated(self._device.module.harness_copy_from, self.token, encode_memory(memory), _shape(dimensions))

    def copy_to(self, memory: Memory) -> None:
        _translated(self._device.module.harness_copy_to, self.token, encode_memory(memory))

    def release(self) -> None:
        _translated(self._device.module.harness_release_buffer, self.token)
