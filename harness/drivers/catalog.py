"""What the installed driver plugins offer, learned without running any of their code here.

A plugin is the driver's code: importing it in the harness's process would let it change the
harness's verdict (patch pytest's reports, exit with 0).  So the harness asks a probe, a process of
its own under the driver's sandbox (`harness.tooling.sandbox`), to load the plugins and describe
every driver they register: its name, description, declared capabilities, expectations, and
whether its declarations hold.  The description comes back as JSON, and is read as untrusted data:
every field is checked against its type and closed set, and anything else is refused.

A plugin that ends the probe while it loads (``sys.exit``, ``os._exit``, a crash) is named by the
probe's last announcement, reported as broken, and left out of a second probe: its failure is the
plugin's, never the harness's exit code.

    python -m harness.drivers.catalog --scratch DIR [--driver NAME] [--skip LABEL ...]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.api.errors import DriverLoadError, UsageError
from harness.api.expectations import Expectation
from harness.api.hal import Capabilities, OperandType, OperationType

__all__ = ["Catalog", "DriverEntry", "load_catalog"]

_ANNOUNCE = "harness-catalog: loading plugin "
_PROBE_TIMEOUT_S = 120.0
_MAX_REPLY_BYTES = 64 << 20
_MAX_RETRIES = 8
_DECLARED_HOOKS = ("custom_call_targets", "packed_function_libraries")


@dataclass(frozen=True)
class DriverEntry:
    """A registered driver as its plugin describes it (the fields of `harness.DriverSpec` that are
    data, and what the probe found of its declarations)."""

    name: str
    description: str = ""
    plugin: str = ""
    capabilities: Capabilities | None = None
    breaks: str = ""
    exercises: str = ""
    breaks_operations: tuple[str, ...] = ()
    declaration_error: str = ""  # one line: what is wrong with what its plugins declare for it
    expectations: tuple[Expectation, ...] = ()
    declares: frozenset[str] = frozenset()  # of `_DECLARED_HOOKS`: the kinds of things it declares
    declared_by: tuple[str, ...] = ()  # the plugins whose hooks declare them
    deep_bug: bool = False  # a deep seeded bug's driver, kept for measuring fuzzing


@dataclass(frozen=True)
class Catalog:
    """Every driver the installed plugins register, and the plugins that failed to load."""

    drivers: dict[str, DriverEntry]
    broken: dict[str, str] = field(default_factory=dict)

    def names(self) -> list[str]:
        return sorted(self.drivers)

    def resolve(self, name: str) -> DriverEntry:
        """A registered driver by name; an unknown name is a `UsageError` listing the drivers there
        are (the seeded-bug and correct-variant ones counted apart) and guessing the one meant."""
        if name in self.drivers:
            return self.drivers[name]
        products = [n for n, e in sorted(self.drivers.items()) if not (e.breaks or e.exercises)]
        guesses = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)
        lines = [f"unknown driver {name!r}." + (f" Did you mean {' or '.join(map(repr, guesses))}?" if guesses else "")]
        lines.append(f"Drivers: {', '.join(products) or '(none)'}.")
        testing = len(self.drivers) - len(products)
        if testing:
            lines.append(f"(and {testing} seeded-bug and correct-variant drivers of the harness's own tests: "
                         "harness list --all)")
        for plugin, error in sorted(self.broken.items()):
            lines.append(f"Plugin {plugin} failed to load and may have provided it: {error}")
        lines.append("Use --driver=NAME, --driver=package.module:factory or --driver=path/to/file.py:factory.")
        raise UsageError("\n".join(lines))


# --------------------------------------------------------------------------- the harness's side

_catalog: Catalog | None = None


def load_catalog(driver: str = "") -> Catalog:
    """The drivers of every installed plugin, from a probe (once per process: a process forked
    from one that loaded it inherits it).  ``driver`` given as ``module:factory`` or
    ``file.py:factory`` is described too, by a probe of its own."""
    global _catalog
    if driver and (":" in driver or driver.endswith(".py")) and not driver.startswith("native:"):
        return _probe(driver)
    if _catalog is None:
        _catalog = _probe("")
    return _catalog


def native_entry(reference: str) -> DriverEntry:
    """``native:path/to/libdriver.so``: a shared library of the native ABI, loaded only in its service."""
    from pathlib import Path

    path = Path(reference.split(":", 1)[1]).expanduser()
    if not path.is_file():
        raise UsageError(f"--driver={reference}: no such library {str(path)!r}")
    return DriverEntry(reference, f"native driver {path.name} (tvm-ffi)", "native")


def _probe(driver: str) -> Catalog:
    from harness.tooling.sandbox import plan

    skipped: dict[str, str] = {}
    scratch = tempfile.mkdtemp(prefix="driver-harness-catalog-")
    try:
        sandbox = plan([scratch])
        for _ in range(_MAX_RETRIES):
            command = [sys.executable, "-m", "harness.drivers.catalog", "--scratch", scratch,
                       *(["--sandbox"] if sandbox.enforced else []), *(["--driver", driver] if driver else [])]
            for label in skipped:
                command += ["--skip", label]
            reply, culprit, ended = _run_probe(command, scratch)
            if reply is not None:
                catalog = _decode(reply)
                return Catalog(catalog.drivers, {**catalog.broken, **skipped})
            if culprit is None or culprit in skipped:
                raise DriverLoadError(f"the driver catalog probe {ended} before it described any driver")
            skipped[culprit] = f"the process loading it {ended}"
        raise DriverLoadError(f"the driver catalog probe kept ending while plugins loaded ({', '.join(skipped)})")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_probe(command: list[str], scratch: str) -> tuple[Any, str | None, str]:
    """The probe's reply (None if it gave none), the plugin it was loading when it ended, and how it ended."""
    with tempfile.TemporaryFile(dir=scratch) as reply, tempfile.TemporaryFile(dir=scratch) as log:
        environment = {**os.environ, "TMPDIR": scratch, "HARNESS_CATALOG_REPLY_FD": str(reply.fileno())}
        try:
            completed = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=environment,
                                       pass_fds=[reply.fileno()], timeout=_PROBE_TIMEOUT_S, start_new_session=True)
            code = completed.returncode
        except subprocess.TimeoutExpired:
            code = None
        log.seek(0)
        lines = log.read(1 << 20).decode("utf-8", "replace").splitlines()
        culprit = next((line[len(_ANNOUNCE):] for line in reversed(lines) if line.startswith(_ANNOUNCE)), None)
        ended = (f"did not finish within {_PROBE_TIMEOUT_S:g} s" if code is None
                 else f"was killed by signal {signal.Signals(-code).name}" if code < 0
                 else f"exited with code {code}")
        size = reply.seek(0, os.SEEK_END)
        if code != 0 or size == 0:  # a plugin's os._exit(0) ends the probe with 0 and no answer
            return None, culprit, ended
        if size > _MAX_REPLY_BYTES:
            raise DriverLoadError(f"the driver catalog probe answered {size} bytes, over the limit of {_MAX_REPLY_BYTES}")
        reply.seek(0)
        try:
            return json.loads(reply.read().decode("utf-8")), None, ended
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise DriverLoadError(f"the driver catalog probe answered something that is not its JSON: {error}") from None


class _Refused(ValueError):
    pass


def _text(value: Any, where: str, limit: int = 20_000) -> str:
    if type(value) is not str or len(value) > limit:
        raise _Refused(f"{where} is not a string of at most {limit} characters")
    return value


def _names(value: Any, where: str) -> list[str]:
    if type(value) is not list:
        raise _Refused(f"{where} is not a list")
    return [_text(v, where, 200) for v in value]


def _decode_capabilities(value: Any, where: str) -> Capabilities | None:
    from harness.api.memory import MEMORY_KINDS

    if value is None:
        return None
    if type(value) is not dict or set(value) != {"memory_kinds", "memory_domains", "operations", "operand_types",
                                                 "dynamic_buffers", "operation_types"}:
        raise _Refused(f"{where} is not a capabilities record")
    if type(value["operation_types"]) is not dict:
        raise _Refused(f"{where}'s operation_types is not a record")
    try:
        operations = frozenset(OperationType[n] for n in _names(value["operations"], where))
        operand_types = frozenset(OperandType[n] for n in _names(value["operand_types"], where))
        operation_types = tuple((OperationType[op], frozenset(OperandType[n] for n in _names(types, where)))
                                for op, types in sorted(value["operation_types"].items()))
    except KeyError as error:
        raise _Refused(f"{where} names {error}, which is not an NNAPI operation or operand type") from None
    kinds = _names(value["memory_kinds"], where)
    if any(kind not in MEMORY_KINDS for kind in kinds):
        raise _Refused(f"{where} names a memory kind that does not exist")
    flags = value["memory_domains"], value["dynamic_buffers"]
    if any(type(flag) is not bool for flag in flags):
        raise _Refused(f"{where} has a flag that is not true or false")
    return Capabilities(frozenset(kinds), flags[0], operations, operand_types, flags[1], operation_types)


def _decode_entry(value: Any) -> DriverEntry:
    if type(value) is not dict:
        raise _Refused("a driver entry is not a record")
    where = f"driver {str(value.get('name'))[:80]!r}"
    expectations = []
    if type(value.get("expectations")) is not list:
        raise _Refused(f"{where}: expectations is not a list")
    for item in value["expectations"]:
        if type(item) is not dict or set(item) != {"test", "action", "reason", "driver", "source"}:
            raise _Refused(f"{where}: an expectation is not a record of test, action, reason, driver, source")
        if item["action"] not in ("skip", "xfail"):
            raise _Refused(f"{where}: an expectation's action is neither skip nor xfail")
        expectations.append(Expectation(*(_text(item[k], where) for k in ("test", "action", "reason", "driver", "source"))))
    declares = _names(value.get("declares"), where)
    declared_by = tuple(_names(value.get("declared_by"), where))
    if not set(declares) <= set(_DECLARED_HOOKS):
        raise _Refused(f"{where}: declares something other than {', '.join(_DECLARED_HOOKS)}")
    if type(value.get("deep_bug")) is not bool:
        raise _Refused(f"{where}: deep_bug is not true or false")
    breaks_operations = tuple(_names(value.get("breaks_operations"), where))
    if not set(breaks_operations) <= set(OperationType.__members__):
        raise _Refused(f"{where}: breaks_operations names something other than an operation")
    return DriverEntry(_text(value.get("name"), "a driver's name", 1000), _text(value.get("description"), where),
                       _text(value.get("plugin"), where), _decode_capabilities(value.get("capabilities"), where),
                       _text(value.get("breaks"), where, 100), _text(value.get("exercises"), where, 100),
                       breaks_operations, _text(value.get("declaration_error"), where), tuple(expectations),
                       frozenset(declares), declared_by, deep_bug=value["deep_bug"])


def _decode(reply: Any) -> Catalog:
    """The probe's reply, as typed data, or a `DriverLoadError` saying what in it was refused."""
    try:
        if type(reply) is not dict or set(reply) - {"drivers", "broken", "error"}:
            raise _Refused("the reply is not a catalog")
        if reply.get("error") is not None:
            raise DriverLoadError(_text(reply["error"], "the probe's error"))
        if type(reply.get("drivers")) is not list or type(reply.get("broken")) is not dict:
            raise _Refused("the reply has no list of drivers and record of broken plugins")
        entries = [_decode_entry(item) for item in reply["drivers"]]
        broken = {_text(k, "a plugin's label", 1000): _text(v, "a plugin's failure") for k, v in reply["broken"].items()}
    except _Refused as refusal:
        raise DriverLoadError(f"the driver catalog probe's reply was refused: {refusal}") from None
    return Catalog({entry.name: entry for entry in entries}, broken)


# --------------------------------------------------------------------------- the probe's side


def _describe(registry: Any, name: str, spec: Any) -> dict:
    from harness.drivers.registry import check_capabilities
    from harness.api.errors import HarnessError

    problem = ""
    try:
        registry.check_declarations(spec)
    except HarnessError as error:
        problem = str(error).splitlines()[0] if str(error) else type(error).__name__
    capabilities = spec.capabilities
    if capabilities is not None:
        try:
            check_capabilities(capabilities, spec.plugin or "?", f"driver {spec.name!r}")
        except HarnessError:
            capabilities = None  # the declaration error above says why
    expectations = []
    for result in registry.manager.hook.harness_expectations(driver_name=name):
        for item in result or ():
            if isinstance(item, Expectation):
                expectations.append({"test": item.test, "action": item.action, "reason": item.reason,
                                     "driver": item.driver, "source": item.source or str(spec.plugin)})
    declares, declared_by = [], set()
    for hook, spec_hook in zip(_DECLARED_HOOKS, ("harness_custom_call_targets", "harness_packed_functions")):
        try:
            found = [plugin for plugin, items in registry._declared(spec_hook, name) if items]
        except HarnessError:
            found = []  # declared, and wrong: the declaration error says how
            declares.append(hook)
        if found:
            declares.append(hook)
            declared_by.update(found)
    return {
        "name": name, "description": str(spec.description), "plugin": str(spec.plugin),
        "capabilities": None if capabilities is None else {
            "memory_kinds": sorted(str(k) for k in capabilities.memory_kinds),
            "memory_domains": capabilities.memory_domains, "dynamic_buffers": capabilities.dynamic_buffers,
            "operations": sorted(op.name for op in capabilities.operations),
            "operand_types": sorted(t.name for t in capabilities.operand_types),
            "operation_types": {op.name: sorted(t.name for t in types) for op, types in capabilities.operation_types}},
        "breaks": str(spec.breaks), "exercises": str(spec.exercises), "deep_bug": bool(spec.deep_bug),
        "breaks_operations": [str(name) for name in spec.breaks_operations], "declaration_error": problem,
        "expectations": expectations, "declares": sorted(set(declares)), "declared_by": sorted(declared_by),
    }


def _answer(reply: dict) -> None:
    data = json.dumps(reply).encode("utf-8")
    fd = int(os.environ["HARNESS_CATALOG_REPLY_FD"])
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="describe the installed driver plugins (run by the harness)")
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--sandbox", action="store_true")
    parser.add_argument("--driver", default="")
    parser.add_argument("--skip", action="append", default=[])
    options = parser.parse_args(argv)
    if options.sandbox:
        from harness.tooling.sandbox import confine

        confine([options.scratch])
    from harness.api.errors import HarnessError
    from harness.drivers.registry import load_plugins

    def announce(label: str) -> None:
        print(_ANNOUNCE + label, file=sys.stderr, flush=True)

    try:
        registry = load_plugins(skip=options.skip, announce=announce)
        named = dict(registry.drivers)
        if options.driver:
            announce(options.driver)
            named[options.driver] = registry.resolve(options.driver)
        drivers = [_describe(registry, name, spec) for name, spec in sorted(named.items())]
    except HarnessError as error:
        _answer({"drivers": [], "broken": {}, "error": str(error)})
        return 0
    _answer({"drivers": drivers, "broken": dict(registry.broken)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
