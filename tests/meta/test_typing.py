"""The core is typed: mypy finds nothing to report in harness/ and reference_driver/."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_reports_no_error(tmp_path: Path) -> None:
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path),
                                      str(ROOT / "harness"), str(ROOT / "reference_driver")])
    assert status == 0, f"mypy found errors:\n{stdout}{stderr}"
    assert "Success" in stdout, stdout
