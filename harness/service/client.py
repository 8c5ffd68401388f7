"""The harness side of one connection: calls multiplexed from many threads, each with a deadline."""

from __future__ import annotations

import collections
import itertools
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from harness.errors import DriverFault
from harness.hal import DriverError
from harness.service import wire


class RemoteError(DriverFault):
    """The driver raised something other than DriverError inside the service."""


class Connection:
    """One client connection to a driver service.

    ``on_broken(description)`` is called when the service stops answering (end of stream
    or a missed deadline) and returns the exception to raise for that call: the
    supervisor knows whether the process died and why.
    """

    def __init__(self, sock: socket.socket, on_broken: Callable[[str, str], BaseException],
                 object_id: Callable[[Any], Any], load_object: Callable[[tuple], Any]) -> None:
        self.sock = sock
        self._on_broken = on_broken
        self._object_id = object_id
        self._load_object = load_object
        self._pending: dict[int, tuple[Future, str]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._closed = False
        self._drops: collections.deque[int] = collections.deque()
        self.bytes_sent = 0
        self._reader = threading.Thread(target=self._read_replies, daemon=True, name="harness-service-reader")
        self._reader.start()

    @property
    def alive(self) -> bool:
        return not self._closed

    def drop(self, number: int) -> None:
        """Forget a service object; sent with the next call (safe to call from a finalizer)."""
        self._drops.append(number)

    def _send_drops(self) -> None:
        numbers = []
        while self._drops:
            numbers.append(self._drops.popleft())
        if numbers:
            data, fds = wire.encode(("drop", 0, numbers))
            wire.send(self.sock, data, fds)

    def call(self, target: int, method: str, args: tuple, *, timeout: float, description: str) -> Any:
        if self._closed:
            raise self._on_broken(description, "closed")
        future: Future = Future()
        call_id = next(self._ids)
        data, fds = wire.encode(("call", call_id, target, method, args), self._object_id)
        with self._lock:
            self._pending[call_id] = (future, description)
            try:
                self._send_drops()
                self.bytes_sent += wire.send(self.sock, data, fds)
            except OSError:
                self._pending.pop(call_id, None)
                raise self._on_broken(description, "eof") from None
        try:
            ok, value = future.result(timeout=timeout)
        except FutureTimeout:
            with self._lock:
                self._pending.pop(call_id, None)
            raise self._on_broken(description, "timeout") from None
        if ok:
            return value
        if isinstance(value, DriverError):
            raise value
        _, kind, message, trace = value
        raise RemoteError(f"[SVC-1] {description} raised {kind} inside the driver service: {message}\n{trace}".rstrip())

    def _read_replies(self) -> None:
        while True:
            try:
                received = wire.receive(self.sock)
            except OSError:
                received = None
            if received is None:
                break
            data, fds = received
            try:
                message, _ = wire.decode(data, fds, self._load_object)
            except Exception:  # a reply we cannot read breaks the connection like EOF does
                break
            _, call_id, ok, value = message
            with self._lock:
                entry = self._pending.pop(call_id, None)
            if entry is not None:
                entry[0].set_result((ok, value))
        self._closed = True
        with self._lock:
            pending, self._pending = self._pending, {}
        for future, description in pending.values():
            future.set_exception(self._on_broken(description, "eof"))

    def shutdown(self) -> None:
        if not self._closed:
            try:
                data, fds = wire.encode(("shutdown", 0))
                wire.send(self.sock, data, fds)
            except OSError:
                pass
        self.close()

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
