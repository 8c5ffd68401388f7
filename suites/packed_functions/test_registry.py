"""FFI-1: the global registry: a missing name gives none, a duplicate registration fails unless
override is asked, and an override replaces the function."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.errors import calls_into_driver
from harness.api.packed import PROBES
from harness.judging.verdict import require

# the driver's code runs in this process: each test makes its call in a forked child (a crash is reported)
pytestmark = pytest.mark.in_forked_child


@pytest.mark.requirement("FFI-1")
def test_every_probe_is_registered_under_the_prefix(probes) -> None:
    import tvm_ffi

    missing = [name for name in PROBES if tvm_ffi.get_global_func(probes.library.prefix + name, allow_missing=True) is None]
    require(not missing, "FFI-1", f"{', '.join(missing)} not registered under {probes.library.prefix!r} "
                                  f"(the probes: {', '.join(PROBES)})")
    for name in PROBES:
        require(callable(probes.functions[name]), "FFI-1", f"{name} is registered as {probes.functions[name]!r}, "
                                                           f"which is not callable")


@pytest.mark.requirement("FFI-1")
@given(suffix=st.text(min_size=1, max_size=30))
def test_missing_name_gives_none_and_raises_only_when_asked(probes, suffix) -> None:
    import tvm_ffi

    name = probes.library.prefix + "missing." + suffix
    require(tvm_ffi.get_global_func(name, allow_missing=True) is None, "FFI-1", f"{name!r} looked up as present")
    with pytest.raises(Exception):  # FFI-1 asks that it raise, not in what words (tvm-ffi's own)
        tvm_ffi.get_global_func(name)


@pytest.mark.requirement("FFI-1")
def test_duplicate_registration_fails_and_override_replaces(probes) -> None:
    import tvm_ffi

    name = probes.library.prefix + "echo"
    original = tvm_ffi.get_global_func(name)

    def echo(value: int):  # what the registry holds under the name now, called as the driver's code
        return calls_into_driver(tvm_ffi.get_global_func(name))(value)

    with pytest.raises(Exception):  # what it says is tvm-ffi's; that nothing changed is checked below
        tvm_ffi.register_global_func(name, lambda value: "replacement")
    require(echo(7) == 7, "FFI-1", "a failed registration changed the registry")
    try:
        tvm_ffi.register_global_func(name, lambda value: "replacement", override=True)
        require(echo(7) == "replacement", "FFI-1", "override did not replace the function")
    finally:
        tvm_ffi.register_global_func(name, original, override=True)
    require(echo(7) == 7, "FFI-1", "overriding back did not restore the function")
