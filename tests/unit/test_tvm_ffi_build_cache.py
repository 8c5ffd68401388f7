"""A tvm-ffi library is built once per source text, flags and tvm-ffi version, whatever checkout
holds the source: a CI clone beside the working tree reuses the working tree's build.

Keyed by the checkout's path as well, every clone rebuilt every library (the reference's probes,
fourteen seeded bugs and the native sample: about 5 s each on a 2-core machine)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("tvm_ffi")

from harness.tooling.build import build_with_tvm_ffi  # noqa: E402

_SOURCE = """\
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include "answer.h"

namespace { int64_t Answer() { return ANSWER; } }

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("driver_harness_test_cache.answer", Answer);
}
"""


def _checkout(where: Path) -> Path:
    where.mkdir()
    (where / "answer.h").write_text("#define ANSWER 42\n")
    (where / "answer.cc").write_text(_SOURCE)
    return where / "answer.cc"


def test_a_second_checkout_of_the_same_source_reuses_the_build(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DRIVER_HARNESS_CACHE", str(tmp_path / "cache"))
    first = build_with_tvm_ffi("cache_probe", [str(_checkout(tmp_path / "tree"))])
    built = os.stat(first).st_mtime_ns
    clone = _checkout(tmp_path / "clone")
    second = build_with_tvm_ffi("cache_probe", [str(clone)])
    assert second == first, "a clone of the same source got a build of its own"
    assert os.stat(second).st_mtime_ns == built, "the clone's build rebuilt the library"
    # What goes into the build is still the key: a header changed in the clone is a build of its own.
    (tmp_path / "clone" / "answer.h").write_text("#define ANSWER 43\n")
    assert build_with_tvm_ffi("cache_probe", [str(clone)]) != first, "a changed header reused the old build"
    # The local header was found beside the copy the build compiled, and the library loads.
    shutil.rmtree(tmp_path / "tree")
    shutil.rmtree(tmp_path / "clone")
    import tvm_ffi

    tvm_ffi.load_module(second)
    assert tvm_ffi.get_global_func("driver_harness_test_cache.answer")() == 42
