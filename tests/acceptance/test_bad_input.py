"""Bad input to the harness is one clear line and a usage exit code, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def run(tmp_path: Path, *args: str, module: str = "harness.commands.cli") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)


def error_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


@pytest.mark.parametrize("option", ["--driver-timeout=-1", "--driver-timeout=0", "--harness-examples=-1"])
def test_nonpositive_options_are_refused(tmp_path: Path, option: str) -> None:
    done = run(tmp_path, "-p", "no:cacheprovider", "--pyargs", "harness.suites.requests", option, module="pytest")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    lines = error_lines(done)
    assert len(lines) == 1 and option.split("=")[0] in lines[0] and "above zero" in lines[0], lines


@pytest.mark.parametrize("args, phrase", [(["--minutes", "-1"], "--minutes"), (["--workers", "0"], "--workers"),
                                          (["--minutes", "soon"], "--minutes")])
def test_fuzz_budget_must_be_positive(tmp_path: Path, args: list[str], phrase: str) -> None:
    done = run(tmp_path, "fuzz", "--driver", "reference", *args)
    assert done.returncode == 2
    lines = error_lines(done)
    assert len(lines) == 1 and phrase in lines[0] and "Traceback" not in lines[0], lines
    assert not (tmp_path / "fuzz").exists()


@pytest.mark.parametrize("command", ["fuzz", "replay"])
def test_an_unknown_driver_lists_the_drivers_before_anything_runs(tmp_path: Path, command: str) -> None:
    done = run(tmp_path, command, "--driver", "no-such-driver", "--out", "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unknown driver 'no-such-driver'" in done.stderr and "Traceback" not in done.stderr
    listed = next(line for line in done.stderr.splitlines() if line.startswith("Available drivers:"))
    assert "reference" in listed and "mutant-offset-ignored" in listed
    # told before any worker started: no progress lines, nothing written
    assert done.stdout == "" and not (tmp_path / "out").exists()


def test_a_driver_module_that_is_not_there_is_the_workers_whole_error(tmp_path: Path) -> None:
    done = run(tmp_path, "fuzz", "--driver", "no_such_module:factory", "--minutes", "0.2", "--out", "out")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = error_lines(done)
    assert "Traceback" not in done.stderr
    assert "no_such_module" in lines[-1] and lines[-1].startswith("harness fuzz: --driver=no_such_module:factory"), lines


def test_replaying_an_empty_database_says_nothing_was_stored(tmp_path: Path) -> None:
    done = run(tmp_path, "replay", "--driver", "reference", "--db", str(tmp_path / "empty-db"), "--out", "replay")
    assert done.returncode == 0, done.stderr
    assert "nothing is stored for this driver" in done.stdout and "0 examples replayed" in done.stdout


def test_a_factory_that_raises_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def factory():\n    raise ValueError('no device found')\n")
    done = run(tmp_path, "certify", "--driver", "broken.py:factory", "--out", "out")
    assert done.returncode == 2
    lines = error_lines(done)
    assert len(lines) == 1 and "no device found" in lines[0] and "broken.py:2" in lines[0], lines


@pytest.mark.parametrize("names", [["no-such-bug"], ["offset-ignored", "mutant-no-such-bug"]])
def test_score_refuses_a_name_that_is_no_seeded_bug_or_variant(tmp_path: Path, names: list[str]) -> None:
    """A misspelt --only scored nothing and exited 0: a gate on the score would have passed."""
    done = run(tmp_path, "score", "--only", *names, "--json", "score.json")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = error_lines(done)
    unknown = names[-1]
    assert len(lines) == 1 and f"--only: {unknown!r}" in lines[0] and "Traceback" not in lines[0], lines
    assert "offset-ignored" in lines[0] and "add-only" in lines[0]  # the names there are
    assert not (tmp_path / "score.json").exists()
