"""Coverage of the driver under test, collected in its service and sent with each reply.

A fuzz loop that knows which of the driver's code an input reached keeps the inputs that reached
something new and mutates them (`harness.integration.guided`); without it, fuzzing is blind.

In the service (`ServiceCoverage`), two sources feed one set of *edges*, each a 32-bit number:

- Python: a trace function follows only the driver's own files (`driver_paths`: the packages of
  the classes its device is made of, never the harness's, the standard library's or
  site-packages'); each line a frame runs after another is the edge (file, previous line, line).
  Frames of any other file are not traced at all, so numpy and the harness cost nothing.
- Native: a library the harness built with compiler coverage instrumentation (``-fsanitize-
  coverage=trace-pc``) counts the edges it ran in a byte map of its own (`harness/tooling/c/
  coverage.c`); `ServiceCoverage.add_native_map` lends that map, and each of its set bytes is an
  edge.  Python edges are below 2**31, native ones at or above it.

Each reply carries the edges first reached since the previous reply was sent (`take`): a few, or
none, once a run has warmed up.  Which call reached them is not known (calls run concurrently); an
input that reached new edges is what the fuzz loop needs to tell.

In the harness (`ReceivedCoverage`): what the replies carried, refused unless it is a tuple of
at most `MAX_EDGES_PER_REPLY` numbers in range (the driver is hostile: a bogus edge can only mislead
the fuzzer's choices, never a verdict, and no more than that many a reply).
"""

from __future__ import annotations

import os
import sys
import threading
import zlib
from collections.abc import Iterable
from types import CodeType, FrameType
from typing import Any

from harness.tooling.coverage import COVERAGE_ENVIRONMENT  # set (to "1") when the harness wants coverage

#: The compiled line tracer a service loads (`build_line_tracer`); unset or unloadable: the
#: Python tracer, the same edges at about three times the cost.
LINE_TRACER_ENVIRONMENT = "DRIVER_HARNESS_LINE_TRACER"

__all__ = ["COVERAGE_ENVIRONMENT", "LINE_TRACER_ENVIRONMENT", "build_line_tracer", "MAX_EDGES_PER_REPLY", "NATIVE_BASE", "RECEIVED", "ReceivedCoverage",
           "ServiceCoverage", "driver_paths", "valid_edges"]

#: The most edges one reply may carry; a reply with more is refused whole.
MAX_EDGES_PER_REPLY = 1 << 16
#: Native edges are numbered from here (Python edges below it).
NATIVE_BASE = 1 << 31
_EDGE_LIMIT = 1 << 32
_PYTHON_MASK = NATIVE_BASE - 1


def driver_paths(device: Any) -> tuple[str, ...]:
    """The directories (or single files) holding the driver's own code: the packages of the
    device's class and its bases, and of the objects it holds directly (a driver made of parts: a
    device wrapping another, a table of kernels); never the harness's own code, the standard
    library or the numeric libraries.  A package is a top-level one, or one of the plugins the
    harness ships (``harness.plugins.NAME``: its mutants, its sample drivers)."""
    harness_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths: list[str] = []
    for module in _modules_of(device):
        path = _package_root(module)
        if path is None or path == harness_root or _in_library(path):
            continue
        if any(path == known or path.startswith(known + os.sep) for known in paths):
            continue
        paths = [known for known in paths if not known.startswith(path + os.sep)]
        paths.append(path)
    return tuple(paths)


def _modules_of(device: Any) -> list[str]:
    """The modules defining the device's class and bases, and the classes and functions of what
    it holds (one level down, the values of a dict it holds included: a kernel table)."""
    modules = [cls.__module__ for cls in type(device).__mro__]
    for value in (vars(device).values() if hasattr(device, "__dict__") else ()):
        for part in (value.values() if isinstance(value, dict) else (value,)):
            if isinstance(part, (int, float, str, bytes, bool, type(None))):
                continue
            modules.extend(cls.__module__ for cls in type(part).__mro__)
            for function in (part, getattr(part, "run", None), getattr(part, "validate", None)):
                module = getattr(function, "__module__", None) if callable(function) else None
                if isinstance(module, str):
                    modules.append(module)
    return modules


def _package_root(module_name: str) -> str | None:
    """The directory of ``module_name``'s package (a plugin of the harness's: its own), or a
    plain module's file."""
    parts = module_name.split(".")
    name = ".".join(parts[:3]) if parts[:2] == ["harness", "plugins"] and len(parts) > 2 else parts[0]
    if name in {"builtins", "harness"}:
        return None
    return _source_root(sys.modules.get(name))


def _source_root(module: Any) -> str | None:
    """A package's directory, or a plain module's file; None for a built-in module."""
    if module is None:
        return None
    file = getattr(module, "__file__", None)
    if not file:
        return None
    file = os.path.abspath(file)
    return os.path.dirname(file) if os.path.basename(file) == "__init__.py" else file


def build_line_tracer() -> str | None:
    """The compiled line tracer (``c/linetrace.c``), built once and cached, for a service to load;
    None when it cannot be built here (no compiler or no Python headers: the Python tracer does)."""
    import sysconfig

    from harness.tooling.build import BuildFailed, build_shared_library

    include = sysconfig.get_paths().get("include", "")
    if not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c", "linetrace.c")
    try:
        return str(build_shared_library("harness_linetrace", [source], include_dirs=[include]))
    except (BuildFailed, OSError):
        return None


def _load_line_tracer(path: str) -> Any:
    """The compiled tracer's module from ``path`` (None: not given, or not loadable here)."""
    if not path:
        return None
    import importlib.machinery
    import importlib.util

    try:
        loader = importlib.machinery.ExtensionFileLoader("harness_linetrace", path)
        spec = importlib.util.spec_from_file_location("harness_linetrace", path, loader=loader)
        if spec is None:
            return None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        return module
    except (ImportError, OSError):
        return None


def _in_library(path: str) -> bool:
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        # a vendor's package installed there is still its own code; the libraries are not
        return os.path.basename(path) in {"numpy", "onnxruntime", "jax", "jaxlib", "tvm_ffi", "scipy"}
    stdlib = os.path.dirname(os.__file__)
    return path == stdlib or path.startswith(stdlib + os.sep)


class ServiceCoverage:
    """The edges a driver service has reached, and which of them no reply has carried yet."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._paths = tuple(os.path.abspath(p) for p in paths)
        # every edge reached, in the order first reached: a dict is an ordered set, and listing it
        # holds the interpreter lock throughout, so a tracing thread cannot change it meanwhile
        self._reached: dict[int, None] = {}
        self._reported = 0
        self._lock = threading.Lock()
        self._traced: dict[CodeType, int | None] = {}  # a code object's file key, None when not the driver's
        self._native: list[tuple[int, Any, Any]] = []  # slot, the map, which of its bytes were read set
        self.tracer = ""  # how the driver's Python code is traced: "compiled", "python", or not at all

    # ----------------------------------------------------------------- Python

    def start(self) -> None:
        """Trace the driver's frames in this thread and every thread started from now on (none
        when the driver has no Python code of its own, a native driver's: a trace function costs
        every call of every frame, the harness's own included).  The compiled tracer when the
        harness built one (`LINE_TRACER_ENVIRONMENT`), else the Python one."""
        if not self._paths:
            return
        compiled = _load_line_tracer(os.environ.get(LINE_TRACER_ENVIRONMENT, ""))
        if compiled is not None:
            def start_compiled(*_: Any) -> None:
                compiled.start(self._traced, self._file_key, self._reached)

            threading.settrace(start_compiled)  # a new thread's first event starts it there
            start_compiled()
            self.tracer = "compiled"
            return
        threading.settrace(self._on_call)
        sys.settrace(self._on_call)
        self.tracer = "python"

    def _file_key(self, code: CodeType) -> int | None:
        key = self._traced.get(code, -1)
        if key != -1:
            return key  # type: ignore[return-value]
        filename = os.path.abspath(code.co_filename)
        ours = any(filename == p or filename.startswith(p + os.sep) for p in self._paths)
        key = (zlib.crc32(filename.encode("utf-8", "replace")) * 0x9E3779B1) & _PYTHON_MASK if ours else None
        self._traced[code] = key
        return key

    def _on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        key = self._file_key(frame.f_code)
        if key is None:
            return None
        reached = self._reached
        previous = 0

        def on_line(frame: FrameType, event: str, arg: Any) -> Any:
            nonlocal previous
            if event == "line":
                line = frame.f_lineno
                reached[(key ^ (previous << 16) ^ line) & _PYTHON_MASK] = None
                previous = line
            return on_line

        return on_line

    # ----------------------------------------------------------------- native

    def add_native_map(self, counters: memoryview, slot: int | None = None) -> None:
        """Lend a native library's byte map of edge counters (read at each `take`, never written);
        ``slot`` numbers its edges (`harness.tooling.coverage.slot_of`: the same in every process)."""
        import numpy as np

        view = np.frombuffer(counters.cast("B"), np.uint8)  # the map itself, not a copy
        with self._lock:
            self._native.append((len(self._native) if slot is None else slot, view, np.zeros(view.shape, bool)))

    def _read_native(self) -> None:
        # Only the bytes set since the last read become edges: a warm library has thousands set,
        # and making an edge of each at every reply cost more than the call it followed.
        import numpy as np

        reached = self._reached
        for number, counters, read in self._native:
            fresh = np.flatnonzero((counters != 0) & ~read)
            if not fresh.size:
                continue
            read[fresh] = True
            base = NATIVE_BASE + (number << 20)
            for index in fresh.tolist():
                reached[(base + index) % _EDGE_LIMIT] = None

    # ----------------------------------------------------------------- replies

    def take(self) -> tuple[int, ...]:
        """The edges reached since the last call (each reported once, at most
        `MAX_EDGES_PER_REPLY` a call: the rest go with the next)."""
        with self._lock:
            if self._native:
                self._read_native()
            if len(self._reached) == self._reported:
                return ()
            edges = list(self._reached)[self._reported:self._reported + MAX_EDGES_PER_REPLY]
            self._reported += len(edges)
            return tuple(edges)


def valid_edges(value: Any) -> tuple[int, ...] | None:
    """``value`` as a reply's edges, if it is what a service sends (a tuple of at most
    `MAX_EDGES_PER_REPLY` ints in 0..2**32-1); None when it is not."""
    if type(value) is not tuple or len(value) > MAX_EDGES_PER_REPLY:
        return None
    for edge in value:
        if type(edge) is not int or not 0 <= edge < _EDGE_LIMIT:
            return None
    return value


class ReceivedCoverage:
    """The edges the harness's connections received, in this process: the fuzz loop asks, after
    each input, which of them it had not seen before."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[int] = []
        self.replies_refused = 0

    def add(self, value: Any) -> None:
        edges = valid_edges(value)
        if edges is None:
            with self._lock:
                self.replies_refused += 1
            return
        if edges:
            with self._lock:
                self._pending.extend(edges)

    def take(self) -> list[int]:
        """The edges received since the last call."""
        with self._lock:
            edges, self._pending = self._pending, []
        return edges


#: What this process's connections received.
RECEIVED = ReceivedCoverage()
