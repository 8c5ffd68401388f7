"""Each packed-function test runs once per tvm-ffi library the driver declares (``packed_library``)."""

from __future__ import annotations

import pytest

from harness.native.packed import LoadedLibrary, PackedFunctionLibrary, load, unavailable


def _declared(config: pytest.Config) -> list[PackedFunctionLibrary]:
    cached = getattr(config, "_harness_packed_libraries", None)
    if cached is None:
        from harness.errors import HarnessError
        from harness.pytest_plugin import state_of

        state = state_of(config)
        try:
            spec = state.resolve()
            cached = state.registry.packed_function_libraries(spec.name) if state.registry is not None else []
        except HarnessError:
            cached = []  # the driver fixture reports a bad --driver
        config._harness_packed_libraries = cached
    return cached


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "packed_library" in metafunc.fixturenames:
        chosen = _declared(metafunc.config)
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
