"""harness fuzz and harness replay with a local example database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def harness(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)


def test_fuzz_keeps_failures_and_replay_finds_them(tmp_path: Path) -> None:
    fuzzed = harness(tmp_path, "fuzz", "--driver", "mutant-writes-past-output", "--minutes", "0.6", "--db", "db", "--out", "fz")
    assert fuzzed.returncode == 1, fuzzed.stderr
    assert "distinct failures" in fuzzed.stdout and "round 1" in fuzzed.stdout
    summary = json.loads((tmp_path / "fz" / "fuzz-summary.json").read_text())
    assert summary["failures"] and summary["examples_per_suite"]
    assert any(f["reproducer"] and Path(f["reproducer"]).exists() for f in summary["failures"])
    assert any((tmp_path / "db").iterdir())
    replayed = harness(tmp_path, "replay", "--driver", "mutant-writes-past-output", "--db", "db", "--out", "rp")
    assert replayed.returncode == 1 and "still failing: suites/memory_pools/" in replayed.stdout
    fixed = harness(tmp_path, "replay", "--driver", "reference", "--db", "db", "--out", "rp2")
    assert fixed.returncode == 0 and "0 stored failures reproduce" in fixed.stdout


def test_unreachable_redis_is_one_clear_line(tmp_path: Path) -> None:
    done = harness(tmp_path, "fuzz", "--driver", "reference", "--minutes", "0.1", "--db", "redis://127.0.0.1:1/0", "--out", "fz")
    assert done.returncode == 2
    assert "redis://127.0.0.1:1/0" in done.stderr and "Traceback" not in done.stderr
