"""Driver discovery: plugins validated at start-up, references resolved, clear errors."""

from __future__ import annotations

import types

import pytest

from harness import DriverSpec, hookimpl
from harness.errors import DriverLoadError, UsageError
from harness.registry import load_registry
from reference_driver import ReferenceDevice


def plugin(name: str, **hooks) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, hookimpl(function))
    return module


def test_reference_is_registered_through_its_entry_point() -> None:
    registry = load_registry()
    spec = registry.resolve("reference")
    assert isinstance(spec.create(), ReferenceDevice) and "reference" in spec.plugin


def test_a_typo_in_a_hook_name_is_a_start_up_error_naming_the_plugin() -> None:
    typo = plugin("acme_plugin", harness_register_driver=lambda: [])
    with pytest.raises(DriverLoadError, match="acme_plugin"):
        load_registry([typo], entry_points=False, repo_plugins=False)


def test_duplicate_driver_names_name_both_plugins() -> None:
    first = plugin("first_vendor", harness_register_drivers=lambda: [DriverSpec("npu", ReferenceDevice)])
    second = plugin("second_vendor", harness_register_drivers=lambda: [DriverSpec("npu", ReferenceDevice)])
    with pytest.raises(DriverLoadError, match="first_vendor.*second_vendor"):
        load_registry([first, second], entry_points=False, repo_plugins=False)


@pytest.mark.parametrize("returned, complaint", [
    ("not a list", "must return a list"),
    (["npu"], "not a harness.DriverSpec"),
    ([DriverSpec("npu", None)], "lacks a name or a callable factory"),
])
def test_malformed_registrations_say_what_is_wrong(returned, complaint) -> None:
    bad = plugin("bad_vendor", harness_register_drivers=lambda: returned)
    with pytest.raises(DriverLoadError, match=f"bad_vendor.*{complaint}"):
        load_registry([bad], entry_points=False, repo_plugins=False)


def test_factory_returning_something_else_names_what_it_lacks() -> None:
    spec = DriverSpec("odd", lambda: object(), plugin="odd_vendor")
    with pytest.raises(DriverLoadError, match="lacks capabilities, prepare_model, allocate"):
        spec.create()


def test_unknown_name_lists_available_drivers_and_broken_plugins() -> None:
    registry = load_registry(entry_points=False, repo_plugins=False)
    registry.broken["vendor_x (vendor_x.plugin)"] = "ImportError: libnpu.so not found"
    with pytest.raises(UsageError) as info:
        registry.resolve("npu")
    assert "unknown driver 'npu'" in str(info.value) and "libnpu.so not found" in str(info.value)


def test_module_reference_resolves() -> None:
    spec = load_registry(entry_points=False, repo_plugins=False).resolve("reference_driver:ReferenceDevice")
    assert isinstance(spec.create(), ReferenceDevice)


def test_public_surface_is_exactly_all() -> None:
    import harness

    exported = {name for name in vars(harness) if not name.startswith("_") and not isinstance(getattr(harness, name), types.ModuleType)}
    assert exported == set(harness.__all__) - {"__version__"}
