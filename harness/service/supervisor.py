"""Start, watch and replace the driver service process; hand out Driver API proxies.

`DriverService` owns one worker process at a time.  Every call has a deadline: a call
past it makes the worker dump its thread stacks, then the worker is killed and the call
fails with `DriverHang`; a worker that dies during a call fails it with `DriverCrash`
(signal or exit code, and the tail of its stderr).  The next call starts a fresh worker,
so the next test (or hypothesis' next shrinking step) runs on a clean service.  A start that
fails is the failure of the call that needed it; later calls try a new start after a back-off,
and fail at once until then, each naming its own call and the start that failed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import IO, Any, NoReturn

from harness.api.errors import DriverCrash, DriverFault, DriverHang, DriverLoadError
from harness.api.hal import Capabilities
from harness.service import wire, zygote, zygote_template
from harness.tooling.sandbox import Sandbox, plan
from harness.service.messages import (FROM_ZYGOTE, Exited, ServiceObject, Spawn, Spawned, SpawnFailed, Target, UnknownMessage,
                                      ZygoteStarted)
from harness.service.breaker import PROBE_DEADLINE_S, Breaker
from harness.service.client import Connection, taken
from harness.service.output import BoundedOutput
from harness.service.proxies import PROXY_CLASSES, CustomCallsProxy, DeviceProxy, Remote, make_proxy

STDERR_TAIL_LINES = 40
#: The per-call budget: calls past it are counted and reported (the deadline is --driver-timeout).
SLOW_CALL_S = 1.0
_HANG_DUMP_WAIT_S = 0.5
_START_TIMEOUT_S = 60.0
#: After a start of the service fails, the next is tried no sooner than this, doubled after each
#: further failure (and never sooner than the failed start took: one that hung waits its deadline
#: out again only after as long), up to START_BACKOFF_MAX_S.  Calls meanwhile fail at once, each
#: naming the start that failed.
START_BACKOFF_S = 0.5
START_BACKOFF_MAX_S = 60.0


def _tail(file: IO[bytes] | BoundedOutput | None, lines: int = STDERR_TAIL_LINES, ended: bool = False) -> str:
    """The end of a service's stderr; from its fatal-error report on, when there is one (``ended``:
    the service is known to have ended, so all it wrote can be waited for)."""
    if file is None:
        return ""
    if isinstance(file, BoundedOutput):
        file.settle(writers_gone=ended)
        text = file.text()
    else:
        file.flush()
        file.seek(0)
        text = file.read().decode("utf-8", "replace")
    fatal = text.rfind("Fatal Python error")
    if fatal >= 0:
        return "\n".join(text[fatal:].splitlines()[:200])
    return "\n".join(text.splitlines()[-lines:])


def _raise_fault(faults: list[DriverFault]) -> NoReturn:
    # One place raises every fault of a call, the breaker's too: hypothesis tells failures
    # apart by where they are raised, and a crash is the same failure before and after the
    # breaker opens, and whether the call was begun early or made at once.  The fault comes in a
    # list it is taken out of, so that no frame of its traceback holds it (see `client.taken`).
    raise faults.pop().with_traceback(None) from None


class Started:
    """A call `_Endpoint.begin` sent (or made at once, or failed to send)."""

    __slots__ = ("description", "target", "method", "time", "connection", "pending", "value", "error")

    def __init__(self, description: Any, target: Target, method: str) -> None:
        self.description, self.target, self.method = description, target, method
        self.time = time.monotonic()
        self.connection: Connection | None = None
        self.pending: Any = None
        self.value: Any = None
        self.error: BaseException | None = None


class _Endpoint:
    """What proxies talk to: one connection at a time, numbered by generation."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.generation = 0
        self.connection: Connection | None = None
        self.device = DeviceProxy(self)
        self.custom_calls = CustomCallsProxy(self)
        self.name = self.version = ""
        self.capabilities: Capabilities | None = None
        self._lock = threading.RLock()
        self.breaker = Breaker()
        self.starts = 0  # service processes started (a further client starts none)
        # Calls past the per-call budget: a slow but correct driver is told why its run is long.
        self.calls = 0
        self.slow_calls = 0
        self.slowest: tuple[float, str] = (0.0, "")

    # ----------------------------------------------------------------- marshalling

    def reference(self, obj: Remote) -> tuple:
        """How a proxy travels: its id, or 'foreign' if it is of another connection or service."""
        if obj._endpoint is self and obj._generation == self.generation:
            return ("object", obj._id)
        return ("foreign", f"{obj!r} of another connection or an earlier service")

    @property
    def references(self) -> dict[type, Any]:
        return {cls: self.reference for cls in PROXY_CLASSES}

    def load_object(self, pid: tuple) -> Any:
        _, number, kind = pid
        return make_proxy(self, number, self.generation, kind)

    def drop(self, generation: int, number: int) -> None:
        connection = self.connection
        if connection is not None and generation == self.generation:
            connection.drop(number)

    # ----------------------------------------------------------------- calls

    def _connection_for(self, generation: int | None, description: str) -> Connection:
        raise NotImplementedError

    def call(self, generation: int | None, target: Target, method: str, args: tuple, description: Any,
             deadline: float | None = None) -> Any:
        """Make one call; ``deadline`` replaces the per-call one for a set-up step known to be slow
        (importing jax in the service), never to be shorter."""
        self.calls += 1
        key = ""
        probe = False
        faults: list[DriverFault] = []  # the fault to raise, held where raising it takes it out
        if self.breaker.watching:  # a fault happened: calls are counted per method (the usual case skips it)
            key = Breaker.key(description, target, method)
            probe, refusal = self.breaker.admit(key, description)
            if refusal is not None:
                faults.append(refusal)
                del refusal
        if not faults:
            # A probe is given less than a call, but a set-up step its own deadline still: a probe of
            # prepare_xla (importing jax in a new service) cut to 2 s failed every time on a loaded
            # machine, and its circuit never closed.
            timeout = max(min(self.timeout, PROBE_DEADLINE_S) if probe else self.timeout, deadline or 0.0)
            started = time.monotonic()
            try:
                connection = self._connection_for(generation, description)
                result = connection.call(target, method, args, timeout=timeout, description=description)
            except DriverFault as fault:
                self.breaker.failed(key or Breaker.key(description, target, method), fault)
                faults.append(fault)
            except BaseException:  # a DriverError is an answer
                if key:
                    self.breaker.answered(key)
                raise
            else:
                if key:
                    self.breaker.answered(key)
                return result
            finally:
                self._timed(started, description)
        _raise_fault(faults)

    def begin(self, generation: int | None, target: Target, method: str, args: tuple, description: Any) -> Started:
        """Send a call and return; `finish` reads its reply.  After a fault (the breaker is
        watching) the call is made at once, so calls are still admitted one at a time."""
        started = Started(description, target, method)
        if self.breaker.watching:
            try:
                started.value = self.call(generation, target, method, args, description)
            except BaseException as error:
                started.error = error
            return started
        self.calls += 1
        try:
            started.connection = self._connection_for(generation, description)
            started.pending = started.connection.begin(target, method, args, timeout=self.timeout, description=description)
        except DriverFault as fault:
            self.breaker.failed(Breaker.key(description, target, method), fault)
            started.error = fault
        return started

    def finish(self, started: Started) -> Any:
        """The result of a call `begin` sent: its value, or what it raises."""
        if started.pending is None:  # made or failed in `begin`
            if isinstance(started.error, DriverFault):
                _raise_fault([taken(started, "error")])
            if started.error is not None:
                raise taken(started, "error")  # not from `started`: see `taken`
            return started.value
        assert started.connection is not None
        try:
            return started.connection.finish(started.pending)
        except DriverFault as fault:
            self.breaker.failed(Breaker.key(started.description, started.target, started.method), fault)
            faults = [fault]
        finally:
            self._timed(started.time, started.description)
        _raise_fault(faults)

    def _timed(self, started: float, description: Any) -> None:
        elapsed = time.monotonic() - started
        if elapsed > SLOW_CALL_S:
            self.slow_calls += 1
            if elapsed > self.slowest[0]:
                self.slowest = (elapsed, str(description))

    def summary(self) -> dict:
        """What the run asked of the service, as data: for the record and the terminal summary."""
        return {"starts": self.starts, "calls": self.calls, "slow_calls": self.slow_calls,
                "slow_call_budget_s": SLOW_CALL_S, "slowest_call": {"seconds": round(self.slowest[0], 3),
                                                                   "call": self.slowest[1][:200]},
                "breaker_opened": list(self.breaker.opened)}

    def _start_deadline(self) -> float:
        return max(self.timeout, _START_TIMEOUT_S)

    def _handshake(self) -> None:
        assert self.connection is not None
        self.name, self.version, self.capabilities = self.connection.call(
            ServiceObject.SERVICE.value, "hello", (), timeout=self._start_deadline(), description="service start-up")


def _is_pid(value: object) -> bool:
    return type(value) is int and 1 < value < 2**31 and value != os.getpid()


def _parent_of(pid: int) -> int | None:
    """The parent process of ``pid`` (None if it is gone: a service that died at once may be
    reaped before its `Spawned` is read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class _Zygote:
    """The harness side of the zygote process: spawn services, learn how they ended."""

    def __init__(self, driver: str, sandbox: Sandbox, plugins: Sequence[str] = ()) -> None:
        parent, child = wire.socketpair()
        self._stderr = tempfile.TemporaryFile()
        self.pid: int | None = None  # known at once if started here, from its first message if forked by a template
        self.process: subprocess.Popen | None = None
        environment = dict(os.environ)
        if plugins:
            environment[zygote.PLUGIN_ENVIRONMENT] = "\n".join(plugins)
        if sandbox.enforced:
            environment[zygote.SANDBOX_ENVIRONMENT] = os.pathsep.join(sandbox.writable)
            environment["TMPDIR"] = sandbox.writable[0]  # the driver's temporary files, where it may write them
        if not zygote_template.start_zygote(driver, child.fileno(), self._stderr.fileno(), environment):
            command = [sys.executable, "-X", "faulthandler", "-m", "harness.service.zygote", "--driver", driver,
                       "--fd", str(child.fileno())]
            self.process = subprocess.Popen(command, pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, env=environment,
                                            stdout=self._stderr, stderr=self._stderr, start_new_session=True)
            self.pid = self.process.pid
        child.close()
        self.sock = parent
        self._cond = threading.Condition()
        self._spawned: dict[int, tuple[bool, Any]] = {}
        self._exits: dict[int, int] = {}
        self._requests = itertools.count(1)
        self._closed = False
        threading.Thread(target=self._read, daemon=True, name="harness-zygote-reader").start()

    @property
    def alive(self) -> bool:
        # A zygote forked by the template is alive while it holds its end of the socket.
        return not self._closed and (self.process is None or self.process.poll() is None)

    def _read(self) -> None:
        # The zygote imports the driver's plugin, so after its first message anything on this
        # socket may be the driver's: decoded as untrusted data (`wire.decode`), and a process id
        # it names is believed only for a child of the zygote (never the harness, or a stranger
        # the harness would then signal).
        first = True
        for data, fds in wire.messages(self.sock):
            try:
                message, memories = wire.decode(data, fds, FROM_ZYGOTE)
            except (UnknownMessage, wire.UntrustedContent, ValueError, TypeError) as error:
                print(f"driver zygote: refused a message: {error}", file=sys.stderr)
                continue
            for memory in memories:
                memory.close()
            with self._cond:
                if isinstance(message, ZygoteStarted):
                    if first and self.pid is None and _is_pid(message.pid):  # sent before it loads any driver code
                        self.pid = message.pid
                elif isinstance(message, Exited) and _is_pid(message.pid) and type(message.status) is int:
                    self._exits[message.pid] = message.status
                elif isinstance(message, Spawned) and type(message.request) is int:
                    spawned = _is_pid(message.pid) and _parent_of(message.pid) in (self.pid, None)  # None: already gone
                    if spawned:  # a new process with this pid: an exit recorded for an earlier one (a reused pid) is not its
                        self._exits.pop(message.pid, None)
                    self._spawned[message.request] = ((True, message.pid) if spawned else
                                                      (False, f"the zygote named process {message.pid!r}, not a child of its own"))
                elif isinstance(message, SpawnFailed) and type(message.request) is int:
                    self._spawned[message.request] = (False, str(message.reason)[:2000])
                first = False
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def spawn(self, listen: str, stderr: BoundedOutput, memory_limit: int = 0) -> tuple[int, socket.socket]:
        parent, child = wire.socketpair()
        request = next(self._requests)
        try:
            data, _ = wire.encode(Spawn(request, listen, memory_limit))
            wire.send(self.sock, data, [child.fileno(), stderr.write_fd])
        finally:
            child.close()
        with self._cond:
            if not self._cond.wait_for(lambda: request in self._spawned or self._closed, timeout=_START_TIMEOUT_S):
                raise DriverLoadError("the driver zygote did not answer a spawn request")
            if request not in self._spawned:
                parent.close()
                raise DriverLoadError(f"the driver zygote exited:\n{_tail(self._stderr)}")
            ok, value = self._spawned.pop(request)
        if not ok:
            parent.close()
            raise DriverLoadError(f"could not start a driver service: {value}")
        return value, parent

    def exit_status(self, pid: int, timeout: float = 0.0) -> int | None:
        """The process's exit code (negative: killed by that signal), or None while it runs."""
        if timeout <= 0:  # asked before every call: a plain look-up, no lock (dict reads are atomic)
            status = self._exits.get(pid)
            return None if status is None else os.waitstatus_to_exitcode(status)
        with self._cond:
            self._cond.wait_for(lambda: pid in self._exits or self._closed, timeout=timeout)
            status = self._exits.get(pid)
        return None if status is None else os.waitstatus_to_exitcode(status)

    def startup_error(self) -> str:
        return _tail(self._stderr)

    def close(self) -> None:
        """End the zygote: it ends its services and what they left, then exits (killed after 5 s)."""
        if self.process is None:  # not this process's child: its exit shows as the end of its socket
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            with self._cond:
                ended = self._cond.wait_for(lambda: self._closed, timeout=5)
            if not ended and self.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)  # its own process group (setsid)
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        self._stderr.close()


#: A Unix socket's path must fit in sockaddr_un (108 bytes with its NUL).
_SOCKET_PATH_MAX = 107
_SOCKET_NAME_LENGTH = len("service-0123456789ab.sock") + 1


_THREAD_HEADERS = ("Thread 0x", "Current thread 0x")


def _without_idle_threads(dump: str) -> str:
    """A hung service's thread stacks with its idle call threads left out and counted.

    The service keeps a pool of call threads; all but the hung ones wait in `wire.receive`.
    Their stacks say nothing, and listed in thread order they can push the hung thread's
    stack past what a report keeps (a breaker refusal repeats only the first fault's first
    `breaker.FIRST_FAULT_CHARS` characters)."""
    idle_frame = f'File "{wire.__file__}"'
    kept, idle = [], 0
    for block in dump.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if (len(lines) > 1 and lines[0].startswith(_THREAD_HEADERS) and idle_frame in lines[1]
                and lines[1].rstrip().endswith(f" in {wire.receive.__name__}")):
            idle += 1
        else:
            kept.append(block)
    if idle:
        kept.append(f"({idle} more call threads were idle, waiting for a call)")
    return "\n\n".join(kept)


def _socket_directory() -> str:
    """A new directory only this user can enter (0700), in the temporary directory, or in /tmp
    when the temporary directory's path is too long for a socket address in it."""
    directory = tempfile.mkdtemp(prefix="driver-harness-")
    if len(directory) + _SOCKET_NAME_LENGTH > _SOCKET_PATH_MAX:
        os.rmdir(directory)
        directory = tempfile.mkdtemp(prefix="driver-harness-", dir="/tmp")
    return directory


def _build_cache() -> str:
    """The native build cache, made if missing: the sandbox allows writes beneath it (a driver's
    targets are built where they are called), and can only name a directory that exists."""
    from harness.tooling.build import cache_directory

    directory = cache_directory()
    directory.mkdir(parents=True, exist_ok=True)
    return str(directory)


class _StartHung(DriverLoadError):
    """The driver's start-up in a new service did not return within its deadline."""


#: How long a driver call may take before it is a hang (SVC-2) when the run does not say (--driver-timeout).
DEFAULT_CALL_DEADLINE_S = 10.0


class DriverService(_Endpoint):
    """The driver named by ``driver`` (any ``--driver`` spelling), in its own process."""

    def __init__(self, driver: str, timeout: float = DEFAULT_CALL_DEADLINE_S, memory_limit: int = 0,
                 plugins: Sequence[str] = (), sandboxed: bool = True) -> None:
        """``sandboxed=False`` (no command offers it) leaves the kernel's sandbox off: for measuring
        what it costs per call (benchmarks/bench_service.py)."""
        super().__init__(timeout)
        self.driver = driver
        # The labels of the plugin that registers it and of those that declare for it (the catalog's):
        # the only ones its zygote loads
        self.plugins = tuple(plugins)
        self.memory_limit = memory_limit  # bytes of address space (RLIMIT_AS); 0: none
        self.pid: int | None = None
        self.address = ""
        self._zygote: _Zygote | None = None
        self._stderr: BoundedOutput | None = None
        self._killed_for: str = ""
        self._hang_stacks = ""
        self._closed = False
        # Starts that failed in a row since the last that worked, when the next may be tried, and the
        # last one's failure (a start that hung is reported as a hang)
        self._failed_starts = 0
        self._next_start = 0.0
        self._start_failure: tuple[type[DriverFault], str] = (DriverCrash, "")
        # The services' listening sockets and the driver's temporary files live here: a directory
        # only this user can enter (0700), and the one place but the build cache the driver's
        # processes may write (`harness.tooling.sandbox`).
        self._socket_directory = _socket_directory()
        self.sandbox = plan([self._socket_directory, str(_build_cache())], enabled=sandboxed)
        try:
            self._start()
        except BaseException:  # no service to hand out: nothing of it stays (its zygote, its directory)
            self.close()
            raise

    def _start(self) -> None:
        if self._zygote is None or not self._zygote.alive:
            if self._zygote is not None:
                self._zygote.close()
            self._zygote = _Zygote(self.driver, self.sandbox, self.plugins)
        self.address = os.path.join(self._socket_directory, f"service-{secrets.token_hex(6)}.sock")
        self._stderr = BoundedOutput()
        self._killed_for = ""
        try:
            self.pid, sock = self._zygote.spawn(self.address, self._stderr, self.memory_limit)
            self._stderr.close_write_end()
        except DriverLoadError as error:
            raise DriverLoadError(f"driver {self.driver!r}: {error}\n{self._zygote.startup_error()}".rstrip()) from None
        self.generation += 1
        self.starts += 1
        self.connection = Connection(sock, self._broken, self.references, self.load_object)
        try:
            self._handshake()
        except DriverHang:  # the driver's own start-up hung: its stacks say where, its idle threads nothing
            stacks = self._hang_stacks
            self._stop_process()  # not the service: a later start may work (see `_start_again`)
            raise _StartHung(f"driver {self.driver!r}: the service did not start: the driver's factory, name, "
                             f"version and capabilities() did not return within {self._start_deadline():g} s.\n"
                             f"Service thread stacks:\n{stacks}") from None
        except DriverCrash as error:
            tail = _tail(self._stderr, ended=True) or self._zygote.startup_error()  # it died
            self._stop_process()
            raise DriverLoadError(f"driver {self.driver!r}: the service process did not start: {tail or error}") from None

    def _start_again(self, description: Any) -> None:
        """Replace the service's process with a new one (holding the lock).  A start that fails is a
        fault of the call that needed it (SVC-1; SVC-2 when it hung), never the end of the service:
        the next start is tried after a back-off (`START_BACKOFF_S`), and each call meanwhile fails at
        once, naming its own call and the start that failed."""
        if self._failed_starts and time.monotonic() < self._next_start:
            kind, why = self._start_failure
            raise kind(f"[{kind.requirement}] {description}: not called: the driver service could not be started "
                       f"again ({self._failed_starts} starts in a row failed; the next is tried in "
                       f"{self._next_start - time.monotonic():.1f} s). The last: {why}")
        self._stop_process()
        started = time.monotonic()
        try:
            self._start()
        except DriverLoadError as error:
            took = time.monotonic() - started
            self._failed_starts += 1
            backoff = max(START_BACKOFF_S * 2 ** (self._failed_starts - 1), took)
            self._next_start = time.monotonic() + min(backoff, START_BACKOFF_MAX_S)
            kind = DriverHang if isinstance(error, _StartHung) else DriverCrash
            self._start_failure = (kind, str(error))
            raise kind(f"[{kind.requirement}] {description}: the driver service could not be started again: {error}") from None
        self._failed_starts = 0

    def restart(self) -> None:
        """Replace the service's process with a new one: a fresh driver, as after a crash (the
        objects of the old one are gone; the device proxy goes on meaning "the driver")."""
        with self._lock:
            if self._closed:
                raise DriverCrash("[SVC-1] a restart of the driver service: the service was closed")
            self._start_again("a restart of the driver service")

    @property
    def running(self) -> bool:
        return (self.pid is not None and self.connection is not None and self.connection.alive
                and self._zygote is not None and self._zygote.exit_status(self.pid) is None)

    def _connection_for(self, generation: int | None, description: str) -> Connection:
        connection = self.connection  # the usual case, without the lock: a live service of this generation
        if connection is not None and (generation is None or generation == self.generation) and self.running:
            return connection
        with self._lock:
            if self._closed:  # a straggler thread must not start a service nobody will stop
                raise DriverCrash(f"[SVC-1] {description}: the driver service was closed")
            if not self.running:
                self._start_again(description)
            if generation is not None and generation != self.generation:
                raise DriverCrash(f"[SVC-1] {description}: the object belongs to a driver service that was replaced "
                                  f"after an earlier crash or hang; it no longer exists")
            assert self.connection is not None  # just started
            return self.connection

    # ----------------------------------------------------------------- failures

    def running_pid(self) -> int:
        """The process id of the service, started anew first if the last one is gone."""
        self._connection_for(None, "a start-up of the driver service")
        assert self.pid is not None
        return self.pid

    def output_mark(self) -> tuple[int, int]:
        """Where the service's output stands now (its generation, bytes written so far)."""
        return self.generation, self._stderr.written if self._stderr is not None else 0

    def output_since(self, mark: tuple[int, int]) -> str:
        """What the service printed since ``mark``, as far as it is kept (a replaced service: all
        its successor printed)."""
        if self._stderr is None:
            return ""
        self._stderr.settle(longest=0.2)
        return self._stderr.text(mark[1] if mark[0] == self.generation else 0)

    def _broken(self, description: str, reason: str) -> Exception:
        """The exception for a call the service did not answer (reason: timeout, eof, closed)."""
        pid, zygote = self.pid, self._zygote
        if reason == "timeout" and pid is not None and zygote is not None and zygote.exit_status(pid) is None:
            with self._lock:
                if not self._killed_for:
                    self._killed_for = description
                    try:
                        os.kill(pid, signal.SIGUSR1)  # faulthandler: every thread's stack to stderr
                    except ProcessLookupError:
                        pass
                    time.sleep(_HANG_DUMP_WAIT_S)
                    self._hang_stacks = _without_idle_threads(_tail(self._stderr, 400))
                    self._kill(pid)
        if self._killed_for:
            cause = ("" if self._killed_for == description
                     else f" (cut off: the service was killed because {self._killed_for} hung)")
            message = (f"[SVC-2] {description} did not return within {self.timeout:g} s{cause}; the driver service "
                       f"was killed and will be replaced.\nService thread stacks:\n{self._hang_stacks}")
            return DriverHang(message)
        code = zygote.exit_status(pid, timeout=10) if zygote is not None and pid is not None else None
        how = (f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
               else f"exited with code {code}" if code is not None else "stopped answering")
        message = (f"[SVC-1] the driver service died during {description}: {how}.\n"
                   f"Last lines of its stderr:\n{_tail(self._stderr, ended=code is not None)}")
        return DriverCrash(message)

    def _kill(self, pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self._zygote is not None:
            self._zygote.exit_status(pid, timeout=10)

    def _stop_process(self) -> None:
        if self.connection is not None:
            self.connection.shutdown()
            self.connection = None
        if self.pid is not None and self._zygote is not None:
            if self._zygote.exit_status(self.pid, timeout=3) is None:
                self._kill(self.pid)
            self.pid = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self.address:
            try:
                os.unlink(self.address)  # the killed service could not remove its socket
            except OSError:
                pass

    def close(self) -> None:
        """Stop the service and its zygote: no process or descriptor of theirs is left behind."""
        with self._lock:
            self._closed = True
            self._stop_process()
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None
            shutil.rmtree(self._socket_directory, ignore_errors=True)


class AttachedClient(_Endpoint):
    """A further client of a running service (as another process would connect)."""

    def __init__(self, address: str, timeout: float = DEFAULT_CALL_DEADLINE_S) -> None:
        super().__init__(timeout)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.connect(address)
        self.generation = 1
        self.connection = Connection(sock, self._broken, self.references, self.load_object)
        self._handshake()

    def _connection_for(self, generation: int | None, description: str) -> Connection:
        assert self.connection is not None
        return self.connection

    def _broken(self, description: str, reason: str) -> Exception:
        verb = "did not return in time" if reason == "timeout" else "lost its connection to the driver service"
        return DriverCrash(f"[SVC-1] {description} {verb}")

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
