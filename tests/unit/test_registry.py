"""Driver discovery: plugins validated at start-up, references resolved, clear errors."""

from __future__ import annotations

import types

import pytest

from harness import DriverSpec, hookimpl
from harness.api.errors import DriverLoadError, UsageError
from harness.drivers.registry import load_registry
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


def _declaring(**hooks) -> tuple:
    from harness import Capabilities

    caps = hooks.pop("capabilities", None)
    vendor = plugin("vendor_plugin", harness_register_drivers=lambda: [DriverSpec("npu", ReferenceDevice, capabilities=caps)],
                    **hooks)
    registry = load_registry([vendor], entry_points=False, repo_plugins=False)
    return registry, registry.resolve("npu"), Capabilities


from harness.api.custom_calls import CaseSpace, Choice, Integers, Opaque, OperandShapes, Text  # noqa: E402  (the declarations the targets below use)


def _valid_target(**changes):
    import dataclasses

    from harness.api.custom_calls import CaseSpace, CustomCallTarget

    target = CustomCallTarget("t", "Host", "host", "/lib.so", "sym", reference=lambda o, b: None,
                              cases=CaseSpace({}, lambda: None))
    return dataclasses.replace(target, **changes)


@pytest.mark.parametrize("target, field, allowed", [
    (_valid_target(convention="hots"), "convention", "host, host-unified, device, device-status"),
    (_valid_target(name=""), "name", "a non-empty string"),
    (_valid_target(reference=None), "reference", "a callable"),
    (_valid_target(error=lambda b: "x"), "convention", "host-unified, device-status"),
    (_valid_target(cases=lambda: None), "cases", "CaseSpace"),
    (_valid_target(cases=CaseSpace({"n": range(3)}, lambda n: None)), "cases.parameters['n']", "Choice, Integers"),
    # a space no case can be drawn from: said at start-up, not raised from inside a draw
    (_valid_target(cases=CaseSpace({"d": Choice(())}, lambda d: None)), "cases.parameters['d'].values", "a non-empty tuple"),
    (_valid_target(cases=CaseSpace({"d": Choice(["f32"])}, lambda d: None)), "cases.parameters['d'].values", "tuple"),
    (_valid_target(cases=CaseSpace({"n": Integers(((300, 0),))}, lambda n: None)), "cases.parameters['n'].ranges",
     "low <= high"),
    (_valid_target(cases=CaseSpace({"n": Integers(())}, lambda n: None)), "cases.parameters['n'].ranges", "non-empty"),
    (_valid_target(cases=CaseSpace({"n": Integers((5,))}, lambda n: None)), "cases.parameters['n'].ranges", "pairs"),
    (_valid_target(cases=CaseSpace({"t": Text(((-1, 4),))}, lambda t: None)), "cases.parameters['t'].lengths",
     "0 <= low <= high"),
    (_valid_target(cases=CaseSpace({"o": Opaque(0)}, lambda o: None)), "cases.parameters['o'].max_size", "1 or more"),
    (_valid_target(cases=CaseSpace({"s": OperandShapes((3, 1), 2, 4)}, lambda s: None)), "cases.parameters['s'].count",
     "0 <= low <= high"),
    (_valid_target(cases=CaseSpace({"s": OperandShapes((1, 3), 2, 0)}, lambda s: None)), "cases.parameters['s'].max_side",
     "1 or more"),
    ("not a target", "item", "CustomCallTarget"),
])
def test_an_invalid_custom_call_target_names_plugin_field_and_allowed_values(target, field, allowed) -> None:
    from harness.api.errors import DeclarationError

    registry, spec, _ = _declaring(harness_custom_call_targets=lambda driver_name: [target])
    with pytest.raises(DeclarationError) as error:
        registry.check_declarations(spec)
    message = str(error.value)
    assert error.value.plugin == "vendor_plugin" and error.value.field == field and "\n" not in message
    assert "plugin vendor_plugin" in message and repr(field) in message and allowed in message


def test_invalid_capabilities_and_libraries_name_the_field() -> None:
    from harness.api.errors import DeclarationError
    from harness.api.hal import OperationType
    from harness.api.packed import PackedFunctionLibrary

    _, _, Capabilities = _declaring()
    wrong_kind = Capabilities(frozenset({"ashmem", "dmabuf"}), True, frozenset({OperationType.ADD}), frozenset())
    registry, spec, _ = _declaring(capabilities=wrong_kind)
    with pytest.raises(DeclarationError, match="field 'memory_kinds' is 'dmabuf'; allowed: ashmem, mmap_fd"):
        registry.check_declarations(spec)
    not_an_op = Capabilities(frozenset({"ashmem"}), True, frozenset({"ADD"}), frozenset())
    registry, spec, _ = _declaring(capabilities=not_an_op)
    with pytest.raises(DeclarationError, match="field 'operations' is 'ADD'; allowed: ADD, "):
        registry.check_declarations(spec)
    registry, spec, _ = _declaring(harness_packed_functions=lambda driver_name: [PackedFunctionLibrary("", lambda: "x")])
    with pytest.raises(DeclarationError, match="field 'prefix' is ''"):
        registry.check_declarations(spec)
    registry, spec, _ = _declaring(harness_packed_functions=lambda driver_name: {"not": "a list"})
    with pytest.raises(DeclarationError, match="'return value' is 'dict'; allowed: a list"):
        registry.check_declarations(spec)


def test_hooks_in_a_driver_file_are_registered(tmp_path) -> None:
    (tmp_path / "vendor.py").write_text(
        "from harness import hookimpl\nfrom reference_driver import ReferenceDevice\n"
        "from harness.api.packed import PackedFunctionLibrary\n"
        "def factory():\n    return ReferenceDevice()\n"
        "@hookimpl\ndef harness_packed_functions(driver_name):\n"
        "    return [PackedFunctionLibrary('vendor.', lambda: 'lib.so')]\n")
    registry = load_registry(entry_points=False, repo_plugins=False)
    spec = registry.resolve(f"{tmp_path / 'vendor.py'}:factory")
    assert [library.prefix for library in registry.packed_function_libraries(spec.name)] == ["vendor."]
    # The declarations are that driver's: another driver of the same registry does not inherit them.
    assert registry.packed_function_libraries("reference") == []


def test_plugins_are_loaded_once_per_process(monkeypatch) -> None:
    """The harness, the zygote and the services forked from it share one registry per process
    (before, the plugins were loaded three times: harness, zygote, and again for custom calls)."""
    import harness.drivers.registry
    from harness.service.custom_calls import executor_for
    from harness.service.worker import Service

    registry = load_registry()
    builds = []
    build = harness.drivers.registry._build
    monkeypatch.setattr(harness.drivers.registry, "_build", lambda *a, **k: builds.append(a) or build(*a, **k))
    executor_for.cache_clear()
    Service(ReferenceDevice(), "reference").custom_calls()  # what a service does at its first custom call
    assert load_registry() is registry and builds == []
    # Asking for a registry of other plugins builds its own and leaves the shared one alone.
    assert load_registry(entry_points=False, repo_plugins=False) is not registry and len(builds) == 1
