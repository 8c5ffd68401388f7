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


def build_shared_library(name: str, sources: Sequence[str | Path], flags: Sequence[str] = (),
                         include_dirs: Sequence[str | Path] = (), compiler: str | None = None,
                         language: str = "c") -> Path:
    """The path of ``name``'s shared library built from ``sources`` with ``flags``."""
    compiler = compiler or find_compiler(language)
    source_paths = [Path(s).resolve() for s in sources]
    include_paths = [Path(d).resolve() for d in include_dirs]
    digest = hashlib.sha256()
    for source in source_paths:
        digest.update(source.read_bytes())
    for directory in sorted({s.parent for s in source_paths} | set(include_paths)):
        for header in sorted(directory.glob("*.h")):
            digest.update(header.read_bytes())
    flags = [*flags, *(f"-I{d}" for d in include_paths)]
    digest.update("\0".join(flags).encode())
    digest.update(_compiler_identity(compiler))
    target = cache_directory() / f"{name}-{digest.hexdigest()[:16]}.so"
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
    import tvm_ffi
    import tvm_ffi.cpp

    # Its build file names the sources by path: a directory per name alone was rebuilt whenever a
    # second checkout (a CI clone beside the working tree) built the same name, each undoing the
    # other's build.  One per what goes into the build: sources (path and text), their
    # directories' headers, flags and tvm-ffi's version.
    source_paths = [Path(s).resolve() for s in sources]
    digest = hashlib.sha256()
    for source in source_paths:
        digest.update(str(source).encode() + b"\0" + source.read_bytes())
    for directory in sorted({s.parent for s in source_paths}):
        for header in sorted([*directory.glob("*.h"), *directory.glob("*.hpp")]):
            digest.update(header.read_bytes())
    digest.update("\0".join([*flags, str(tvm_ffi.__version__)]).encode())
    directory = cache_directory() / "tvm-ffi" / f"{name}-{digest.hexdigest()[:16]}"
    directory.mkdir(parents=True, exist_ok=True)
    return tvm_ffi.cpp.build(name, sources=sources, extra_cflags=list(flags), build_directory=str(directory))
