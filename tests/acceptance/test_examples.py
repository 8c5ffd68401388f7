"""A vendor's first steps, as a vendor takes them: ``pip install`` a driver package into an
environment and ``harness certify`` it.  Both the example driver (examples/acme-driver) and what
``harness init`` writes must install through their own entry point and be certified PASS, with
every requirement either passed or not applicable to what they declare."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "acme-driver"


def _build_tools() -> str:
    """Where the newest setuptools on this interpreter's path is: ``--no-build-isolation`` builds
    with whatever comes first on the path, and a setuptools before 70.1 needs ``wheel`` as well."""
    found = max(importlib.metadata.distributions(name="setuptools"),
                key=lambda d: tuple(int(p) for p in d.version.split(".")[:3] if p.isdigit()))
    return str(found.locate_file(""))


class Environment:
    """A virtual environment of its own whose packages are this one's (a ``.pth`` adds this
    interpreter's site directories, editable installs included) plus what is installed into it."""

    def __init__(self, directory: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, capture_output=True)
        self.python = str(directory / "bin" / "python")
        own = subprocess.run([self.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
        parents = [sysconfig.get_path("purelib"), *(p for p in sys.path if p.endswith("site-packages"))]
        lines = [f"import site; site.addsitedir({path!r})" for path in dict.fromkeys(parents)]
        Path(own, "parent-environment.pth").write_text("\n".join(lines) + "\n")

    def install(self, package: Path) -> None:
        environment = {**os.environ, "PYTHONPATH": _build_tools()}
        done = subprocess.run([self.python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", str(package)],
                              capture_output=True, text=True, env=environment, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr

    def harness(self, *arguments: str, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run([self.python, "-m", "harness.commands.cli", *arguments], capture_output=True, text=True,
                              cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    return Environment(tmp_path_factory.mktemp("vendor") / "venv")


def _certified(environment: Environment, driver: str, folder: Path) -> dict:
    done = environment.harness("certify", "--driver", driver, "--out", str(folder / "certification"), cwd=folder)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    document = json.loads((folder / "certification" / "certificate.json").read_text())
    assert document["driver"]["driver"] == driver
    assert document["verdict"] == "PASS", document["counts"]
    assert document["counts"]["pass"] > 0 and document["counts"]["fail"] == document["counts"]["not-run"] == 0
    assert document["not_run"] == [] and document["files_left_out"] == []
    return document


@pytest.mark.timeout(600)
def test_the_example_driver_installs_and_is_certified(environment: Environment, tmp_path: Path) -> None:
    for source in EXAMPLE.rglob("*.py"):  # written against the Driver API alone
        assert "reference_driver" not in source.read_text(), f"{source} uses the reference driver"
    copy = tmp_path / "acme-driver"  # pip builds in the source folder: a copy keeps the checkout clean
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    environment.install(copy)
    document = _certified(environment, "acme", tmp_path)
    assert document["driver"]["plugin"].startswith("acme")


@pytest.mark.timeout(600)
def test_harness_init_writes_a_driver_that_installs_and_is_certified(environment: Environment, tmp_path: Path) -> None:
    done = environment.harness("init", "acme-npu", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "harness certify --driver acme-npu" in done.stdout
    package = tmp_path / "acme-npu"
    assert "TODO" in (package / "acme_npu_driver" / "kernels.py").read_text()
    environment.install(package)
    _certified(environment, "acme-npu", tmp_path)


@pytest.mark.parametrize("arguments", [("init", "Acme"), ("init", "acme npu"), ("init", "-acme"), ("init", "a" * 41),
                                       ("init", "acme", "--dir", "taken")])
def test_harness_init_refuses_a_bad_name_or_an_existing_directory(tmp_path: Path, arguments: tuple[str, ...]) -> None:
    (tmp_path / "taken").mkdir()
    done = subprocess.run([sys.executable, "-m", "harness.commands.cli", *arguments], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"] and not any((tmp_path / "taken").iterdir())
