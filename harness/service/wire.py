"""The wire between harness and driver service: one message per SOCK_SEQPACKET datagram.

A message is a pickled tuple.  Memories never travel as bytes: the pickler replaces each
`Memory` with a small record and the descriptor goes alongside in SCM_RIGHTS ancillary
data, so the service maps the very same memfd.  Objects that live in the service
(prepared models, buffers) travel as ids.  A message larger than `INLINE_LIMIT` (a model
with big CONSTANT_COPY values) is written to a memfd whose descriptor is sent instead.

Used by both sides; imports nothing from pytest or the harness plugin.
"""

from __future__ import annotations

import io
import os
import pickle
import socket
import stat
from collections.abc import Callable
from typing import Any

from harness.memory import Memory

INLINE_LIMIT = 60 * 1024
MAX_FDS = 250  # below the kernel's SCM_MAX_FD (253)
_BIG = "__big__"


class ObjectRef(tuple):
    """("object", id, kind): an object that stays in the service, sent as a reference."""


def service_object_id(obj: Any) -> Any:
    return tuple(obj) if isinstance(obj, ObjectRef) else None


class WireError(OSError):
    """The connection broke or a message could not be read."""


def _usable_fd(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class _Pickler(pickle.Pickler):
    def __init__(self, file, object_id: Callable[[Any], Any] | None) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.fds: list[int] = []
        self._object_id = object_id

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Memory):
            # A closed handle cannot be sent; the service gets a handle that maps nothing.
            slot = -1
            if not obj.closed and _usable_fd(obj.fd):
                slot = len(self.fds)
                self.fds.append(obj.fd)
            return ("memory", slot, obj.kind, obj.offset, obj.size, obj.hardware_desc)
        if self._object_id is not None:
            return self._object_id(obj)
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, fds: list[int], load_object: Callable[[tuple], Any] | None) -> None:
        super().__init__(file)
        self.fds = fds
        self.memories: list[Memory] = []
        self._load_object = load_object

    def persistent_load(self, pid: tuple) -> Any:
        if pid[0] == "memory":
            _, slot, kind, offset, size, desc = pid
            if slot < 0:
                memory = Memory(kind, -1, offset, size, desc, owns_fd=False)
            else:
                memory = Memory(kind, self.fds[slot], offset, size, desc)
            self.memories.append(memory)
            return memory
        if self._load_object is None:
            raise pickle.UnpicklingError(f"unexpected object reference {pid!r}")
        return self._load_object(pid)


def encode(message: Any, object_id: Callable[[Any], Any] | None = None) -> tuple[bytes, list[int]]:
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, object_id)
    pickler.dump(message)
    if len(pickler.fds) > MAX_FDS:
        raise WireError(f"a message may carry at most {MAX_FDS} memories, this one has {len(pickler.fds)}")
    return buffer.getvalue(), pickler.fds


def send(sock: socket.socket, data: bytes, fds: list[int]) -> int:
    """Send one message; returns the bytes that went through the socket."""
    if len(data) <= INLINE_LIMIT:
        socket.send_fds(sock, [data], fds)
        return len(data)
    big = os.memfd_create("harness-message", os.MFD_CLOEXEC)
    try:
        os.write(big, data)
        header = pickle.dumps((_BIG, len(data)))
        socket.send_fds(sock, [header], [*fds, big])
        return len(header)
    finally:
        os.close(big)


def receive(sock: socket.socket) -> tuple[bytes, list[int]] | None:
    """One message and its descriptors, or None at end of stream."""
    try:
        data, fds, flags, _ = socket.recv_fds(sock, INLINE_LIMIT + 1024, MAX_FDS + 1)
    except (ConnectionResetError, BrokenPipeError):
        return None
    if not data and not fds:
        return None
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        for fd in fds:
            os.close(fd)
        raise WireError("a message was truncated")
    if len(data) < 64 and data.startswith(b"\x80"):
        try:
            header = pickle.loads(data)
        except Exception:
            header = None
        if isinstance(header, tuple) and header and header[0] == _BIG:
            big = fds.pop()
            try:
                if not stat.S_ISREG(os.fstat(big).st_mode):
                    raise WireError("large message descriptor is not a memfd")
                data = os.pread(big, header[1], 0)
            finally:
                os.close(big)
    return data, fds


def decode(data: bytes, fds: list[int], load_object: Callable[[tuple], Any] | None = None) -> tuple[Any, list[Memory]]:
    """The message, and the memories made from its descriptors (the caller closes them)."""
    unpickler = _Unpickler(io.BytesIO(data), fds, load_object)
    try:
        message = unpickler.load()
    except BaseException:
        used = {m.fd for m in unpickler.memories}
        for memory in unpickler.memories:
            memory.close()
        for fd in fds:
            if fd not in used:
                os.close(fd)
        raise
    used = {m.fd for m in unpickler.memories}
    for fd in fds:  # descriptors no record claimed are closed at once, never leaked
        if fd not in used:
            os.close(fd)
    return message, unpickler.memories


def socketpair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
