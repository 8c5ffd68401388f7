"""Custom-call targets under real XLA: registered with jax.ffi, run under jax.jit on the CPU.

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

from harness.api.errors import calls_into_driver
from harness.api.shapes import leaf_values, leaves
from harness.api.custom_calls import CallCase, CustomCallTarget
from harness.judging.verdict import violation

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
    """Register ``symbol`` of ``library`` as a CPU FFI target once; returns its XLA name."""
    jax = _jax()
    with _lock:
        name = _registered.get((library, symbol))
        if name is None:
            name = f"driver_harness_{len(_registered)}_{symbol}"
            loaded = calls_into_driver(ctypes.cdll.LoadLibrary)(library)  # runs the library's initializers
            handler = getattr(loaded, symbol, None)
            if handler is None:
                raise violation("CC-1", f"the target's symbol {symbol!r} is not exported by {library}")
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(handler), platform="cpu")
            _registered[(library, symbol)] = name
        return name


def call_target(target: CustomCallTarget, case: CallCase, operand_values: tuple) -> list[np.ndarray]:
    """Run ``target``'s typed-FFI handler on ``case`` under jax.jit; its output leaves in pre-order."""
    path = str(target.xla_library() if callable(target.xla_library) else target.xla_library)
    name = register(path, target.xla_symbol)
    results = tuple((tuple(leaf.dims), leaf.dtype) for _, leaf in leaves(case.output))
    arguments = [np.asarray(v) for v in leaf_values(tuple(operand_values))]
    return calls_into_driver(_run)(_jitted(name, results, case.opaque if target.xla_opaque else None), arguments)


def _run(jitted: Any, arguments: list) -> list[np.ndarray]:
    """Run a jitted call to the driver's handler and wait for its outputs: XLA reports the
    handler's error status as an exception, raised here by the call or when an output is read."""
    return [np.asarray(out) for out in jitted(*arguments)]


@functools.lru_cache(maxsize=512)
def _jitted(name: str, results: tuple[tuple[tuple[int, ...], str], ...], opaque: bytes | None) -> Any:
    """One jitted call per target, result shapes and opaque attribute: jax compiles a jitted
    function once per argument shapes, and a new function object for every call compiled every time."""
    jax = _jax()
    structs = [jax.ShapeDtypeStruct(dims, np.dtype(dtype)) for dims, dtype in results]
    attributes = {"opaque": np.frombuffer(opaque, dtype=np.uint8)} if opaque is not None else {}

    def run(*args: Any):
        return jax.ffi.ffi_call(name, structs)(*args, **attributes)

    return jax.jit(run)


def call_handler(library: str, symbol: str, results: list, arguments: list, **options: Any) -> list[np.ndarray]:
    """Call any handler with explicit result shapes and ffi_call options (input_output_aliases, ...)."""
    jax = _jax()
    name = register(library, symbol)

    def run(*args: Any):
        return jax.ffi.ffi_call(name, results, **options)(*args)

    return calls_into_driver(_run)(jax.jit(run), arguments)
