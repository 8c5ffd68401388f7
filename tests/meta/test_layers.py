"""The layout shows the layers, and imports go one way (issue 15).

From the bottom: the Driver API and declarations (``harness.api``), tooling that builds native
code, the drivers (plugin registry, native adapter, the reference), the driver service, the
judging (scenarios, strategies, oracle, lockstep, custom-call checks), reports (certificates,
reproducers), the pytest integration, and the commands.  A module may import its own layer and those below, never above
(imports inside functions count too).  The reference driver sees only the API and the tooling:
it hands data to the harness, never runs the harness's code.  Suites see neither a driver nor the
private helpers of the pytest plugin.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS: list[tuple[str, ...]] = [
    ("harness.api",),
    ("harness.tooling",),
    ("harness.drivers", "reference_driver"),
    ("harness.service",),
    ("harness.strategies", "harness.judging", "harness.cts"),
    ("harness.report",),
    ("harness.integration",),
    ("harness.commands",),
]
FOLDERS = {"harness": "harness", "reference_driver": "reference_driver", "harness.suites": "suites",
           "harness.plugins": "plugins"}


def _module_name(path: Path) -> str:
    for package, folder in FOLDERS.items():
        base = ROOT / folder
        if base in path.parents:
            parts = path.relative_to(base).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            return ".".join((package, *parts))
    raise AssertionError(path)


def _imports(path: Path) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, absolute module, names) of every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(), str(path))
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = tuple(alias.name for alias in node.names)
            found.append((node.lineno, base, names))
            found += [(node.lineno, f"{base}.{name}", ()) for name in names]  # `from harness import x` of a module
    return found


def _layer(module: str) -> int | None:
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def _sources(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "build" not in p.parts)


def _layered_sources() -> list[Path]:
    return _sources("harness") + _sources("reference_driver")


@pytest.mark.skipif(not (ROOT / "harness").is_dir(), reason="not a checkout")
def test_imports_go_down_the_layers() -> None:
    upward = []
    for path in _layered_sources():
        importer = _module_name(path)
        own = _layer(importer)
        if own is None:
            continue
        for line, module, _ in _imports(path):
            other = _layer(module)
            if other is not None and other > own:
                upward.append(f"{path.relative_to(ROOT)}:{line}: {importer} ({LAYERS[own][0]}) imports {module} "
                              f"({LAYERS[other][0]})")
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)


def test_the_reference_driver_sees_only_the_api_and_the_tooling() -> None:
    crossing = [f"{path.relative_to(ROOT)}:{line}: {module}" for path in _sources("reference_driver")
                for line, module, _ in _imports(path)
                if module.startswith("harness") and not module.startswith(("harness.api", "harness.tooling"))
                and module != "harness"]
    assert not crossing, "the reference imports harness code beyond the API and tooling:\n" + "\n".join(crossing)


def test_suites_import_no_driver_and_no_private_plugin_helper() -> None:
    found = []
    for path in _sources("suites"):
        for line, module, names in _imports(path):
            if module.startswith(("reference_driver", "harness.plugins")):
                found.append(f"{path.relative_to(ROOT)}:{line}: imports a driver ({module})")
            if module.startswith("harness.") and any(name.startswith("_") for name in names):
                found.append(f"{path.relative_to(ROOT)}:{line}: imports private {names} from {module}")
    assert not found, "\n".join(found)


def test_the_package_root_re_exports_only_the_api() -> None:
    modules = {module for _, module, _ in _imports(ROOT / "harness" / "__init__.py") if module.startswith("harness.")}
    assert modules and all(m.startswith("harness.api") for m in modules), sorted(modules)
