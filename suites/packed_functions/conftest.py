"""Each packed-function test runs once per tvm-ffi library the driver declares (``packed_library``)."""

from __future__ import annotations

import pytest

from harness.native.packed import LoadedLibrary, PackedFunctionLibrary, load, unavailable
from harness.pytest_plugin import declared_for_driver


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "packed_library" in metafunc.fixturenames:
        chosen = declared_for_driver(metafunc.config, "packed_function_libraries")
        metafunc.parametrize("packed_library", chosen, ids=[library.prefix for library in chosen])


@pytest.fixture
def probes(packed_library: PackedFunctionLibrary, driver) -> LoadedLibrary:
    """The library's probe functions, loaded into this process (tvm-ffi calls are in-process)."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    from harness.native import CompilerMissing

    try:
        return load(packed_library)
    except CompilerMissing as error:
        pytest.skip(f"the packed-function library cannot be built: {error}")
