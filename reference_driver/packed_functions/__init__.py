"""The reference driver's packed-function layer (C++, tvm-ffi), built at first use."""

from __future__ import annotations

import functools
from pathlib import Path

from harness.api.packed import PackedFunctionLibrary
from harness.tooling.build import build_with_tvm_ffi

SOURCE = Path(__file__).parent / "sample.cc"


def _build(name: str, prefix: str, flags: tuple[str, ...]) -> str:
    return build_with_tvm_ffi(name, [str(SOURCE)], (f"-DDRIVER_HARNESS_PREFIX_TOKENS={prefix}", *flags))


def packed_library(driver: str, flags: tuple[str, ...] = ()) -> PackedFunctionLibrary:
    """The probes of ``driver`` (prefix ``driver_harness.<driver, as an identifier>.``), built with ``flags``."""
    symbol = "".join(c if c.isalnum() else "_" for c in driver)
    prefix = f"driver_harness.{symbol}."  # identifier characters only: it is passed as bare tokens
    return PackedFunctionLibrary(prefix, functools.partial(_build, f"driver_harness_ffi_{symbol}", prefix, flags),
                                 f"tvm-ffi probes of {driver}")
