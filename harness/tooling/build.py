"""Build a shared library from C sources with the system compiler, once, and cache it.

The cache key is a hash of the sources, the headers they include from the same
directory, the flags and the compiler's version, so an edited source or a different
compiler builds anew while repeated runs (and every service process) reuse the library.
The library is written to a temporary name and renamed into place: processes that build
the same library at once never load a half-written file.

When the harness asks for the driver's coverage, a build of the driver's code is instrumented
(`harness.tooling.coverage`): its flags and sources gain the instrumentation and its runtime, and
so does its key.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness.api.errors import HarnessError
from harness.tooling.coverage import INSTRUMENTATION_FLAGS, RUNTIME, instrumented


class CompilerMissing(HarnessError):
    """No C compiler on this machine: native targets cannot be built."""


class BuildFailed(HarnessError):
    """The compiler rejected a source; the message holds its diagnostics."""


def cache_directory() -> Path:
    base = os.environ.get("DRIVER_HARNESS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "driver-harness")
    return Path(base) / "native"


def find_compiler(language: str = "c") -> str:
    if language == "c++":
        candidates, what = (os.environ.get("CXX"), "c++", "g++", "clang++"), "C++ compiler (set CXX, or install g++ or clang++)"
    else:
        candidates, what = (os.environ.get("CC"), "cc", "gcc", "clang"), "C compiler (set CC, or install gcc or clang)"
    for candidate in candidates:
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)  # type: ignore[return-value]
    raise CompilerMissing(f"no {what} found to build native targets")


def _compiler_identity(compiler: str) -> bytes:
    try:
        return subprocess.run([compiler, "--version"], capture_output=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return compiler.encode()


def _build_key(sources: Sequence[Path], include_dirs: Sequence[Path], settings: Sequence[str | bytes]) -> str:
    """A short digest of what goes into a build: the sources' text, the headers of their directories
    and of ``include_dirs``, and ``settings`` (flags, the compiler's or a library's version)."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.read_bytes())
    for directory in sorted({s.parent for s in sources} | set(include_dirs)):
        for header in sorted([*directory.glob("*.h"), *directory.glob("*.hpp")]):
            digest.update(header.read_bytes())
    for setting in settings:
        digest.update((setting if isinstance(setting, bytes) else setting.encode()) + b"\0")
    return digest.hexdigest()[:16]


def build_shared_library(name: str, sources: Sequence[str | Path], flags: Sequence[str] = (),
                         include_dirs: Sequence[str | Path] = (), compiler: str | None = None,
                         language: str = "c", coverage: bool | None = None) -> Path:
    """The path of ``name``'s shared library built from ``sources`` with ``flags``; instrumented
    for coverage when ``coverage`` says so (None: when the harness asks for the driver's coverage;
    False for the harness's own code)."""
    compiler = compiler or find_compiler(language)
    source_paths = [Path(s).resolve() for s in sources]
    if instrumented(coverage):
        source_paths.append(RUNTIME)
        flags = [*flags, *INSTRUMENTATION_FLAGS]
    include_paths = [Path(d).resolve() for d in include_dirs]
    flags = [*flags, *(f"-I{d}" for d in include_paths)]
    # C++ builds include headers (XLA's) whose warnings are not ours to fix.  No -g: nothing reads
    # the debug information, and it was a third of a C++ build against XLA's headers (7.5 s against
    # 4.8 s), which a fresh machine makes about ten of in a test run.
    dialect = ["-std=c++17"] if language == "c++" else ["-Wall", "-Werror=implicit-function-declaration"]
    options = ["-x", language, *dialect, "-O2", "-shared", "-fPIC", *flags]
    key = _build_key(source_paths, include_paths, [*options, _compiler_identity(compiler)])
    target = cache_directory() / f"{name}-{key}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, partial = tempfile.mkstemp(prefix=f".{name}-", suffix=".so", dir=target.parent)
    os.close(descriptor)
    command = [compiler, *options, *map(str, source_paths), "-o", partial]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise BuildFailed(f"building {name} failed:\n$ {' '.join(command)}\n{done.stderr.strip()}")
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


def build_with_tvm_ffi(name: str, sources: list[str], flags: tuple[str, ...] = (), coverage: bool | None = None) -> str:
    """Build a C++ library against tvm-ffi's headers with ``tvm_ffi.cpp.build`` (cached);
    instrumented for coverage as `build_shared_library` says."""
    import tvm_ffi.cpp

    # Its build file names the sources by path, so the build is made from copies of them inside its
    # own directory, one per source text, flags and tvm-ffi version: every checkout of the same
    # source (a CI clone beside the working tree) shares it.  Keyed by the checkouts' paths, each
    # clone rebuilt every library (about 5 s each, fourteen seeded bugs among them); sharing one
    # directory per name alone, two checkouts rebuilt each other's.
    source_paths = [Path(s).resolve() for s in sources]
    if instrumented(coverage):
        source_paths.append(RUNTIME)
        flags = (*flags, *INSTRUMENTATION_FLAGS)
    key = _build_key(source_paths, (), [*flags, str(tvm_ffi.__version__)])
    directory = cache_directory() / "tvm-ffi" / f"{name}-{key}"
    copied = _copies_in(directory / "sources", source_paths)
    return tvm_ffi.cpp.build(name, sources=copied, extra_cflags=list(flags), build_directory=str(directory))


def _copies_in(where: Path, sources: Sequence[Path]) -> list[str]:
    """Copies of ``sources`` under ``where``, each beside copies of its directory's headers (so an
    ``#include "x.h"`` finds its own), written atomically when missing: their text is part of the
    build's key, so a copy that exists is the same text, and no build reads one half written."""
    directories = list(dict.fromkeys(source.parent for source in sources))
    copied = []
    for number, directory in enumerate(directories):
        target = where / str(number)
        target.mkdir(parents=True, exist_ok=True)
        for header in [*directory.glob("*.h"), *directory.glob("*.hpp")]:
            _copy_once(header, target / header.name)
    for source in sources:
        copied.append(_copy_once(source, where / str(directories.index(source.parent)) / source.name))
    return copied


def _copy_once(source: Path, copy: Path) -> str:
    if not copy.exists():
        descriptor, partial = tempfile.mkstemp(prefix=f".{copy.name}-", dir=copy.parent)
        with os.fdopen(descriptor, "wb") as f:
            f.write(source.read_bytes())
        os.replace(partial, copy)
    return str(copy)
