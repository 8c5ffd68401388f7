"""pytest sessions forked from a process that has already imported what every session imports.

``harness score`` runs over a hundred short pytest sessions: a seeded bug is often caught within a
second of its session's start.  A new interpreter spends about as long again importing pytest,
hypothesis, numpy and the harness before it collects a test.  A warm server (a fresh interpreter,
started once, that imports ``PRELOAD`` and then forks a child per session) starts each session
with all of that done.  The score also runs each catch's reproducer, a script that runs a pytest
session of its own: it is forked the same way (``run_script``), as ``python SCRIPT`` would run it.

Each session is still its own process, forked from the server rather than from the caller, so it
inherits none of the caller's threads or state, and nothing passes from one session to the next.
A driver that takes its session down takes only that session down.  The driver services a session
starts come from zygotes forked by a template the server forked first (`zygote_template`).

The server listens on nothing: it reads its requests from the pipe its parent started it with,
and requests and replies are JSON lines of a closed set of fields, never pickles.

    parent -> server   {"session": N, "arguments": [...], "cwd": "...", "environment": {...}}
                       ... and "script": "PATH" to run that file as __main__ with those arguments
    server -> parent   {"session": N, "pid": P}      forked
                       {"session": N, "exit": CODE}  ended (a negative code: killed by that signal)
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import IO, Any

from harness.service import zygote_template

#: What every session of the suites imports, read once by the server.  Only a speed-up: a module
#: missing here is imported by each session itself, and one that fails to import here is skipped.
#: Test modules are not listed, so pytest still imports (and rewrites the asserts of) each one.
PRELOAD = (
    "numpy", "pytest", "hypothesis", "hypothesis.stateful", "xdist.plugin",
    "pygments.lexers.python", "pygments.formatters.terminal",
    "harness.integration.plugin", "harness.integration.golden", "harness.integration.custom_calls",
    "harness.integration.histories", "harness.judging.lockstep", "harness.judging.shrinking",
    "harness.judging.custom_calls", "harness.strategies.domains", "harness.strategies.custom_calls",
    "harness.strategies.mutations", "harness.strategies.layouts", "harness.cts.check", "harness.cts.corpus",
    "reference_driver.device", "harness.drivers.inline",
)

#: How often the server looks for ended sessions while no request comes.
_REAP_EVERY_S = 0.02
#: How long a server may take to fork a session, its imports included, before it counts as stuck.
_FORK_WITHIN_S = 60.0


class _Session:
    def __init__(self) -> None:
        self.pid: int | None = None
        self.exit: int | None = None
        self.forked = threading.Event()
        self.ended = threading.Event()


class _Client:
    """The caller's side: one server per process, started at the first session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: subprocess.Popen | None = None
        self._sessions: dict[int, _Session] = {}
        self._numbered = 0

    def run(self, arguments: Sequence[str], cwd: str, timeout: float, script: str | None = None) -> int:
        with self._lock:
            server = self._started()
            self._numbered += 1
            number, session = self._numbered, _Session()
            self._sessions[number] = session
            assert server.stdin is not None
            request: dict[str, Any] = {"session": number, "arguments": list(arguments), "cwd": cwd,
                                       "environment": dict(os.environ)}
            if script is not None:
                request["script"] = script
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
        try:
            # The timeout is the session's own: it counts from the fork, not from a server still
            # importing PRELOAD on a busy machine.
            if not session.forked.wait(_FORK_WITHIN_S) and not session.ended.is_set():
                server.kill()  # a server that has not forked it is stuck: the next session starts a new one
                session.ended.wait()
                raise subprocess.TimeoutExpired([script or "pytest", *arguments], _FORK_WITHIN_S)
            if not session.ended.wait(timeout):
                try:
                    assert session.pid is not None
                    os.kill(session.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # it ended meanwhile
                session.ended.wait()
                raise subprocess.TimeoutExpired([script or "pytest", *arguments], timeout)
            assert session.exit is not None
            return session.exit
        finally:
            with self._lock:
                self._sessions.pop(number, None)

    def _started(self) -> subprocess.Popen:
        if self._server is None or self._server.poll() is not None:
            self._server = subprocess.Popen([sys.executable, "-m", "harness.integration.warm_sessions"],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            text=True, close_fds=True)
            threading.Thread(target=self._read, args=(self._server,), daemon=True, name="warm-sessions-reader").start()
        return self._server

    def _read(self, server: subprocess.Popen) -> None:
        assert server.stdout is not None
        for line in server.stdout:
            try:
                reply = json.loads(line)
            except ValueError:
                continue  # not a reply (the server's own output goes elsewhere; this is a guard)
            with self._lock:
                session = self._sessions.get(reply["session"])
            if session is None:
                continue
            if "pid" in reply:
                session.pid = int(reply["pid"])
                session.forked.set()
            else:
                session.exit = int(reply["exit"])
                session.ended.set()
        with self._lock:  # the server is gone: no session of it will report
            orphans = list(self._sessions.values())
        for session in orphans:
            if not session.ended.is_set():
                session.exit = -int(signal.SIGKILL)
                session.ended.set()
                session.forked.set()


_client = _Client()


def run_pytest(arguments: Sequence[str], cwd: str, timeout: float) -> int:
    """``pytest arguments`` in ``cwd`` with no input and its output discarded; its exit code (negative:
    killed by that signal).  Raises ``subprocess.TimeoutExpired`` (after killing it) if it runs longer
    than ``timeout`` seconds."""
    return _client.run(arguments, cwd, timeout)


def run_script(script: str, cwd: str, timeout: float, arguments: Sequence[str] = ()) -> int:
    """``python script arguments`` in ``cwd``, as ``run_pytest`` runs a session: no input, output
    discarded, its exit code (1 for an exception it let out, negative: killed by that signal), and
    ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
    return _client.run(arguments, cwd, timeout, script=os.path.abspath(os.path.join(cwd, script)))


# --------------------------------------------------------------------------- the server


def _serve(requests: IO[str], replies: IO[str]) -> None:
    # First, while this process has imported neither pytest nor the suites: the sessions' driver
    # zygotes are forked from a process holding only what a zygote holds (zygote_template).
    try:
        zygote_template.start()
    except (ImportError, OSError):
        pass  # each session starts its zygotes as new interpreters
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # each session imports what it needs
    running: dict[int, int] = {}  # pid -> session
    pending = ""
    closed = False
    while not closed or running:
        readable, _, _ = select.select([requests] if not closed else [], [], [], _REAP_EVERY_S)
        if readable:
            chunk = os.read(requests.fileno(), 65536).decode("utf-8")
            closed = not chunk
            pending += chunk
            while "\n" in pending:
                line, pending = pending.split("\n", 1)
                request = json.loads(line)
                script = request.get("script")
                pid = _fork_session([str(a) for a in request["arguments"]], str(request["cwd"]),
                                    {str(k): str(v) for k, v in request["environment"].items()}, requests, replies,
                                    None if script is None else str(script))
                running[pid] = int(request["session"])
                _reply(replies, {"session": running[pid], "pid": pid})
            if closed:  # the caller is gone: so are its sessions
                for pid in running:
                    os.kill(pid, signal.SIGKILL)
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            if pid in running:
                _reply(replies, {"session": running.pop(pid), "exit": os.waitstatus_to_exitcode(status)})


def _reply(replies: IO[str], message: dict[str, Any]) -> None:
    replies.write(json.dumps(message) + "\n")
    replies.flush()


def _fork_session(arguments: list[str], cwd: str, environment: dict[str, str], requests: IO[str], replies: IO[str],
                  script: str | None = None) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 3  # pytest's "internal error", should the session itself fail to start
    try:
        os.close(requests.fileno())
        os.close(replies.fileno())
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.chdir(cwd)
        os.environ.clear()  # the caller's environment now, as a process it started would have
        os.environ.update(environment)
        if script is not None:
            code = _run_as_main(script, arguments)
        else:
            import pytest

            code = int(pytest.main(arguments))
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _run_as_main(script: str, arguments: list[str]) -> int:
    """What ``python script arguments`` exits with: the script's directory first on the path, its
    ``SystemExit`` code, and 1 (after the traceback) for any other exception it lets out."""
    sys.argv = [script, *arguments]
    sys.path[0] = os.path.dirname(script)
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    # Replies get a descriptor of their own: whatever a preloaded module prints goes to the null device.
    _replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    _serve(sys.stdin, _replies)
