"""Packed functions (SPEC §6): what a driver exporting functions through tvm-ffi provides.

A driver's plugin declares, with the hook ``harness_packed_functions``, a library that
registers the probe functions below in tvm-ffi's global registry under its prefix.  The
suites call them from Python with every kind of type-erased argument:

    <prefix>echo(x) -> x                     any value of the closed set
    <prefix>add_int(a: int, b: int) -> int   64-bit, two's complement wrap-around
    <prefix>call_back(f, x) -> f(x)          a function from the caller's side, called back
    <prefix>raise_error(kind: str, message: str)   raises an error of that kind
    <prefix>tensor_info(t) -> [first element's address (DLPack data + byte_offset), shape, strides,
                               dtype code, bits, lanes, device type, id]
    <prefix>tensor_echo(t) -> t              the same tensor (DLPack, no copy)
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.api.errors import ConformanceError, calls_into_driver

PROBES = ("echo", "add_int", "call_back", "raise_error", "tensor_info", "tensor_echo")


@dataclass(frozen=True)
class PackedFunctionLibrary:
    """``build()`` returns the path of a shared library that registers the probes under ``prefix``."""

    prefix: str
    build: Callable[[], str]
    description: str = ""


def check_library(library: object, plugin: str = "?") -> None:
    """Early validation of a declared library: one line naming the plugin, the field and what is allowed."""
    from harness.api.errors import DeclarationError

    if not isinstance(library, PackedFunctionLibrary):
        raise DeclarationError(plugin, "harness_packed_functions", "item", type(library).__name__,
                               "harness.api.packed.PackedFunctionLibrary instances")
    declared = f"packed-function library {library.prefix!r}"
    if not isinstance(library.prefix, str) or not library.prefix:
        raise DeclarationError(plugin, declared, "prefix", library.prefix, "a non-empty string (e.g. 'acme.')")
    if not callable(library.build):
        raise DeclarationError(plugin, declared, "build", library.build,
                               "a zero-argument callable that returns the library's path")


def unavailable() -> str:
    """Why packed functions cannot be checked here ('' when they can); looked up, not imported."""
    if importlib.util.find_spec("tvm_ffi") is None:
        return "apache-tvm-ffi is not installed (pip install 'driver-harness[native]')"
    return ""


_in_confined_child = False


def mark_confined() -> None:
    """Say that this process is a child of the harness confined to run the driver's code
    (`harness.integration.forked`): the only process a library is opened in."""
    global _in_confined_child
    _in_confined_child = True


class LoadedLibrary:
    """A built library and, once `open` ran, the probes it registered (a probe it did not register
    is None).  It is opened only in the sandboxed child a packed-function test makes its calls in
    (`harness.integration.forked`): loading runs the library's static initializers, the driver's
    code, which must never run in the harness's own process.  A probe read as an attribute is
    called through `calls_into_driver`: what it raises is the driver's."""

    def __init__(self, library: PackedFunctionLibrary, path: str) -> None:
        self.library = library
        self.path = path
        self._module: Any = None
        self._functions: dict[str, Any] | None = None
        self._calls: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"LoadedLibrary({self.library.prefix!r}, {self.path!r}, opened={self._functions is not None})"

    def open(self) -> None:
        """Load the library here (its static initializers register the probes) and look them up;
        refused outside a confined child of the harness."""
        if self._functions is not None:
            return
        if not _in_confined_child:
            raise RuntimeError(f"packed-function library {self.path} may be loaded only in a confined child of "
                               f"the harness (mark the test in_forked_child)")
        import tvm_ffi

        self._module = calls_into_driver(tvm_ffi.load_module)(self.path)  # the driver's code
        self._functions = {name: tvm_ffi.get_global_func(self.library.prefix + name, allow_missing=True)
                           for name in PROBES}

    @property
    def module(self) -> Any:
        self.open()
        return self._module

    @property
    def functions(self) -> dict[str, Any]:
        self.open()
        assert self._functions is not None
        return self._functions

    def __getattr__(self, name: str) -> Any:
        if name not in PROBES:
            raise AttributeError(name)
        function = self.functions.get(name)
        if function is None:  # a test of this probe fails on FFI-1; the tests of the others still run
            raise ConformanceError(f"[FFI-1] {self.library.prefix}{name} is not in tvm-ffi's global registry after "
                                   f"the library was loaded", requirement="FFI-1")
        call = self._calls.get(name)
        if call is None:
            call = self._calls[name] = calls_into_driver(function)
        return call


@functools.cache
def _errors_made_ready() -> None:
    """tvm-ffi's first error in a process symbolizes a C++ backtrace (about 0.4 s).  The tests
    call the driver in children forked from this process, each of which would pay it again: one
    error raised here, by tvm-ffi's own ffi.ArrayGetItem (no driver code), is inherited done."""
    import tvm_ffi

    try:
        tvm_ffi.get_global_func("ffi.ArrayGetItem")(tvm_ffi.convert([0]), 1)
    except IndexError:  # the error asked for
        return


@functools.lru_cache(maxsize=None)
def built(library: PackedFunctionLibrary) -> str:
    """The path of the library's shared object: its ``build()`` (the driver's code), once per process."""
    return str(calls_into_driver(library.build)())


def load(library: PackedFunctionLibrary) -> LoadedLibrary:
    """The library, built (by the plugin's build, in its declarations process) but not loaded:
    `LoadedLibrary.open` loads it in the confined child a test runs in."""
    _errors_made_ready()
    return LoadedLibrary(library, built(library))
