"""Start, watch and replace the driver service process; hand out Driver API proxies.

`DriverService` owns one worker process at a time.  Every call has a deadline: a call
past it makes the worker dump its thread stacks, then the worker is killed and the call
fails with `DriverHang`; a worker that dies during a call fails it with `DriverCrash`
(signal or exit code, and the tail of its stderr).  The next call starts a fresh worker,
so the next test (or hypothesis' next shrinking step) runs on a clean service.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from harness.errors import DriverCrash, DriverHang, DriverLoadError
from harness.hal import Capabilities
from harness.service import wire
from harness.service.client import Connection
from harness.service.proxies import DeviceProxy, Remote, make_proxy

STDERR_TAIL_LINES = 40
_HANG_DUMP_WAIT_S = 0.5
_START_TIMEOUT_S = 60.0


def _tail(file, lines: int = STDERR_TAIL_LINES) -> str:
    file.flush()
    file.seek(0)
    text = file.read().decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:])


class _Endpoint:
    """What proxies talk to: one connection at a time, numbered by generation."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.generation = 0
        self.connection: Connection | None = None
        self.device = DeviceProxy(self)
        self.name = self.version = ""
        self.capabilities: Capabilities | None = None
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- marshalling

    def object_id(self, obj: Any) -> Any:
        if isinstance(obj, Remote):
            if obj._endpoint is self and obj._generation == self.generation:
                return ("object", obj._id)
            return ("foreign", f"{obj!r} of another connection or an earlier service")
        if hasattr(obj, "execute") or hasattr(obj, "copy_from"):
            return ("foreign", repr(obj))
        return None

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

    def call(self, generation: int | None, target: int, method: str, args: tuple, description: str) -> Any:
        connection = self._connection_for(generation, description)
        return connection.call(target, method, args, timeout=self.timeout, description=description)

    def _handshake(self) -> None:
        assert self.connection is not None
        self.name, self.version, self.capabilities = self.connection.call(
            0, "hello", (), timeout=max(self.timeout, _START_TIMEOUT_S), description="service start-up")


class DriverService(_Endpoint):
    """The driver named by ``driver`` (any ``--driver`` spelling), in its own process."""

    def __init__(self, driver: str, timeout: float = 10.0) -> None:
        super().__init__(timeout)
        self.driver = driver
        self.process: subprocess.Popen | None = None
        self.address = ""
        self.faults: list[str] = []
        self._stderr = None
        self._killed_for: str = ""
        self._start()

    def _start(self) -> None:
        parent, child = wire.socketpair()
        self.address = f"driver-harness-{os.getpid()}-{secrets.token_hex(6)}"
        self._stderr = tempfile.TemporaryFile()
        self._killed_for = ""
        command = [sys.executable, "-X", "faulthandler", "-m", "harness.service.worker", "--driver", self.driver,
                   "--fd", str(child.fileno()), "--listen", self.address]
        self.process = subprocess.Popen(command, pass_fds=[child.fileno()], stdin=subprocess.DEVNULL,
                                        stdout=self._stderr, stderr=self._stderr, start_new_session=True)
        child.close()
        self.generation += 1
        self.connection = Connection(parent, self._broken, self.object_id, self.load_object)
        try:
            self._handshake()
        except (DriverCrash, DriverHang) as error:
            tail = _tail(self._stderr)
            self.close()
            raise DriverLoadError(f"driver {self.driver!r}: the service process did not start: {tail or error}") from None

    def _connection_for(self, generation: int | None, description: str) -> Connection:
        with self._lock:
            if self.connection is None or not self.connection.alive or self.process is None or self.process.poll() is not None:
                self._replace()
            if generation is not None and generation != self.generation:
                raise DriverCrash(f"[SVC-1] {description}: the object belongs to a driver service that was replaced "
                                  f"after an earlier crash or hang; it no longer exists")
            return self.connection

    def _replace(self) -> None:
        self._stop_process()
        self._start()

    # ----------------------------------------------------------------- failures

    def _broken(self, description: str, reason: str) -> Exception:
        """The exception for a call the service did not answer (reason: timeout, eof, closed)."""
        process = self.process
        if reason == "timeout" and process is not None and process.poll() is None:
            with self._lock:
                if not self._killed_for:
                    self._killed_for = description
                    try:
                        os.kill(process.pid, signal.SIGUSR1)  # faulthandler: every thread's stack to stderr
                    except ProcessLookupError:
                        pass
                    time.sleep(_HANG_DUMP_WAIT_S)
                    stacks = _tail(self._stderr, 200)
                    self._kill(process)
                    message = (f"[SVC-2] {description} did not return within {self.timeout:g} s; the driver service "
                               f"was killed and will be replaced.\nService thread stacks:\n{stacks}")
                    self.faults.append(message)
                    return DriverHang(message)
        if self._killed_for and self._killed_for != description:
            return DriverHang(f"[SVC-2] {description} was cut off: the driver service was killed because "
                              f"{self._killed_for} hung")
        if self._killed_for:
            return DriverHang(f"[SVC-2] {description} did not return within {self.timeout:g} s")
        code = process.wait(timeout=10) if process is not None else None
        how = (f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
               else f"exited with code {code}" if code is not None else "unreachable")
        message = (f"[SVC-1] the driver service died during {description}: {how}.\n"
                   f"Last lines of its stderr:\n{_tail(self._stderr)}")
        self.faults.append(message)
        return DriverCrash(message)

    def _kill(self, process: subprocess.Popen) -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait(timeout=10)

    def _stop_process(self) -> None:
        if self.connection is not None:
            self.connection.shutdown()
            self.connection = None
        if self.process is not None:
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self._kill(self.process)
            self.process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        """Stop the service: nothing of it (process, descriptors) is left behind."""
        with self._lock:
            self._stop_process()


class AttachedClient(_Endpoint):
    """A further client of a running service (as another process would connect)."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        super().__init__(timeout)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.connect("\0" + address)
        self.generation = 1
        self.connection = Connection(sock, self._broken, self.object_id, self.load_object)
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
