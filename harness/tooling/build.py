"""Build a shared library from C sources with the system compiler, once, and cache it.

The cache key is a hash of the sources, the headers they include from the same
directory, the flags and the compiler's version, so an edited source or a different
compiler builds anew while repeated runs (and every service process) reuse the library.
The library is written to a temporary name and renamed into place: processes that build
the same library at once never load a half-written file.
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
                         language: str = "c") -> Path:
    """The path of ``name``'s shared library built from ``sources`` with ``flags``."""
    compiler = compiler or find_compiler(language)
    source_paths = [Path(s).resolve() for s in sources]
    include_paths = [Path(d).resolve() for d in include_dirs]
    flags = [*flags, *(f"-I{d}" for d in include_paths)]
    key = _build_key(source_paths, include_paths, [*flags, _compiler_identity(compiler)])
    target = cache_directory() / f"{name}-{key}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, partial = tempfile.mkstemp(prefix=f".{name}-", suffix=".so", dir=target.parent)
    os.close(descriptor)
    # C++ builds include headers (XLA's) whose warnings are not ours to fix.
    dialect = ["-std=c++17"] if language == "c++" else ["-Wall", "-Werror=implicit-function-declaration"]
    command = [compiler, "-x", language, *dialect, "-O2", "-g", "-shared", "-fPIC", *flags, *map(str, source_paths), "-o", partial]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise BuildFailed(f"building {name} failed:\n$ {' '.join(command)}\n{done.stderr.strip()}")
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


def build_with_tvm_ffi(name: str, sources: list[str], flags: tuple[str, ...] = ()) -> str:
    """Build a C++ library against tvm-ffi's headers with ``tvm_ffi.cpp.build`` (cached)."""
    import tvm_ffi.cpp

    # Its build file names the sources by path: a directory per name alone was rebuilt whenever a
    # second checkout (a CI clone beside the working tree) built the same name, each undoing the
    # other's build.  So the sources' paths are part of the key, besides what goes into the build.
    source_paths = [Path(s).resolve() for s in sources]
    key = _build_key(source_paths, (), [*map(str, source_paths), *flags, str(tvm_ffi.__version__)])
    directory = cache_directory() / "tvm-ffi" / f"{name}-{key}"
    directory.mkdir(parents=True, exist_ok=True)
    return tvm_ffi.cpp.build(name, sources=sources, extra_cflags=list(flags), build_directory=str(directory))
