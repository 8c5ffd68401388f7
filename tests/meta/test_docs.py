"""The documentation: the site builds with warnings as errors, and the README's driver runs."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import Device, OperationType
from harness.judging.builders import binary_model, pack_request

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "writing-a-driver.md"


@pytest.mark.timeout(300)
def test_the_site_builds_with_warnings_as_errors(tmp_path) -> None:
    """``mkdocs build --strict``: a broken link or anchor, a page left out of the navigation, or a
    docstring the API reference cannot render fails the build."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    import harness

    public = [name for name in harness.__all__ if not name.startswith("_")]
    missing = [name for name in public if f'id="harness.{name}"' not in api]
    assert missing == [], f"public names the API reference does not show: {missing}"
    assert (tmp_path / "site" / "spec" / "index.html").is_file()


def _driver_source(page: Path) -> str:
    found = re.findall(r'```python\n("""acme_driver\.py:.*?)```', page.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(found) == 1, f"{page.name} has no single acme_driver.py code block"
    return found[0]


def test_the_readme_and_the_guide_show_the_same_driver() -> None:
    assert _driver_source(README) == _driver_source(GUIDE)


def test_the_readmes_driver_runs(tmp_path) -> None:
    """The ten-minute driver is a Driver API object and computes a fused ADD into the request's memory."""
    path = tmp_path / "acme_driver.py"
    path.write_text(_driver_source(README), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("acme_driver", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    device = module.AcmeDevice()
    assert isinstance(device, Device)
    assert device.capabilities().operations == frozenset({OperationType.ADD})
    model = binary_model(dims=(2, 3), activation=1)  # ADD with RELU
    a = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, np.float32)
    request, _, outputs = pack_request(model, [a, b])
    result = device.prepare_model(model).execute(request)
    assert [shape.dimensions for shape in result.output_shapes] == [(2, 3)]
    np.testing.assert_array_equal(np.frombuffer(outputs.read(), np.float32)[:6].reshape(2, 3), np.maximum(a + b, 0))
