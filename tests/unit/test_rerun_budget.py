"""A failure whose printed scenario or call sequence passes on a fresh driver is followed by its
test run again by itself (`Recorder._rerun_fails`): once per test in a session (a fuzz run meets the
same failure round after round), and within a budget per session, past which no test is run again."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.api.errors import ConformanceError
from harness.integration import recording


class _FixedTest:
    """What the recorder asks of a pytest item here: a fixed test (no examples of its own)."""

    obj = None

    def get_closest_marker(self, name: str) -> None:
        return None


def test_a_test_is_run_again_once_and_only_within_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[tuple] = []
    monkeypatch.setattr(recording.subprocess, "run", lambda *args, **kwargs: runs.append(args) or SimpleNamespace(returncode=1))
    scripts = tmp_path / "reproducers"
    scripts.mkdir()
    recorder = recording.Recorder(str(tmp_path / "records.jsonl"), "", lambda item: "suites/memory_pools/test_x.py::test_y",
                                  "mutant-x", str(scripts))
    script = scripts / "script.py"
    script.write_text("the printed scenario")
    verdict = ConformanceError("[POOL-2] differs", requirement="POOL-2")

    recorder._rerun_seconds_left = 0  # spent: the printed script stays, and nothing is run
    assert recorder._rerun_fails(_FixedTest(), verdict, str(script)) is False
    assert not runs and script.read_text() == "the printed scenario" and list(scripts.iterdir()) == [script]

    recorder._rerun_seconds_left = recording.RERUN_BUDGET_SECONDS
    assert recorder._rerun_fails(_FixedTest(), verdict, str(script)) is True  # the rerun exited 1: it still fails
    assert len(runs) == 1 and "TEST = 'test_y'" in script.read_text()
    assert recorder._rerun_fails(_FixedTest(), verdict, str(script)) is True  # the same test again: its answer is kept
    assert len(runs) == 1
