"""Drivers that misbehave the way real ones do (issue 16): each is the reference with one fault.

Loaded by the drills as ``--driver=tests/reliability/drills.py:<name>``; a drill's marker (the
environment variable DRILL_MARKER) names the helper processes a driver starts, so that the drill
can look for survivors.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

from harness.api.hal import ErrorStatus
from reference_driver import ReferenceDevice
from reference_driver.device import ReferencePreparedModel


def _with_execute(behaviour) -> ReferenceDevice:
    class Prepared(ReferencePreparedModel):
        def execute(self, request):
            return behaviour(self, request, super().execute)

    return ReferenceDevice(prepared_model_class=Prepared)


class _Exit:
    def __reduce__(self):
        return (os._exit, (0,))


def forged_pass():
    """Every execute's reply unpickles to os._exit(0) in whoever decodes it."""
    return _with_execute(lambda self, request, execute: (execute(request), _Exit())[1])


def segfault_every_execute():
    return _with_execute(lambda self, request, execute: ctypes.string_at(0))


def exit_every_execute():
    return _with_execute(lambda self, request, execute: os._exit(3))


def _forever(self, request, execute):
    while True:
        time.sleep(0.05)


def hang_every_execute():
    return _with_execute(_forever)


def _slow(self, request, execute):
    time.sleep(float(os.environ.get("DRILL_SLOW_S", "1.2")))
    return execute(request)


def slow_but_correct():
    return _with_execute(_slow)


def keyerror_every_execute():
    return _with_execute(lambda self, request, execute: {}["driver bug"])


_LEAK: list[bytearray] = []


def _leaky(self, request, execute):
    _LEAK.append(bytearray(64 * 1024 * 1024))  # touched: the pages are really taken
    _LEAK[-1][::4096] = b"\1" * len(range(0, len(_LEAK[-1]), 4096))
    return execute(request)


def leaks_memory():
    return _with_execute(_leaky)


def _chatty(self, request, execute):
    sys.stdout.write("x" * 65535 + "\n")
    sys.stdout.flush()
    return execute(request)


def chatty():
    """64 KiB of output per call."""
    return _with_execute(_chatty)


def _junk(self, request, execute):
    result = execute(request)
    object.__setattr__(result, "junk", b"\0" * (24 << 20))  # a correct result carrying 24 MiB more
    return result


def junk_in_result():
    return _with_execute(_junk)


class _Undecodable:
    def __reduce__(self):
        return (ErrorStatus, (999,))  # one of the harness's own types, and its constructor raises ValueError


def undecodable_reply():
    return _with_execute(lambda self, request, execute: (execute(request), _Undecodable())[1])


def closes_every_descriptor():
    def close_all(self, request, execute):
        os.closerange(3, 65536)
        return execute(request)
    return _with_execute(close_all)


def starts_helpers():
    """Starts helper processes that outlive their parent unless someone ends them: one in the
    service's process group, one in a session of its own, one daemon that forked twice."""
    marker = os.environ.get("DRILL_MARKER", "driver-harness-drill")
    sleeper = [sys.executable, "-c", "import time, sys; time.sleep(600)", marker]
    subprocess.Popen(sleeper)
    subprocess.Popen(sleeper, start_new_session=True)
    if os.fork() == 0:  # a daemon: fork, new session, fork again, the middle one exits
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, sleeper)
        os._exit(0)
    return ReferenceDevice()


def cannot_start_while_flagged():
    """The reference, but a start of its service exits (code 5) while the file DRILL_START_FLAG names
    exists: a restart that fails, and a later one that works."""
    flag = os.environ.get("DRILL_START_FLAG", "")
    if flag and os.path.exists(flag):
        print("drill: cannot start now", file=sys.stderr, flush=True)
        os._exit(5)
    return ReferenceDevice()


def returns_none():
    return _with_execute(lambda self, request, execute: (execute(request), None)[1])


def returns_wrong_type():
    return _with_execute(lambda self, request, execute: {"ok": True})


def processes_with(marker: str) -> list[str]:
    """Processes whose environment holds ``marker``: every process a run started inherits it (a
    zombie has no command line: it is gone).  Not a driver: the drills and the benchmark look
    for survivors with it."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                environment = Path(f"/proc/{entry}/environ").read_bytes()
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker.encode() in environment and command:
                found.append(f"{entry}: {command[:200]}")
    return found


__all__ = [name for name in dir() if not name.startswith("_") and callable(globals()[name])
           and name not in ("ReferenceDevice", "ReferencePreparedModel", "ErrorStatus", "Path", "processes_with")]
