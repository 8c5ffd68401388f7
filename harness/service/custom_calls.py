"""Calls custom-call targets with XLA's argument layouts; runs where the driver runs.

In the driver service by default (a target that crashes is then a reported crash), or
inline.  Memories arrive as handles: inputs are mapped read-only, outputs writable, and
the pointers a target receives are built here with ctypes exactly as XLA lays them out:

- host conventions: ``ins`` has one pointer per operand; a tuple operand's pointer leads
  to an array of its elements' pointers (nested tuples nest); ``out`` is the output leaf,
  or the output tuple's pointer array (SPEC CC-2);
- device conventions: one flat ``buffers`` array of every operand's leaves in pre-order,
  then the output's leaves in pre-order (SPEC CC-3).

A write into the read-only inputs is trapped by the C runner and returned as a fault
with its byte offset instead of killing the process.
"""

from __future__ import annotations

import ctypes
import functools
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.api.custom_calls import C_INCLUDE_DIR, CONVENTIONS, CustomCallError, CustomCallTarget, TargetRegistry
from harness.api.memory import Memory
from harness.service import xla
from harness.tooling import coverage

_C_DIRECTORY = Path(__file__).parent / "c"
#: The registry the zygote loaded its driver from (only that driver's plugin, or the driver's own
#: module): the one that knows its targets.  None in a service started without a zygote.
DRIVER_REGISTRY: Any = None
STATUS_CAPACITY = 65536


class _Status(ctypes.Structure):
    _fields_ = [("failed", ctypes.c_int), ("length", ctypes.c_size_t), ("message", ctypes.c_char * STATUS_CAPACITY)]


@functools.lru_cache(maxsize=1)
def _runner() -> Any:
    from harness.tooling import build_shared_library

    library = ctypes.CDLL(str(build_shared_library("cc-runner", [_C_DIRECTORY / "runner.c"], ["-pthread"],
                                                   include_dirs=[_C_DIRECTORY, C_INCLUDE_DIR], coverage=False)))
    invoke = library.harness_cc_invoke
    invoke.restype = ctypes.c_int
    invoke.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                       ctypes.c_size_t, ctypes.POINTER(_Status), ctypes.c_size_t, ctypes.c_size_t,
                       ctypes.POINTER(ctypes.c_size_t)]
    return invoke


def _flatten(node: Any) -> list[int]:
    return [node] if isinstance(node, int) else [offset for element in node for offset in _flatten(element)]


class CustomCallExecutor:
    """The targets of one driver, registered (CC-1) and callable by (name, platform)."""

    def __init__(self, targets: Iterable[CustomCallTarget]) -> None:
        self.registry = TargetRegistry()
        self._libraries: dict[str, ctypes.CDLL] = {}
        self._under_xla: dict[tuple[str, str], str] = {}  # the targets prepare_xla registered: their XLA names
        for target in targets:
            self.registry.register(target)

    def _function(self, target: CustomCallTarget) -> int:
        path = target.library_path()
        library = self._libraries.get(path)
        if library is None:
            library = self._libraries[path] = ctypes.CDLL(path)
            coverage.lend(path)  # an instrumented target's edges go with the service's replies
        try:
            address = ctypes.cast(getattr(library, target.symbol), ctypes.c_void_p).value
            if address is None:
                raise AttributeError(target.symbol)
            return address
        except AttributeError:
            raise CustomCallError(f"custom-call target {target.name!r}: {path} has no symbol {target.symbol!r}") from None

    def lookup(self, name: str, platform: str) -> tuple:
        """("ok", convention) or ("unregistered", message): for CC-1 checks across the service.
        A declared target whose symbol its library does not export is not registered: XLA
        registers a function's address, and there is none to register."""
        try:
            target = self.registry.lookup(name, platform)
            self._function(target)
            return ("ok", target.convention)
        except CustomCallError as error:
            return ("unregistered", str(error))

    def invoke(self, name: str, platform: str, inputs: Memory, operands: tuple, outputs: Memory, output: Any,
               opaque: bytes) -> tuple:
        """Call the target.  ``operands`` and ``output`` are leaf offsets into ``inputs`` and
        ``outputs``, nested like the shapes.  Returns ("ok",), ("failed", message, length),
        ("fault", signal name, byte offset into inputs) or ("unregistered", message)."""
        try:
            target = self.registry.lookup(name, platform)
            function = self._function(target)
        except CustomCallError as error:
            return ("unregistered", str(error))
        in_base = inputs.map(writable=False).ctypes.data if inputs.size else 0
        out_base = outputs.map(writable=True).ctypes.data if outputs.size else 0
        keep: list[Any] = []  # pointer arrays must live until the call returns

        def pointers(node: Any, base: int) -> int:
            if isinstance(node, int):
                return base + node
            array = (ctypes.c_void_p * max(len(node), 1))(*[pointers(element, base) for element in node])
            keep.append(array)
            return ctypes.addressof(array)

        if target.convention.startswith("host"):
            ins = (ctypes.c_void_p * max(len(operands), 1))(*[pointers(op, in_base) for op in operands])
            first, second = pointers(output, out_base), ctypes.addressof(ins)
        else:
            flat = [in_base + o for op in operands for o in _flatten(op)] + [out_base + o for o in _flatten(output)]
            buffers = (ctypes.c_void_p * max(len(flat), 1))(*flat)
            first, second = ctypes.addressof(buffers), None
            keep.append(buffers)
        status = _Status()
        fault = ctypes.c_size_t(0)
        signal_number = _runner()(CONVENTIONS.index(target.convention), function, first, second, opaque, len(opaque),
                                  ctypes.byref(status), in_base, in_base + inputs.size, ctypes.byref(fault))
        if signal_number:
            return ("fault", signal.Signals(signal_number).name, fault.value - in_base)
        if status.failed:
            kept = min(status.length, STATUS_CAPACITY)
            return ("failed", ctypes.string_at(ctypes.addressof(status) + _Status.message.offset, kept), status.length)
        return ("ok",)

    def prepare_xla(self, name: str, platform: str) -> tuple:
        """Import jax and register the target's typed-FFI handler with XLA: ("ok",) or
        ("unregistered", message).  A set-up step, asked before `under_xla` in a new process."""
        try:
            target = self.registry.lookup(name, platform)
            self._under_xla[(name, platform)] = xla.register(target.xla_library_path(), target.xla_symbol)
        except CustomCallError as error:
            return ("unregistered", str(error))
        return ("ok",)

    def under_xla(self, name: str, platform: str, arguments: list, results: tuple, opaque: bytes) -> tuple:
        """Call the target's typed-FFI handler under jax.jit (``arguments``: its operand leaves in
        pre-order; ``results``: its output leaves' (dims, dtype); ``opaque``: the case's, passed as
        the handler's attribute when the target takes one).  Returns ("ok", output leaves as
        (dims, dtype, bytes), the operand leaves' bytes as XLA holds them after the call: plain
        data, which the harness reads back and judges without trusting the service with anything
        more), ("failed", exception type, message) when XLA raised (the handler's error status),
        or ("unprepared",) before `prepare_xla`."""
        registered = self._under_xla.get((name, platform))
        if registered is None:
            return ("unprepared",)
        target = self.registry.lookup(name, platform)
        try:
            outputs, operands = xla.run(registered, results, arguments, opaque if target.xla_opaque else None)
        except Exception as error:  # XLA's exception for the handler's error status: the answer, as data
            return ("failed", type(error).__name__, str(error))
        return ("ok", [(tuple(out.shape), out.dtype.str, out.tobytes()) for out in outputs],
                [operand.tobytes() for operand in operands])


@functools.lru_cache(maxsize=4)
def executor_for(driver: str) -> CustomCallExecutor:
    """The executor of a named driver's targets (the service builds it at first use)."""
    from harness.drivers.registry import load_registry

    registry = DRIVER_REGISTRY if DRIVER_REGISTRY is not None else load_registry()
    return CustomCallExecutor(registry.custom_call_targets(driver))
