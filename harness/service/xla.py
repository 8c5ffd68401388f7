"""Custom-call targets under real XLA, where the driver runs (its service by default, so a
handler that crashes is a reported crash, not the harness's end): registered with jax.ffi and
run under jax.jit on the CPU.

Only what jax offers is used: `jax.ffi.register_ffi_target` for the handler,
`jax.ffi.ffi_call` to call it (operand leaves as arguments in pre-order, output leaves as
results), `input_output_aliases` for aliasing.  64-bit types are enabled, because the
cases include float64 and uint64 leaves.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import threading
from typing import Any

import numpy as np

from harness.api.custom_calls import CustomCallError
from harness.tooling import coverage

#: An output leaf: its dimensions and dtype name.
Result = tuple[tuple[int, ...], str]

_registered: dict[tuple[str, str], str] = {}
_lock = threading.Lock()


def unavailable() -> str:
    """Why targets cannot run under XLA here ('' when they can).  Looked up, not imported:
    importing jax costs seconds, and every collection of the suites asks."""
    if importlib.util.find_spec("jax") is None:
        return "jax is not installed (pip install 'driver-harness[xla]')"
    return ""


def _jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    return jax


def register(library: str, symbol: str) -> str:
    """Register ``symbol`` of ``library`` as a CPU FFI target once; returns its XLA name.
    `CustomCallError` when the library does not export the symbol (XLA registers an address)."""
    jax = _jax()
    with _lock:
        name = _registered.get((library, symbol))
        if name is None:
            handler = getattr(ctypes.cdll.LoadLibrary(library), symbol, None)  # loading runs its initializers
            coverage.lend(library)
            if handler is None:
                raise CustomCallError(f"{library} does not export the typed-FFI handler {symbol!r}")
            name = f"driver_harness_{len(_registered)}_{symbol}"
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(handler), platform="cpu")
            _registered[(library, symbol)] = name
        return name


def run(name: str, results: tuple[Result, ...], arguments: list[np.ndarray],
        opaque: bytes | None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Call the registered handler ``name`` under jax.jit: its output leaves in pre-order, and the
    operand leaves as XLA holds them after the call.  XLA hands a handler its parameters' own
    buffers, so a handler that writes into an operand changes them (CC-5).  XLA reports the
    handler's error status as an exception, raised by the call or when an output is read."""
    jax = _jax()
    held = [jax.device_put(argument) for argument in arguments]
    outputs = [np.asarray(out) for out in _jitted(name, results, opaque)(*held)]
    return outputs, [np.asarray(operand) for operand in held]


@functools.lru_cache(maxsize=512)
def _jitted(name: str, results: tuple[Result, ...], opaque: bytes | None) -> Any:
    """One jitted call per target, result shapes and opaque attribute: jax compiles a jitted
    function once per argument shapes, and a new function object for every call compiled every time."""
    jax = _jax()
    structs = [jax.ShapeDtypeStruct(dims, np.dtype(dtype)) for dims, dtype in results]
    attributes = {"opaque": np.frombuffer(opaque, dtype=np.uint8)} if opaque is not None else {}

    def call(*args: Any):
        return jax.ffi.ffi_call(name, structs)(*args, **attributes)

    return jax.jit(call)


def call_handler(library: str, symbol: str, results: list, arguments: list, **options: Any) -> list[np.ndarray]:
    """Call any handler in this process with explicit result shapes and ffi_call options
    (input_output_aliases, ...): for the project's own tests of XLA, not a driver's."""
    jax = _jax()
    name = register(library, symbol)

    def call(*args: Any):
        return jax.ffi.ffi_call(name, results, **options)(*args)

    return [np.asarray(out) for out in jax.jit(call)(*arguments)]
