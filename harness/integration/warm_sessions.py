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

A session asks for sessions of its own (a failure's rerun checks, `recording`) from the server
that forked it, over a socket pair it inherited, rather than starting a server of its own (a new
interpreter importing ``PRELOAD``: 1.5-2 CPU-seconds).  A session's sessions end with it.

Nothing of a session outlives it.  A session killed at its deadline cannot clean up after itself
(a rerun script's ``record.jsonl``, its driver service's socket directory), so each gets a
temporary directory of its own as its TMPDIR, in its caller's, which the server removes once the
session has ended, however it ended.  The process that started a server stops it at its exit and
waits for it: the server ends the sessions still running, cleans up after them, and waits for its
zygote template to end.

The server listens on nothing: it reads its requests from the pipe its parent started it with and
from the socket pairs of the sessions it forked, and requests and replies are JSON lines of a
closed set of fields, never pickles.

    parent or session -> server   {"session": N, "arguments": [...], "cwd": "...", "environment": {...}}
                                  ... and "script": "PATH" to run that file as __main__ with those arguments
    server -> the one that asked  {"session": N, "pid": P}      forked
                                  {"session": N, "exit": CODE}  ended (a negative code: killed by that signal)
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any

from harness.api.errors import HarnessError
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
#: How long a server told to stop (its parent gone) may take to end its sessions and clean up after them.
_STOP_WITHIN_S = 30.0
#: Each session's own temporary directory (its TMPDIR), removed by the server once the session has
#: ended, however it ended: a session killed at its deadline leaves nothing there.  Its name is short:
#: a driver service's socket directory goes in it, and a socket's whole path must fit in 107 bytes
#: (past that, the service's directory goes to /tmp, out of the session's: see supervisor._socket_directory).
SESSION_DIRECTORY_PREFIX = "dh-"


class _Session:
    def __init__(self, via_channel: bool) -> None:
        self.via_channel = via_channel  # asked of the server that forked this process
        self.pid: int | None = None
        self.exit: int | None = None
        self.forked = threading.Event()
        self.ended = threading.Event()


class _Client:
    """The caller's side: one server per process, started at the first session; in a session
    forked by a server, that server, asked over ``channel`` (the socket the session inherited)."""

    def __init__(self, channel: socket.socket | None = None) -> None:
        self._lock = threading.Lock()
        self._server: subprocess.Popen | None = None
        self._channel = channel
        self._channel_read = False
        self._sessions: dict[int, _Session] = {}
        self._numbered = 0
        self._stopped_at_exit = False

    def run(self, arguments: Sequence[str], cwd: str, timeout: float, script: str | None = None) -> int:
        request: dict[str, Any] = {"arguments": list(arguments), "cwd": cwd, "environment": dict(os.environ)}
        if script is not None:
            request["script"] = script
        with self._lock:
            self._numbered += 1
            number = request["session"] = self._numbered
            session = self._sessions[number] = self._send(json.dumps(request) + "\n")
        try:
            # The timeout is the session's own: it counts from the fork, not from a server still
            # importing PRELOAD on a busy machine.
            if not session.forked.wait(_FORK_WITHIN_S) and not session.ended.is_set():
                self._give_up_on(session)  # a server that has not forked it is stuck
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

    def _send(self, line: str) -> _Session:
        """Send a request (holding the lock): to the server that forked this process while it
        answers, else to this process's own server."""
        if self._channel is not None:
            if not self._channel_read:
                self._channel_read = True
                stream = self._channel.makefile("r", encoding="utf-8")
                threading.Thread(target=self._read, args=(stream, True), daemon=True, name="warm-sessions-reader").start()
            try:
                self._channel.sendall(line.encode("utf-8"))
                return _Session(via_channel=True)
            except OSError:  # that server is gone: this process starts one of its own
                self._channel.close()
                self._channel = None
        server = self._started()
        assert server.stdin is not None
        server.stdin.write(line)
        server.stdin.flush()
        return _Session(via_channel=False)

    def _give_up_on(self, session: _Session) -> None:
        """A server that did not fork ``session`` is stuck: the next session goes to a new one."""
        if not session.via_channel:
            assert self._server is not None
            self._server.kill()
            return
        with self._lock:
            channel, self._channel = self._channel, None
        if channel is not None:
            channel.shutdown(socket.SHUT_RDWR)  # the server kills what it forked for this process

    def _started(self) -> subprocess.Popen:
        if self._server is None or self._server.poll() is not None:
            self._server = subprocess.Popen([sys.executable, "-m", "harness.integration.warm_sessions"],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            text=True, close_fds=True)
            assert self._server.stdout is not None
            threading.Thread(target=self._read, args=(self._server.stdout, False), daemon=True,
                             name="warm-sessions-reader").start()
            if not self._stopped_at_exit:
                self._stopped_at_exit = True
                atexit.register(self.stop_server)
        return self._server

    def stop_server(self) -> None:
        """End this process's server, and wait for it: it ends the sessions still running, removes
        what they left in their temporary directories, and ends the zygote template.  Run at exit,
        so that nothing of the server outlives the process that started it."""
        server, self._server = self._server, None
        if server is None or server.poll() is not None:
            return
        assert server.stdin is not None
        try:
            server.stdin.close()
            server.wait(timeout=_STOP_WITHIN_S)
        except (OSError, subprocess.TimeoutExpired):
            server.kill()
            server.wait()

    def _read(self, replies: IO[str], via_channel: bool) -> None:
        for line in replies:
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
            orphans = [s for s in self._sessions.values() if s.via_channel == via_channel]
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


class _Channel:
    """Where requests come from and their replies go: the parent's pipes, or a session's socket."""

    def __init__(self, fd: int, write: Callable[[bytes], Any], sock: socket.socket | None = None) -> None:
        self.fd = fd
        self.write = write
        self.sock = sock  # a session's: the server's end of its pair, closed when the session goes
        self.pending = b""

    def reply(self, message: dict[str, Any]) -> None:
        try:
            self.write(json.dumps(message).encode("utf-8") + b"\n")
        except OSError:
            pass  # the session that asked is gone, and so are the sessions it asked for


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
    try:  # the installed drivers, described once by a probe: every session forked here inherits them
        from harness.drivers.catalog import load_catalog

        load_catalog()
    except HarnessError:
        pass  # each session asks again, and says what is wrong
    replies_fd = replies.fileno()

    def to_parent(data: bytes) -> None:
        os.write(replies_fd, data)

    parent = _Channel(requests.fileno(), to_parent)
    channels: dict[int, _Channel] = {parent.fd: parent}
    running: dict[int, tuple[_Channel, int, str]] = {}  # pid -> who asked, its number for the session, its TMPDIR
    while parent.fd in channels or running:
        readable, _, _ = select.select(list(channels), [], [], _REAP_EVERY_S)
        for fd in readable:
            channel = channels[fd]
            try:
                chunk = os.read(fd, 65536)
            except ConnectionResetError:  # a session that died with a reply unread
                chunk = b""
            if not chunk:  # who asked is gone: so are the sessions it asked for
                del channels[fd]
                if channel.sock is not None:
                    channel.sock.close()
                for pid, (asked_by, _, _) in running.items():
                    if asked_by is channel:
                        os.kill(pid, signal.SIGKILL)
                continue
            channel.pending += chunk
            while b"\n" in channel.pending:
                line, channel.pending = channel.pending.split(b"\n", 1)
                request = json.loads(line)
                script = request.get("script")
                environment = {str(k): str(v) for k, v in request["environment"].items()}
                scratch = _session_directory(environment)
                ours, theirs = socket.socketpair()
                pid = _fork_session([str(a) for a in request["arguments"]], str(request["cwd"]),
                                    {**environment, "TMPDIR": scratch},
                                    [*channels, replies_fd, ours.fileno()], theirs,
                                    None if script is None else str(script))
                theirs.close()
                channels[ours.fileno()] = _Channel(ours.fileno(), ours.sendall, ours)
                running[pid] = (channel, int(request["session"]), scratch)
                channel.reply({"session": running[pid][1], "pid": pid})
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            if pid in running:
                asked_by, number, scratch = running.pop(pid)
                shutil.rmtree(scratch, ignore_errors=True)
                asked_by.reply({"session": number, "exit": os.waitstatus_to_exitcode(status)})
    zygote_template.stop()


def _session_directory(environment: dict[str, str]) -> str:
    """A new temporary directory for one session, where its caller's temporary files would go."""
    try:
        return tempfile.mkdtemp(prefix=SESSION_DIRECTORY_PREFIX, dir=environment.get("TMPDIR") or None)
    except OSError:  # the caller's TMPDIR is not writable here: the server's own
        return tempfile.mkdtemp(prefix=SESSION_DIRECTORY_PREFIX)


def _fork_session(arguments: list[str], cwd: str, environment: dict[str, str], servers_fds: list[int],
                  channel: socket.socket, script: str | None = None) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 3  # pytest's "internal error", should the session itself fail to start
    try:
        for fd in servers_fds:  # the server's pipes and its ends of the other sessions' pairs
            os.close(fd)
        # This session's own sessions are asked of the server.  The module by its name: the server
        # runs as __main__, and the session's code imports harness.integration.warm_sessions.
        module = importlib.import_module("harness.integration.warm_sessions")
        setattr(module, "_client", module._Client(channel))  # noqa: B010  (a module object: typed without attributes)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.chdir(cwd)
        os.environ.clear()  # the caller's environment now, as a process it started would have
        os.environ.update(environment)
        tempfile.tempdir = None  # read from TMPDIR again: the session's own directory
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
