"""Compiler coverage instrumentation of the libraries the harness builds, and the edge maps of the
instrumented ones this process has loaded.

When the harness asks for the driver's coverage (`COVERAGE_ENVIRONMENT` set to "1", in its own
process and so in every process it starts), what it builds from a driver's sources (native
drivers, custom-call targets, packed-function libraries) is compiled with gcc's
``-fsanitize-coverage=trace-pc`` and linked with the harness's own runtime (`RUNTIME`), which
counts each edge the library runs in a 64 KiB byte map of its own and exports it
(``harness_coverage_map``).  Such builds are cached apart from plain ones: the flag and the
runtime's text are part of the build's key.  With coverage off nothing changes, plain builds
included.

Whoever loads a library the harness built says so with `lend`; an instrumented library's map is
then kept here, with a *slot* taken from its file's name (so the same library has the same slot
in every process), and handed to every `subscribe`-r: the driver service's
`harness.service.coverage.ServiceCoverage`, which reads the maps at each reply.
"""

from __future__ import annotations

import ctypes
import os
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = ["COVERAGE_ENVIRONMENT", "INSTRUMENTATION_FLAGS", "MAP_SLOTS", "RUNTIME", "edge_map", "instrumented",
           "lend", "lent_maps", "lent_paths", "requested", "slot_of", "subscribe"]

#: Set (to "1") in a process's environment when the harness wants the driver's coverage.
COVERAGE_ENVIRONMENT: Final = "DRIVER_HARNESS_COVERAGE"
#: What an instrumented build adds to its compiler flags.
INSTRUMENTATION_FLAGS: Final = ("-fsanitize-coverage=trace-pc",)
#: The runtime an instrumented build compiles with its sources (C, valid as C++ too).
RUNTIME: Final = Path(__file__).parent / "c" / "coverage.c"
#: How many libraries' maps can be told apart: a map's edges are numbered by its slot.
MAP_SLOTS: Final = 2048
_MAP_SYMBOL = "harness_coverage_map"
_MAP_SIZE_LIMIT = 1 << 16

#: A map's consumer: ``add(counters, slot)``.
MapConsumer = Callable[[memoryview, int], None]

_lock = threading.Lock()
_lent: dict[str, tuple[memoryview, int]] = {}
_consumers: list[MapConsumer] = []


def requested() -> bool:
    """Whether the harness asked for coverage (in this process's environment)."""
    return os.environ.get(COVERAGE_ENVIRONMENT) == "1"


def instrumented(coverage: bool | None) -> bool:
    """Whether a build is instrumented: ``coverage``, or when None, whether coverage is `requested`."""
    return requested() if coverage is None else coverage


def slot_of(path: str | os.PathLike[str]) -> int:
    """A library's slot: from the names of its file and its directory, which hold its build's key
    (the cache's own location, which differs between machines, does not count)."""
    resolved = Path(path)
    return zlib.crc32(f"{resolved.parent.name}/{resolved.name}".encode("utf-8", "replace")) % MAP_SLOTS


def edge_map(path: str | os.PathLike[str]) -> memoryview | None:
    """The edge map of the library at ``path`` (loaded here if it is not yet), or None when it was
    not built with coverage (it does not export ``harness_coverage_map``) or cannot be loaded by
    that name (its loader found it by another: it then gives no edges, and fuzzes blind)."""
    try:
        library = ctypes.CDLL(str(path))
    except OSError:
        return None
    function = getattr(library, _MAP_SYMBOL, None)
    if function is None:
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.POINTER(ctypes.c_size_t)]
    size = ctypes.c_size_t(0)
    address = function(ctypes.byref(size))
    if not address or not 0 < size.value <= _MAP_SIZE_LIMIT:  # a map of another shape is not ours
        return None
    return memoryview((ctypes.c_ubyte * size.value).from_address(address)).cast("B")


def lend(path: str | os.PathLike[str]) -> None:
    """Say that this process loaded the library at ``path``: when coverage is requested and the
    library is instrumented, its map goes to every consumer, now and to come."""
    if not requested():
        return
    key = str(path)
    with _lock:
        if key in _lent:
            return
        counters = edge_map(key)
        if counters is None:
            return
        _lent[key] = (counters, slot_of(key))
        consumers = list(_consumers)
    for add in consumers:
        add(counters, slot_of(key))


def subscribe(add: MapConsumer) -> None:
    """Hand ``add`` every map lent so far, and every map lent from now on."""
    with _lock:
        _consumers.append(add)
        lent = list(_lent.values())
    for counters, slot in lent:
        add(counters, slot)


def lent_paths() -> list[str]:
    """The libraries whose maps were lent in this process."""
    with _lock:
        return list(_lent)


def lent_maps(paths: list[str] | None = None) -> list[tuple[memoryview, int]]:
    """The maps lent in this process (of ``paths`` only, when given), with their slots."""
    with _lock:
        return [entry for key, entry in _lent.items() if paths is None or key in paths]
