"""Each packed-function test runs once per tvm-ffi library the driver declares (``packed_library``)."""

from __future__ import annotations

import pytest

from harness.api.packed import LoadedLibrary, PackedFunctionLibrary, load, unavailable
from harness.integration.plugin import declared_for_driver, parametrize_declared
from harness.integration.skips import not_applicable, not_run


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "packed_library" in metafunc.fixturenames:
        chosen = declared_for_driver(metafunc.config, "packed_function_libraries")
        parametrize_declared(metafunc, "packed_library", chosen, [library.prefix for library in chosen])


@pytest.fixture
def packed_library(request: pytest.FixtureRequest, driver) -> PackedFunctionLibrary:
    if request.param is None:
        not_applicable("packed_functions", f"driver {driver.name!r} declares no packed-function library "
                                           "(hook harness_packed_functions)")
    return request.param


@pytest.fixture
def probes(packed_library: PackedFunctionLibrary, driver) -> LoadedLibrary:
    """The library's probe functions: built here (by the plugin's build, in its own process) and
    loaded only in the sandboxed child each test makes its calls in, where its static
    initializers (the driver's code) cannot reach the harness or the run's files."""
    reason = unavailable()
    if reason:
        not_run(reason, "pip install 'driver-harness[native]'")
    from harness.tooling import CompilerMissing

    try:
        return load(packed_library)
    except CompilerMissing as error:
        not_run(f"the packed-function library cannot be built: {error}",
                "install a C++ compiler (Debian: apt-get install g++) or set CXX to one")
