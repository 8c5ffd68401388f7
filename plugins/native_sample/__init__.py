"""The sample native driver (C++, tvm-ffi) as a registered driver: ``native-sample``.

Built at first use from ``driver.cc`` with ``tvm_ffi.cpp.build`` and cached; seeded-bug
versions are the same source built with a ``-DNATIVE_MUTANT_...`` flag.
"""

from __future__ import annotations

import functools
from pathlib import Path

from harness import DriverSpec, hookimpl

SOURCE = Path(__file__).parent / "driver.cc"


def build_sample(flags: tuple[str, ...] = ()) -> str:
    """The path of the sample driver's library built with ``flags`` (instrumented when the harness
    asks for coverage: `harness.tooling.coverage`)."""
    from harness.tooling.coverage import requested

    return _built_sample(tuple(flags), requested())


@functools.lru_cache(maxsize=None)
def _built_sample(flags: tuple[str, ...], coverage: bool) -> str:
    from harness.api.errors import DriverLoadError
    from harness.tooling.build import build_with_tvm_ffi

    name = "native_sample" + "".join("_" + f.removeprefix("-D").lower() for f in flags)
    try:
        return build_with_tvm_ffi(name, [str(SOURCE)], flags, coverage=coverage)
    except ImportError:
        raise DriverLoadError("the native sample needs apache-tvm-ffi (pip install 'driver-harness[native]')") from None


def sample_device(flags: tuple[str, ...] = ()):
    from harness.drivers.native import NativeDevice

    return NativeDevice(build_sample(flags))


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    return [DriverSpec("native-sample", sample_device, "sample native driver in C++ through tvm-ffi: ADD and MUL, "
                                                       "FLOAT32 and INT32 tensors, memory pools")]
