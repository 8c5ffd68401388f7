"""pytest sessions forked from the warm server (harness score's runs): each behaves as
``python -m pytest`` started in its own directory, and nothing of one reaches the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.integration import warm_sessions
from harness.integration.warm_sessions import run_pytest, run_script

_TESTS = '''
import os

import numpy


def test_started_where_asked():
    assert os.getcwd() == {cwd!r}


def test_sees_nothing_an_earlier_session_left():
    assert not hasattr(numpy, "_left_by_an_earlier_session")  # numpy is imported by the server
    numpy._left_by_an_earlier_session = True


def test_fails_when_told():
    assert not os.path.exists("fail")


def test_has_the_callers_environment_of_now():
    assert os.environ.get("WARM_SESSIONS_TEST") == "set after the server started"
'''


def test_a_session_runs_in_its_directory_and_returns_pytest_exit_code(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "test_session.py").write_text(_TESTS.format(cwd=str(tmp_path)))
    arguments = ["-q", "-p", "no:cacheprovider", "test_session.py"]
    assert run_pytest(["-q", "-p", "no:cacheprovider", "--collect-only", "test_session.py"], str(tmp_path),
                      timeout=120) == pytest.ExitCode.OK  # the server runs from here on
    monkeypatch.setenv("WARM_SESSIONS_TEST", "set after the server started")
    assert run_pytest(arguments, str(tmp_path), timeout=120) == pytest.ExitCode.OK
    assert run_pytest(arguments, str(tmp_path), timeout=120) == pytest.ExitCode.OK  # the attribute did not survive
    (tmp_path / "fail").touch()
    assert run_pytest(arguments, str(tmp_path), timeout=120) == pytest.ExitCode.TESTS_FAILED
    assert run_pytest([*arguments, "--no-such-option"], str(tmp_path), timeout=120) == pytest.ExitCode.USAGE_ERROR


def test_a_session_past_its_time_is_killed(tmp_path: Path) -> None:
    (tmp_path / "test_slow.py").write_text(
        "import os, time\n\ndef test_slow():\n    open('pid', 'w').write(str(os.getpid()))\n    time.sleep(120)\n")
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_pytest(["-q", "-p", "no:cacheprovider", "test_slow.py"], str(tmp_path), timeout=8)
    assert time.monotonic() - started < 60
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def _unix_sockets() -> dict[str, tuple[int, str]]:
    """Each Unix socket's inode: its flags (0x10000: listening) and its name ("" for none)."""
    with open("/proc/net/unix", encoding="ascii") as table:
        rows = [line.split() for line in list(table)[1:]]
    return {row[6]: (int(row[3], 16), row[7] if len(row) > 7 else "") for row in rows}


def _sockets_held(pid: int) -> list[str]:
    links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    return [link[len("socket:["):-1] for link in links if link.startswith("socket:")]


def test_no_process_of_the_server_can_be_reached_by_another(tmp_path: Path) -> None:
    """Security: the server reads requests from its parent's pipe, and the zygote template it forks
    (the one socket either holds) is one end of a pair with no name, never a listener."""
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    assert run_pytest(["-q", "-p", "no:cacheprovider", "test_one.py"], str(tmp_path), timeout=120) == pytest.ExitCode.OK
    server = warm_sessions._client._server
    assert server is not None and server.poll() is None
    children = [int(pid) for pid in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()]
    assert len(children) == 1, "the template, and no session left running"
    table = _unix_sockets()
    for pid in (server.pid, *children):
        held = _sockets_held(pid)
        assert len(held) == 1, (pid, held)
        assert all(inode in table and table[inode] == (0, "") for inode in held), [table.get(i) for i in held]


_SCRIPT = '''
import os
import sys

import numpy

assert __name__ == "__main__" and sys.argv[1:] == ["given"]
assert sys.path[0] == os.path.dirname(os.path.abspath(__file__))
assert os.getcwd() == {cwd!r}
assert not hasattr(numpy, "_left_by_an_earlier_script")
numpy._left_by_an_earlier_script = True
if os.path.exists("raise"):
    raise RuntimeError("let out")
if os.path.exists("kill"):
    os.kill(os.getpid(), 9)
sys.exit(int(open("code").read()) if os.path.exists("code") else None)
'''


def test_a_script_runs_as_python_would_run_it(tmp_path: Path) -> None:
    """A reproducer's run: ``python SCRIPT``'s exit code, its arguments and path, nothing kept between runs."""
    (tmp_path / "script.py").write_text(_SCRIPT.format(cwd=str(tmp_path)))
    assert run_script("script.py", str(tmp_path), timeout=120, arguments=["given"]) == 0
    assert run_script("script.py", str(tmp_path), timeout=120, arguments=["given"]) == 0  # the attribute did not survive
    assert run_script("script.py", str(tmp_path), timeout=120, arguments=["other"]) == 1  # its assertion failed
    (tmp_path / "code").write_text("5")
    assert run_script("script.py", str(tmp_path), timeout=120, arguments=["given"]) == 5
    (tmp_path / "raise").touch()
    assert run_script("script.py", str(tmp_path), timeout=120, arguments=["given"]) == 1
    (tmp_path / "raise").unlink()
    (tmp_path / "kill").touch()
    assert run_script("script.py", str(tmp_path), timeout=120, arguments=["given"]) == -9


def test_a_session_s_time_counts_from_its_fork_not_from_the_server_s_start(tmp_path: Path, monkeypatch) -> None:
    """The first session of a score waits for the server's imports; on a busy machine those took
    longer than a short script's whole allowance, and a reproducer that failed at once read as hung."""
    slow_python = tmp_path / "slow-python"
    slow_python.write_text(f'#!/bin/sh\nsleep 2\nexec "{warm_sessions.sys.executable}" "$@"\n')
    slow_python.chmod(0o755)
    (tmp_path / "script.py").write_text("raise SystemExit(1)\n")
    client = warm_sessions._Client()
    monkeypatch.setattr(warm_sessions.sys, "executable", str(slow_python))
    try:
        assert client.run([], str(tmp_path), timeout=1.5, script=str(tmp_path / "script.py")) == 1
    finally:
        server = client._server
        assert server is not None and server.stdin is not None
        server.stdin.close()
        server.wait(30)


_DRIVERS = '''
import os

from reference_driver.device import ReferenceDevice


def named_by_the_environment():
    device = ReferenceDevice()
    device.name = os.environ["WARM_ZYGOTE_NAME"]
    return device


def refusing():
    raise RuntimeError("no device in this slot")
'''

_STARTS_SERVICES = '''
import dataclasses
import json
import os
import sys

from harness.api.errors import DriverLoadError
from harness.service.supervisor import DriverService


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


os.environ["WARM_ZYGOTE_NAME"] = "named in the session"
service = DriverService("drivers_here.py:named_by_the_environment")
zygote = parent_of(service.pid)
capabilities = service.device.capabilities()
seen = {"name": service.name,
        "capabilities": {field.name: sorted(map(str, value)) if isinstance(value, frozenset) else repr(value)
                         for field in dataclasses.fields(capabilities) for value in [getattr(capabilities, field.name)]},
        "zygote_is_a_child": parent_of(zygote) == os.getpid()}
service.close()
try:
    DriverService("drivers_here.py:refusing")
except DriverLoadError as error:
    seen["refusal"] = str(error)
# An interpreter setting a fork cannot take on (read at a new interpreter's start): a zygote of its own.
os.environ["PYTHONHASHSEED"] = str(int(os.environ.get("PYTHONHASHSEED", "0") or 0) + 1)
service = DriverService("drivers_here.py:named_by_the_environment")
seen["other_settings_zygote_is_a_child"] = parent_of(parent_of(service.pid)) == os.getpid()
service.close()
with open(sys.argv[1], "w") as out:
    json.dump(seen, out)
'''


def test_a_session_s_zygote_is_forked_by_the_template_and_serves_as_a_new_one_would(tmp_path: Path) -> None:
    """A warm session's driver zygote comes from the server's template, not a new interpreter, and
    sees what one started by the session sees: its directory (a driver file named relative to
    it), its environment of now, and its output (the factory's error in the load failure).  A
    session whose interpreter settings (PYTHON*) differ from the template's starts one cold."""
    (tmp_path / "drivers_here.py").write_text(_DRIVERS)
    (tmp_path / "script.py").write_text(_STARTS_SERVICES)
    assert run_script("script.py", str(tmp_path), timeout=120, arguments=["warm.json"]) == 0
    cold = subprocess.run([sys.executable, "script.py", "cold.json"], cwd=tmp_path, timeout=120)
    assert cold.returncode == 0
    warm, cold_seen = (json.loads((tmp_path / name).read_text()) for name in ("warm.json", "cold.json"))
    assert warm["zygote_is_a_child"] is False and cold_seen["zygote_is_a_child"] is True
    assert warm["other_settings_zygote_is_a_child"] is True
    assert warm["name"] == cold_seen["name"] == "named in the session"
    assert warm["capabilities"] == cold_seen["capabilities"]
    assert "no device in this slot" in warm["refusal"] and "no device in this slot" in cold_seen["refusal"]
    # The zygotes ended with their services: the template (the server's one child) is left with none.
    server = warm_sessions._client._server
    assert server is not None
    template = int(Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text())
    deadline = time.monotonic() + 30
    while Path(f"/proc/{template}/task/{template}/children").read_text().split() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{template}/task/{template}/children").read_text().split()


_ASKS_FOR_A_SESSION = '''
import json
import os
import sys
import threading
import time

from harness.integration import warm_sessions

if sys.argv[1] == "nested":
    code = warm_sessions.run_script("inner.py", os.getcwd(), timeout=120)
    with open("nested.json", "w") as out:
        json.dump({"code": code, "server": os.getppid(), "own_server": warm_sessions._client._server is not None}, out)
else:  # a session asks for one that never ends, then is killed itself
    threading.Thread(target=warm_sessions.run_script, args=("sleeper.py", os.getcwd()), kwargs={"timeout": 600},
                     daemon=True).start()
    time.sleep(600)
'''

_INNER = '''
import json
import os

with open("inner.json", "w") as out:
    json.dump({"parent": os.getppid()}, out)
raise SystemExit(4)
'''

_SLEEPER = '''
import os
import time

with open("sleeper.pid", "w") as out:
    out.write(str(os.getpid()))
time.sleep(600)
'''


def test_a_session_s_own_sessions_are_forked_by_its_server_and_end_with_it(tmp_path: Path) -> None:
    """A session's rerun checks are sessions too: the server that forked it forks them (no server
    of its own, a new interpreter's imports), reports their exit codes to it, and kills them when
    the session that asked is gone."""
    (tmp_path / "outer.py").write_text(_ASKS_FOR_A_SESSION)
    (tmp_path / "inner.py").write_text(_INNER)
    (tmp_path / "sleeper.py").write_text(_SLEEPER)
    assert run_script("outer.py", str(tmp_path), timeout=120, arguments=["nested"]) == 0
    nested = json.loads((tmp_path / "nested.json").read_text())
    inner = json.loads((tmp_path / "inner.json").read_text())
    assert nested == {"code": 4, "server": inner["parent"], "own_server": False}
    with pytest.raises(subprocess.TimeoutExpired):
        run_script("outer.py", str(tmp_path), timeout=10, arguments=["killed"])
    sleeper = int((tmp_path / "sleeper.pid").read_text())
    deadline = time.monotonic() + 30
    while Path(f"/proc/{sleeper}").exists() and "Z" not in Path(f"/proc/{sleeper}/stat").read_text().split()[2] \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{sleeper}").exists() or Path(f"/proc/{sleeper}/stat").read_text().split()[2] == "Z"
