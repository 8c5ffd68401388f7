"""Nothing is left behind after a run, normal or killed: no temporary directory
(``driver-harness-*``), no records file of a session, no process.

A warm session (a failure's rerun check, a score's run) killed at its deadline could not remove its
temporary directory (a rerun's ``record.jsonl``, its driver service's socket directory): its server
gives each session a TMPDIR of its own and removes it once the session has ended.  ``harness certify``
ended by SIGTERM or SIGINT writes its INCOMPLETE certificate, and stops its warm server, its
sessions and its driver services before it exits.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from drills import processes_with  # this directory is on sys.path under pytest's default import mode
from harness.integration import warm_sessions

DRILLS = Path(__file__).with_name("drills.py")


def _left_in(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


@pytest.fixture
def temporary() -> Iterator[Path]:
    """The run's TMPDIR: short, so that its driver services' sockets fit in it (a long one sends
    them to /tmp, where this test could not tell them from other runs')."""
    path = Path(tempfile.mkdtemp(prefix="left-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


_SESSION_THAT_OUTLIVES_ITS_DEADLINE = '''
import os, sys, tempfile, time
from harness.service import DriverService

scratch = tempfile.mkdtemp()  # as a rerun script's TemporaryDirectory
open(os.path.join(scratch, "record.jsonl"), "w").write("{}\\n")
service = DriverService("reference")  # its socket directory, its zygote, its service
open(sys.argv[1], "w").write(str(service.pid))
time.sleep(600)
'''


def test_a_session_killed_at_its_deadline_leaves_nothing(tmp_path: Path, temporary: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"left-behind-{secrets.token_hex(6)}"
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setenv("NOTHING_LEFT_MARKER", marker)
    script = tmp_path / "outlives.py"
    script.write_text(_SESSION_THAT_OUTLIVES_ITS_DEADLINE)
    pid_file = tmp_path / "service.pid"
    with pytest.raises(subprocess.TimeoutExpired):
        warm_sessions.run_script(str(script), str(tmp_path), timeout=20, arguments=[str(pid_file)])
    assert pid_file.exists(), "the session did not get as far as its driver service"
    deadline = time.monotonic() + 15  # the zygote sees its session gone, and ends its service
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    # the server itself (started with the marker) stays for this process's next sessions: only a
    # session's processes are counted
    left = [p for p in processes_with(marker) if "harness.integration.warm_sessions" not in p]
    assert left == [], "the killed session's processes survived it"
    assert _left_in(temporary) == [], "the killed session left temporary files"


def _certify(tmp_path: Path, temporary: Path, driver: str, *extra: str, stop: signal.Signals | None = None,
             when=lambda out, temporary: False) -> tuple[subprocess.Popen, Path, str]:
    out = tmp_path / "out"
    marker = f"left-behind-{secrets.token_hex(6)}"
    env = {**os.environ, "TMPDIR": str(temporary), "NOTHING_LEFT_MARKER": marker, "DRILL_MARKER": marker}
    command = [sys.executable, "-m", "harness.commands.cli", "certify", f"--driver={driver}", f"--out={out}", *extra]
    with open(tmp_path / "output.txt", "w+") as output:
        process = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=output, stderr=subprocess.STDOUT, text=True)
        if stop is not None:
            deadline = time.monotonic() + 300
            while process.poll() is None and not when(out, temporary) and time.monotonic() < deadline:
                time.sleep(0.1)
            process.send_signal(stop)
        process.wait(timeout=600)
        output.seek(0)
        return process, out, marker + "\n" + output.read()


#: 64 tests of every kind (handles, roles, mutated requests, golden examples): enough to stop a run
#: in the middle of, and, should a signal come too late to stop it, a run that ends in seconds
#: rather than the whole certification's minutes.
_SOME_TESTS = "test_handles or test_roles or test_validation or add_broadcast_none"


def _records(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _assert_nothing_left(temporary: Path, output: str) -> None:
    """``output``: the run's marker, then what it printed."""
    marker = output.splitlines()[0]
    assert processes_with(marker) == [], f"processes of the run survived it\n{output[-3000:]}"
    assert _left_in(temporary) == [], f"the run left temporary files\n{output[-3000:]}"


@pytest.mark.timeout(900)
def test_certify_of_a_crashing_driver_leaves_nothing(tmp_path: Path, temporary: Path) -> None:
    # golden examples whose failures (before: every one) were checked by running their test again
    process, out, output = _certify(tmp_path, temporary, f"{DRILLS}:segfault_every_execute", "--", "-k", _SOME_TESTS)
    assert process.returncode == 1 and json.loads((out / "certificate.json").read_text())["verdict"] == "FAIL", output[-3000:]
    _assert_nothing_left(temporary, output)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_certify_stopped_by_a_signal_leaves_nothing(tmp_path: Path, temporary: Path, stop: signal.Signals) -> None:
    """Stopped in the middle of its tests (after the first failures, while their checks run)."""
    process, out, output = _certify(tmp_path, temporary, f"{DRILLS}:segfault_every_execute", "--", "-k", _SOME_TESTS,
                                    stop=stop, when=lambda out, temporary: sum("id" in r for r in _records(out)) >= 40)
    assert process.returncode != 0, output[-3000:]
    certificate = json.loads((out / "certificate.json").read_text())
    assert certificate["verdict"] in ("FAIL", "INCOMPLETE"), output[-3000:]
    _assert_nothing_left(temporary, output)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_certify_stopped_while_it_starts_leaves_nothing(tmp_path: Path, temporary: Path, stop: signal.Signals) -> None:
    """Stopped as soon as its driver service has a socket directory (its start-up)."""
    process, out, output = _certify(
        tmp_path, temporary, f"{DRILLS}:segfault_every_execute", "--", "-k", _SOME_TESTS, stop=stop,
        when=lambda out, temporary: any(p.name.startswith("driver-harness-") for p in temporary.iterdir()))
    assert any(p.name.startswith("driver-harness-") for p in temporary.iterdir()) or process.returncode is not None
    _assert_nothing_left(temporary, output)
