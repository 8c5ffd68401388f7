"""Each packed-function test runs once per tvm-ffi library the driver declares (``packed_library``)."""

from __future__ import annotations

import pytest

from harness.api.packed import LoadedLibrary, PackedFunctionLibrary, built, load, unavailable
from harness.integration.forked import first_in_child
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


#: How long loading a library (running its static initializers) may take.
LOAD_DEADLINE_S = 60.0
# The libraries loaded once in a forked child: one that crashes there fails its tests on SVC-1.
_loaded_in_a_child: set[PackedFunctionLibrary] = set()


@pytest.fixture
def probes(packed_library: PackedFunctionLibrary, driver) -> LoadedLibrary:
    """The library's probe functions, loaded into this process (tvm-ffi calls are in-process),
    after a first load in a forked child (its static initializers cannot take the harness down)."""
    reason = unavailable()
    if reason:
        not_run(reason, "pip install 'driver-harness[native]'")
    import tvm_ffi

    from harness.tooling import CompilerMissing

    try:
        path = built(packed_library)  # the plugin's build (its code), once per session
        if packed_library not in _loaded_in_a_child:  # its static initializers are the driver's code
            first_in_child(lambda: tvm_ffi.load_module(str(path)), f"loading {path}", LOAD_DEADLINE_S)
            _loaded_in_a_child.add(packed_library)
        return load(packed_library)
    except CompilerMissing as error:
        not_run(f"the packed-function library cannot be built: {error}",
                "install a C++ compiler (Debian: apt-get install g++) or set CXX to one")
