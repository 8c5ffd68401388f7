"""The harness side of one connection: calls multiplexed from many threads, each with a deadline.

No thread is dedicated to reading replies.  The first waiting caller becomes the reader
(leader/followers): it receives replies, hands each to the caller it belongs to, and
gives up the role when its own reply has come.  A lone caller therefore sends and
receives on its own thread, like a plain ping-pong, with no hand-off to another thread.
"""

from __future__ import annotations

import collections
import itertools
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from harness.api.errors import DriverFault, mark_raised_by_driver
from harness.api.hal import DriverError
from harness.service import wire
from harness.service.coverage import RECEIVED
from harness.service.messages import FROM_SERVICE, Call, Failure, Reply, Shutdown, Target


#: The largest reply the harness reads (a driver's result is small: outputs travel in shared memory).
MAX_REPLY_BYTES = 16 * 1024 * 1024


class RemoteError(DriverFault):
    """The driver raised something other than DriverError inside the service, or sent a reply the
    harness refuses: SVC-1, the service must answer every call with a result or a DriverError."""

    requirement = "SVC-1"


class DriverOutOfMemory(RemoteError):
    """A call ran the service out of memory (RESOURCE): past its RLIMIT_AS, or the machine's."""


def taken(holder: Any, field: str) -> Any:
    """``holder.field``, no longer held there.  An error kept by the object that carries it to the
    caller, and raised from it, closes a cycle (error -> traceback -> the raising frame -> the
    object -> error): all the traceback's frames hold, a prepared model's proxy among them, would
    then wait for the cyclic garbage collector instead of going when the caller lets go.  The
    driver would close that model's descriptors at a moment that differs from run to run, and a
    failure that depends on descriptor numbers would not replay (mappings-cached-by-descriptor)."""
    held = getattr(holder, field)
    setattr(holder, field, None)
    return held


class _Pending:
    """One call sent and not yet answered (what `Connection.begin` gives `Connection.finish`)."""

    __slots__ = ("description", "done", "ok", "value", "error", "call_id", "deadline")

    def __init__(self, description: str, call_id: int, deadline: float) -> None:
        self.description = description
        self.done = False
        self.ok = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.call_id = call_id
        self.deadline = deadline


class Connection:
    """One client connection to a driver service.

    ``on_broken(description, reason)`` is called when the service stops answering (reason
    ``"eof"``, ``"timeout"`` or ``"closed"``) and returns the exception to raise for that
    call: the supervisor knows whether the process died and why.
    """

    def __init__(self, sock: socket.socket, on_broken: Callable[[str, str], BaseException],
                 references: dict[type, Callable[[Any], tuple]], load_object: Callable[[tuple], Any]) -> None:
        self.sock = sock
        sock.settimeout(None)
        self._on_broken = on_broken
        self._encode = wire.Encoder(references)
        self._load_object = load_object
        self._pending: dict[int, _Pending] = {}
        self._cond = threading.Condition()
        self._reading = False
        self._ids = itertools.count(1)
        self._closed = False
        self._drops: collections.deque[int] = collections.deque()
        self._socket_timeout: float | None = None
        self.bytes_sent = 0  # for tests and benchmarks of one caller; concurrent callers may race on it

    @property
    def alive(self) -> bool:
        return not self._closed

    def drop(self, number: int) -> None:
        """Forget a service object; sent with the next call (safe to call from a finalizer)."""
        self._drops.append(number)

    def _take_drops(self) -> tuple[int, ...]:
        numbers = []
        while self._drops:  # popleft: a finalizer may append meanwhile, from any thread
            numbers.append(self._drops.popleft())
        return tuple(numbers)

    def _broken(self, description: Any, reason: str) -> BaseException:
        return self._on_broken(str(description), reason)

    # ----------------------------------------------------------------- calls

    def call(self, target: Target, method: str, args: tuple, *, timeout: float, description: Any) -> Any:
        """Call ``method`` of service object ``target`` (a `ServiceObject` or a held object's
        number); ``description`` (anything with a ``str``) names the call in errors and is
        formatted only when one is raised."""
        pending, leading = self._send(target, method, args, timeout, description, lead=True)
        self._await(pending, leading)
        return self._result(pending)

    def begin(self, target: Target, method: str, args: tuple, *, timeout: float, description: Any) -> _Pending:
        """Send a call and return at once; `finish` waits for its reply.  The caller's own work
        in between (the reference's run of the same scenario) overlaps the driver's, and the
        reply is usually waiting by the time it is read."""
        return self._send(target, method, args, timeout, description, lead=False)[0]

    def finish(self, pending: _Pending) -> Any:
        """The reply to a call `begin` sent (the value, or the error the call raises)."""
        self._await(pending, False)
        return self._result(pending)

    def _send(self, target: Target, method: str, args: tuple, timeout: float, description: Any, *,
              lead: bool) -> tuple[_Pending, bool]:
        if self._closed:
            raise self._broken(description, "closed")
        call_id = next(self._ids)
        pending = _Pending(description, call_id, time.monotonic() + timeout)
        drops = self._take_drops() if self._drops else ()
        data, fds = self._encode(tuple.__new__(Call, (call_id, target, method, args, drops)))  # Call(...), minus its __new__
        self._set_socket_timeout(timeout)
        with self._cond:
            self._pending[call_id] = pending
            # A lone caller that waits at once reads its own reply: no hand-off, no waiting.
            leading = lead and not self._reading
            if leading:
                self._reading = True
        try:
            # No send lock: a SOCK_SEQPACKET record is queued whole, never interleaved.
            self.bytes_sent += wire.send(self.sock, data, fds)
        except OSError as error:
            with self._cond:
                self._pending.pop(call_id, None)
                if leading:
                    self._reading = False
                    self._cond.notify_all()
            # A send that cannot finish in time means the service stopped reading.
            raise self._broken(description, "timeout" if isinstance(error, BlockingIOError) else "eof") from None
        return pending, leading

    def _result(self, pending: _Pending) -> Any:
        # An error is raised as it leaves `pending` (`taken`), never from a name in this frame.
        if pending.error is not None:
            raise taken(pending, "error")
        if pending.ok:
            return pending.value
        description = pending.description
        if isinstance(pending.value, DriverError):  # the driver's own refusal
            raise mark_raised_by_driver(taken(pending, "value"))
        if not isinstance(pending.value, Failure):
            raise RemoteError(f"[SVC-1] {description} failed inside the driver service with {pending.value!r}, "
                              "which is neither a DriverError nor a Failure")
        kind, message, trace = pending.value
        if kind == "MemoryError":
            raise DriverOutOfMemory(f"[SVC-1] RESOURCE: {description} ran out of memory in the driver service (its "
                                    f"address-space limit, --driver-memory-limit, or the machine's): {message}\n{trace}".rstrip())
        raise RemoteError(f"[SVC-1] {description} raised {kind} inside the driver service: {message}\n{trace}".rstrip())

    def _await(self, pending: _Pending, leading: bool) -> None:
        if leading:
            self._lead(pending)
            return
        while True:
            with self._cond:
                while not pending.done and self._reading:
                    remaining = pending.deadline - time.monotonic()
                    if remaining <= 0 or not self._cond.wait(remaining):
                        if not pending.done:
                            self._pending.pop(pending.call_id, None)
                            pending.error = self._broken(pending.description, "timeout")
                            pending.done = True
                if pending.done:
                    return
                self._reading = True  # this thread reads until its own reply arrives
            self._lead(pending)
            if pending.done:
                return

    def _lead(self, pending: _Pending) -> None:
        try:
            self._read_until(pending)
        finally:
            if not pending.done or pending.error is not None:  # the reader role was not handed on
                with self._cond:
                    self._reading = False
                    self._cond.notify_all()

    def _set_socket_timeout(self, remaining: float) -> None:
        # The socket stays blocking and the kernel enforces the deadline (SO_RCVTIMEO and
        # SO_SNDTIMEO): Python's own socket timeout would add a poll() before every send
        # and receive.  Setting it is a system call, skipped while the one set is no more
        # than 5 % late, and never early: a set-up step's 60 s after calls given 2 s would
        # otherwise be cut off at 2 s (prepare_xla, which imports jax, on a loaded machine).
        current = self._socket_timeout
        if current is None or current < remaining or current > remaining * 1.05 + 0.001:
            seconds = max(remaining, 0.001)
            timeval = struct.pack("ll", int(seconds), int(seconds % 1 * 1e6))
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
            self._socket_timeout = remaining

    def _read_until(self, pending: _Pending) -> None:
        """Receive replies (this thread is the reader) until ``pending``'s arrives."""
        while not pending.done:
            remaining = pending.deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise TimeoutError
                self._set_socket_timeout(remaining)
                received = wire.receive(self.sock, MAX_REPLY_BYTES)
            except (TimeoutError, BlockingIOError):  # SO_RCVTIMEO expired: EAGAIN
                self._socket_timeout = None
                if pending.deadline - time.monotonic() > 0:  # another caller's shorter timeout was set meanwhile
                    continue
                with self._cond:
                    self._pending.pop(pending.call_id, None)
                pending.error = self._broken(pending.description, "timeout")
                pending.done = True
                return
            except wire.MessageTooLarge as error:
                self._fail_pending(f"the driver service's reply was refused unread: {error}")
                continue
            except OSError:
                received = None
            try:  # what the driver sent: anything that does not decode to a Reply fails the calls waiting
                message = (wire.decode(*received, FROM_SERVICE, self._load_object)[0]
                           if received is not None else None)
            except Exception as error:  # an allow-list refusal, an unknown message, or a pickle that raises
                self._fail_pending(f"the driver service's reply was refused: {type(error).__name__}: {error}")
                continue
            if message is None:
                self._fail_all()
                return
            assert isinstance(message, Reply)  # FROM_SERVICE is closed: a Reply is all that decodes
            reply_id, ok, value, edges = message
            if edges:
                RECEIVED.add(edges)
            with self._cond:
                entry = self._pending.pop(reply_id, None)
                if entry is not None:
                    entry.ok, entry.value, entry.done = ok, value, True
                if entry is pending:
                    self._reading = False  # hand the reader role on with the same lock
                if entry is not None and (entry is not pending or self._pending):
                    self._cond.notify_all()

    def _fail_pending(self, reason: str) -> None:
        """A reply that could not be decoded belongs to one of the waiting calls: fail them all,
        each naming its call and the reason (the connection itself is intact)."""
        with self._cond:
            pending, self._pending = self._pending, {}
        for entry in pending.values():
            entry.error = RemoteError(f"[SVC-1] {entry.description}: {reason}")
            entry.done = True
        with self._cond:
            self._cond.notify_all()

    def _fail_all(self) -> None:
        """End of stream: the service is gone; every waiting call fails with the reason."""
        self._closed = True
        with self._cond:
            pending, self._pending = self._pending, {}
        for entry in pending.values():
            entry.error = self._broken(entry.description, "eof")
            entry.done = True
        with self._cond:
            self._cond.notify_all()

    # ----------------------------------------------------------------- closing

    def shutdown(self) -> None:
        if not self._closed:
            try:
                data, fds = wire.encode(Shutdown())
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
