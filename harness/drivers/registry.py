"""Driver discovery: load plugins with pluggy, validate them early, resolve ``--driver``."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from pathlib import Path
from types import ModuleType

import pluggy

from harness.api import hookspecs
from harness.api.errors import DeclarationError, DriverLoadError, UsageError
from harness.api.drivers import DriverSpec
from harness.api.hal import Capabilities, Device

if TYPE_CHECKING:  # declaration types, for the signatures (their modules import this one's neighbours)
    from harness.api.custom_calls import CustomCallTarget
    from harness.api.packed import PackedFunctionLibrary

__all__ = ["DriverRegistry", "DriverSpec", "check_capabilities", "load_registry"]

ENTRY_POINT_GROUP = "harness.plugins"
_REPO_PLUGIN_PACKAGE = "harness.plugins"


def _short_traceback(error: BaseException, limit: int = 3) -> str:
    lines = traceback.format_exception(type(error), error, error.__traceback__, limit=-limit)
    return "".join(lines[1:-1]).rstrip()


class DriverRegistry:
    """Every driver registered by the loaded plugins, plus plugins that failed to load."""

    def __init__(self, manager: pluggy.PluginManager, drivers: dict[str, DriverSpec], broken: dict[str, str]) -> None:
        self.manager = manager
        self.drivers = drivers
        self.broken = broken
        # Modules of ``module:factory`` and ``file.py:factory`` drivers: their hooks declare for
        # that driver only, although the (shared) manager holds them all.
        self._driver_modules: set[str] = set()

    def names(self) -> list[str]:
        return sorted(self.drivers)

    def resolve(self, name: str) -> DriverSpec:
        """A registered name, ``package.module:factory`` or ``path/to/file.py:factory``."""
        if name in self.drivers:
            return self.drivers[name]
        if name.startswith("native:"):
            return _native_spec(name)
        if ":" in name:
            spec, module = _spec_from_reference(name)
            self._register_hooks_of(module, spec.plugin)
            return spec
        if name.endswith(".py"):  # a file without its factory: the registered names are beside the point
            found = _public_callables(_import_file(Path(name)))
            raise UsageError(f"--driver={name}: name the factory that makes the driver, --driver={name}:FACTORY; "
                             f"the file has: {', '.join(found) or 'no function'}")
        lines = [f"unknown driver {name!r}.", f"Available drivers: {', '.join(self.names()) or '(none)'}."]
        for plugin, error in sorted(self.broken.items()):
            lines.append(f"Plugin {plugin} failed to load and may have provided it: {error}")
        lines.append("Use --driver=NAME, --driver=package.module:factory or --driver=path/to/file.py:factory.")
        raise UsageError("\n".join(lines))


    def _register_hooks_of(self, module: ModuleType, label: str) -> None:
        """A ``module:factory`` or ``file.py:factory`` driver declares what a packaged plugin can:
        the hook implementations in its module are registered (custom-call targets, packed
        functions, expectations), and checked like any plugin's."""
        if self.manager.is_registered(module):
            return
        try:
            self.manager.register(module, name=label)
            self._driver_modules.add(label)
            self.manager.check_pending()
        except ValueError:  # already registered under this label (the same file loaded again)
            return
        except pluggy.PluginValidationError as error:
            raise DriverLoadError(f"plugin {label}: {error}") from None

    def custom_call_targets(self, name: str) -> list[CustomCallTarget]:
        """The custom-call targets plugins declare for driver ``name``, checked early."""
        from harness.api.custom_calls import check_target

        return self._checked("harness_custom_call_targets", name, check_target)

    def packed_function_libraries(self, name: str) -> list[PackedFunctionLibrary]:
        """The tvm-ffi libraries plugins declare for driver ``name``, checked early."""
        from harness.api.packed import check_library

        return self._checked("harness_packed_functions", name, check_library)

    def _checked(self, hook: str, name: str, check: Callable[[Any, str], None]) -> list[Any]:
        found = []
        for plugin, declared in self._declared(hook, name):
            for item in declared:
                check(item, plugin)
                found.append(item)
        return found

    def check_declarations(self, spec: DriverSpec) -> None:
        """Everything the plugins declare for ``spec``, checked before anything runs: a broken
        declaration is a `DeclarationError` (one line, exit 2), never a silent skip."""
        if spec.capabilities is not None:
            check_capabilities(spec.capabilities, spec.plugin or "?", f"driver {spec.name!r}")
        self.custom_call_targets(spec.name)
        self.packed_function_libraries(spec.name)

    def _declared(self, hook: str, name: str) -> list[tuple[str, list]]:
        found = []
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            if impl.plugin_name in self._driver_modules and not name.startswith(impl.plugin_name + ":"):
                continue  # another module:factory driver's declarations
            try:
                declared = impl.function(driver_name=name)
            except Exception as error:
                raise DriverLoadError(f"plugin {impl.plugin_name}: {hook} raised {type(error).__name__}: {error}") from None
            if declared is None:
                continue
            if not isinstance(declared, (list, tuple)):
                raise DeclarationError(impl.plugin_name, hook, "return value", type(declared).__name__, "a list")
            found.append((impl.plugin_name, list(declared)))
        return found


def check_capabilities(capabilities: object, plugin: str, declared: str) -> None:
    """A driver's declared capabilities: every field of the right type and within its closed set."""
    from harness.api.hal import OperandType, OperationType
    from harness.api.memory import MEMORY_KINDS

    if not isinstance(capabilities, Capabilities):
        raise DeclarationError(plugin, declared, "capabilities", type(capabilities).__name__, "a harness.Capabilities")
    what = f"{declared} capabilities"
    for field_name, members, allowed in (
        ("memory_kinds", capabilities.memory_kinds, MEMORY_KINDS),
        ("operations", capabilities.operations, tuple(OperationType)),
        ("operand_types", capabilities.operand_types, tuple(OperandType)),
    ):
        if not isinstance(members, (set, frozenset)):
            raise DeclarationError(plugin, what, field_name, members, "a frozenset")
        for member in members:
            if member not in allowed or (field_name != "memory_kinds" and not isinstance(member, type(allowed[0]))):
                names = ", ".join(a if isinstance(a, str) else a.name for a in allowed)
                raise DeclarationError(plugin, what, field_name, member, names)
    for field_name in ("memory_domains", "dynamic_buffers"):
        if not isinstance(getattr(capabilities, field_name), bool):
            raise DeclarationError(plugin, what, field_name, getattr(capabilities, field_name), "True or False")
    pairs = capabilities.operation_types
    if not isinstance(pairs, tuple) or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
        raise DeclarationError(plugin, what, "operation_types", pairs, "a tuple of (OperationType, frozenset of OperandType)")
    for operation, types in pairs:
        if not isinstance(operation, OperationType):
            raise DeclarationError(plugin, what, "operation_types", operation, ", ".join(o.name for o in OperationType))
        if not isinstance(types, (set, frozenset)) or not all(isinstance(t, OperandType) for t in types):
            raise DeclarationError(plugin, what, "operation_types", types, "a frozenset of OperandType: "
                                   + ", ".join(t.name for t in OperandType))


_loaded: DriverRegistry | None = None
_loading = threading.Lock()


def load_registry(extra_plugins: Iterable[object] = (), *, entry_points: bool = True, repo_plugins: bool = True) -> DriverRegistry:
    """The drivers of every plugin: entry points of group ``harness.plugins`` and the modules of
    the harness's own ``harness.plugins`` package, plus ``extra_plugins``.

    The default set is loaded once per process and shared (the harness, the zygote, and the
    services forked from it, which inherit it); asking for extra plugins or fewer sources
    builds a registry of its own."""
    global _loaded
    if extra_plugins or not entry_points or not repo_plugins:
        return _build(extra_plugins, entry_points=entry_points, repo_plugins=repo_plugins)
    with _loading:
        if _loaded is None:
            _loaded = _build((), entry_points=True, repo_plugins=True)
        return _loaded


def plugin_sources(*, entry_points: bool = True, repo_plugins: bool = True) -> list[tuple[str, Callable[[], object]]]:
    """Every plugin there is to load, by label, with what loads it: listed without importing any
    (an entry point's label is ``name (module)``; a module of the harness's own plugins package,
    its module name)."""
    sources: list[tuple[str, Callable[[], object]]] = []
    if entry_points:
        sources += [(f"{entry_point.name} ({entry_point.value})", entry_point.load)
                    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]
    if repo_plugins:
        sources += [(name, functools.partial(importlib.import_module, name)) for name in _repo_plugin_modules()]
    return sources


def load_plugins(labels: Iterable[str] | None = None, skip: Iterable[str] = (),
                 announce: Callable[[str], None] | None = None) -> DriverRegistry:
    """A registry of the plugins named by ``labels`` (all, if None) but those in ``skip``, each
    ``announce``d before it is loaded: a plugin that ends the process while loading is named by
    the last announcement.  Only in a process the driver may own: a catalog probe, a zygote."""
    wanted = None if labels is None else set(labels)
    skipped = set(skip)
    manager = pluggy.PluginManager("harness")
    manager.add_hookspecs(hookspecs)
    broken: dict[str, str] = {}
    for label, load in plugin_sources():
        if (wanted is None or label in wanted) and label not in skipped:
            if announce is not None:
                announce(label)
            _register(manager, label, load, broken)
    return _checked_registry(manager, broken)


def _build(extra_plugins: Iterable[object], *, entry_points: bool, repo_plugins: bool) -> DriverRegistry:
    manager = pluggy.PluginManager("harness")
    manager.add_hookspecs(hookspecs)
    broken: dict[str, str] = {}
    for label, load in plugin_sources(entry_points=entry_points, repo_plugins=repo_plugins):
        _register(manager, label, load, broken)
    for plugin in extra_plugins:
        _register(manager, getattr(plugin, "__name__", repr(plugin)), functools.partial(_itself, plugin), broken)
    return _checked_registry(manager, broken)


def _checked_registry(manager: pluggy.PluginManager, broken: dict[str, str]) -> DriverRegistry:
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as error:
        raise DriverLoadError(f"plugin {error.plugin!r} declares a hook the harness does not know: {error}") from None
    return DriverRegistry(manager, _collect_drivers(manager), broken)


def _itself(plugin: object) -> object:
    return plugin


def _repo_plugin_modules() -> list[str]:
    try:
        package = importlib.import_module(_REPO_PLUGIN_PACKAGE)
    except ImportError:
        return []
    prefix = package.__name__ + "."
    return sorted(info.name for info in pkgutil.walk_packages(package.__path__, prefix) if not info.name.rsplit(".", 1)[-1].startswith("_"))


def _register(manager: pluggy.PluginManager, label: str, load: Callable[[], object], broken: dict[str, str]) -> None:
    try:
        plugin = load()
    except Exception as error:  # a broken plugin must not hide the others; it is reported by name
        broken[label] = f"{type(error).__name__}: {error}"
        return
    if manager.is_registered(plugin):
        return
    try:
        manager.register(plugin, name=label)
    except ValueError:  # the same module registered under another label (entry point and repo scan)
        return
    except pluggy.PluginValidationError as error:
        raise DriverLoadError(f"plugin {label}: {error}") from None


def _collect_drivers(manager: pluggy.PluginManager) -> dict[str, DriverSpec]:
    drivers: dict[str, DriverSpec] = {}
    for impl in manager.hook.harness_register_drivers.get_hookimpls():
        plugin = manager.get_name(impl.plugin) or repr(impl.plugin)
        try:
            specs = impl.function()
        except Exception as error:
            raise DriverLoadError(f"plugin {plugin}: harness_register_drivers raised {type(error).__name__}: {error}") from None
        if not isinstance(specs, (list, tuple)):
            raise DriverLoadError(f"plugin {plugin}: harness_register_drivers must return a list of DriverSpec, got {type(specs).__name__}")
        for spec in specs:
            if not isinstance(spec, DriverSpec):
                raise DriverLoadError(f"plugin {plugin}: registered {spec!r}, which is not a harness.DriverSpec")
            if not spec.name or not callable(spec.factory):
                raise DriverLoadError(f"plugin {plugin}: driver {spec.name!r} lacks a name or a callable factory")
            if spec.name in drivers:
                raise DriverLoadError(
                    f"driver name {spec.name!r} is registered twice: by {drivers[spec.name].plugin} and by {plugin}"
                )
            drivers[spec.name] = dataclasses.replace(spec, plugin=plugin)
    return drivers


def _native_spec(reference: str) -> DriverSpec:
    """``native:path/to/libdriver.so``: a shared library that exports the native ABI (tvm-ffi)."""
    path = Path(reference.split(":", 1)[1]).expanduser()
    if not path.is_file():
        raise UsageError(f"--driver={reference}: no such library {str(path)!r}")

    def factory() -> Device:
        from harness.drivers.native import NativeDevice

        return NativeDevice(str(path.resolve()))

    return DriverSpec(reference, factory, f"native driver {path.name} (tvm-ffi)", plugin="native")


def _spec_from_reference(reference: str) -> tuple[DriverSpec, ModuleType]:
    target, _, attribute = reference.rpartition(":")
    if target.endswith(".py") or "/" in target:
        module = _import_file(Path(target))
    else:
        try:
            module = importlib.import_module(target)
        except Exception as error:
            raise DriverLoadError(f"--driver={reference}: cannot import module {target!r}: {type(error).__name__}: {error}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        found = _public_callables(module)
        where = target if module.__name__.startswith(_FILE_MODULE_PREFIX) else module.__name__  # a file: its path
        raise DriverLoadError(f"--driver={reference}: {where} has no callable {attribute!r}; it has: {', '.join(found)}")
    description = (factory.__doc__ or "").strip().splitlines()[0] if factory.__doc__ else f"{attribute} from {target}"
    return DriverSpec(reference, factory, description, plugin=target), module


def _public_callables(module: ModuleType) -> list[str]:
    """What a driver module offers as a factory, for an error that asks for one."""
    return sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))


#: The module name a ``path/to/file.py:factory`` driver's file is imported under (one per file).
_FILE_MODULE_PREFIX = "_harness_driver_"


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise UsageError(f"--driver: no such file {str(path)!r}")
    name = f"{_FILE_MODULE_PREFIX}{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise DriverLoadError(f"--driver: {path} failed to import: {type(error).__name__}: {error}\n{_short_traceback(error)}") from None
    return module
