"""A clean install (issue 15): the repository's plugins/ and suites/ install as harness.plugins and
harness.suites, so site-packages gets no top-level package of those common names and a vendor's
own ``plugins`` package cannot collide with the harness's."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import harness
from harness.drivers.registry import load_registry

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
# Where each installed package's files live in the repository.
FOLDERS = {"harness": "harness", "reference_driver": "reference_driver",
           "harness.plugins": "plugins", "harness.suites": "suites"}


def _package_folders() -> dict[str, Path]:
    found = {}
    for package, folder in FOLDERS.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            relative = init.parent.relative_to(ROOT / folder)
            if relative.parts and any(part in ("build", "__pycache__") for part in relative.parts):
                continue
            found[".".join((package, *relative.parts))] = init.parent
    return found


def test_every_package_is_installed_under_its_namespace() -> None:
    if not PYPROJECT.is_file():
        pytest.skip("not a checkout")  # pragma: no cover - the test runs from the repository
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]
    listed, mapped = set(config["packages"]), config["package-dir"]
    expected = set(_package_folders())
    assert expected - listed == set(), f"packages missing from pyproject.toml [tool.setuptools] packages: {sorted(expected - listed)}"
    assert listed - expected == set(), f"pyproject.toml lists packages that do not exist: {sorted(listed - expected)}"
    assert mapped == {"harness.plugins": "plugins", "harness.suites": "suites"}
    assert not any(name.split(".")[0] in ("plugins", "suites") for name in listed)


def test_the_registry_loads_only_its_own_plugins(tmp_path, monkeypatch) -> None:
    """A vendor project's own ``plugins`` package, first on sys.path, is not the harness's."""
    vendor = tmp_path / "plugins"
    vendor.mkdir()
    (vendor / "__init__.py").write_text("raise ImportError('the vendor package was imported by the harness')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = load_registry()
    assert "reference" in registry.names() and any(name.startswith("mutant-") for name in registry.names())
    assert not registry.broken and "plugins" not in sys.modules


@pytest.mark.timeout(600)
def test_a_built_wheel_has_no_plugins_or_suites_top_level_package(tmp_path) -> None:
    if not PYPROJECT.is_file():
        pytest.skip("not a checkout")  # pragma: no cover
    source = tmp_path / "source"  # a copy: building in the checkout would leave build/ and egg-info there
    for name in ("pyproject.toml", "README.md"):
        source.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    for folder in FOLDERS.values():
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(source)], check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = tmp_path.glob("driver_harness-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"harness", "reference_driver"}
    for needed in ("harness/suites/memory_pools/test_layouts.py", "harness/plugins/mutants/reach.py",
                   "harness/plugins/native_sample/driver.cc", "harness/integration/harness-pytest.ini", "harness/py.typed",
                   "harness/spec.md", "harness/templates/driver/package/device.py.tmpl"):
        assert needed in names, f"the wheel lacks {needed}"
    assert harness.__file__  # the package under test imports from this checkout or its install
