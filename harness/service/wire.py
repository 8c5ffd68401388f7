"""The wire between harness and driver service: one message per SOCK_SEQPACKET datagram.

A message (one of the closed set in `harness.service.messages`) travels as the pickle of its
plain-tuple form.  Memories never travel as bytes: the pickler replaces each
`Memory` with a small record and the descriptor goes alongside in SCM_RIGHTS ancillary
data, so the service maps the very same memfd.  Objects that live in the service
(prepared models, buffers) travel as ids.  A message larger than `INLINE_LIMIT` (a model
with big CONSTANT_COPY values) is written to a memfd whose descriptor is sent instead.

Used by both sides; imports nothing from pytest or the harness plugin.
"""

from __future__ import annotations

import array
import io
import os
import pickle
import socket
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any

from harness.api.memory import Memory

from harness.service.messages import Call, Message, Reply, UnknownMessage, from_wire, to_wire

INLINE_LIMIT = 60 * 1024
MAX_FDS = 250  # below the kernel's SCM_MAX_FD (253)
_BIG = b"harness-big-message:"  # no pickle starts so (pickles begin with 0x80)


class ObjectRef(tuple):
    """("object", id, kind): an object that stays in the service, sent as a reference."""


class Foreign:
    """Stands in for an object that is not of the receiving side: the driver sees a stranger."""

    def __init__(self, description: str) -> None:
        self.description = description

    def __repr__(self) -> str:
        return f"<foreign object {self.description}>"


class WireError(OSError):
    """The connection broke or a message could not be read."""


def _usable_fd(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


# Decoding context: the descriptors of the message being decoded and how to resolve
# object references.
_decoding = threading.local()


def _rebuild_memory(slot: int, kind: str, offset: int, size: int, desc: Any) -> Memory:
    if slot < 0:
        memory = Memory(kind, -1, offset, size, desc, owns_fd=False)
    else:
        memory = Memory(kind, _decoding.fds[slot], offset, size, desc)
    _decoding.memories.append(memory)
    return memory


def _rebuild_object(reference: tuple) -> Any:
    if _decoding.load_object is None:
        raise pickle.UnpicklingError(f"unexpected object reference {reference!r}")
    return _decoding.load_object(reference)


# Encoding context: the descriptors of the message being pickled.  The reducers are in each
# Encoder's own dispatch table (never registered with copyreg, which would change how every
# pickle in the process is made), so `Pickler.dump` finds them by type inside its C loop and
# everything else pickles at C speed.
_encoding = threading.local()


def _reduce_memory(memory: Memory) -> tuple:
    fds = getattr(_encoding, "fds", None)
    if fds is None:
        raise pickle.PicklingError("a Memory crosses a process boundary only as a descriptor, through the service wire")
    slot = -1  # a closed handle cannot be sent; the service gets a handle that maps nothing
    if not memory.closed and _usable_fd(memory.fd):
        slot = len(fds)
        fds.append(memory.fd)
    return _rebuild_memory, (slot, str(memory.kind), memory.offset, memory.size, memory.hardware_desc)


def _reduce_object_ref(ref: ObjectRef) -> tuple:
    return _rebuild_object, (tuple(ref),)


class Encoder:
    """Pickles messages for one side of a connection: memories become records plus
    descriptors, and objects of the types in ``references`` become the reference tuples
    those functions return."""

    def __init__(self, references: dict[type, Callable[[Any], tuple]] | None = None) -> None:
        self._references = dict(references or {})
        self._table: dict[type, Callable[[Any], tuple]] = {Memory: _reduce_memory, ObjectRef: _reduce_object_ref}
        self._table.update({cls: self._reduce_reference for cls in self._references})
        self._local = threading.local()

    def _reduce_reference(self, obj: Any) -> tuple:
        return _rebuild_object, (self._references[type(obj)](obj),)

    def __call__(self, message: Message) -> tuple[bytes, list[int]]:
        form = to_wire(message)
        if _is_plain(message):  # nothing to reduce: the one-call C pickle, no table, no descriptors
            return pickle.dumps(form, pickle.HIGHEST_PROTOCOL), []
        try:
            pickler, chunks = self._local.pickler
        except AttributeError:  # one pickler per thread, kept: making one costs more than a small message
            chunks = []
            pickler = pickle.Pickler(_Sink(chunks.append), pickle.HIGHEST_PROTOCOL)
            pickler.dispatch_table = self._table  # type: ignore[assignment]  # copyreg's table has the same shape
            self._local.pickler = pickler, chunks
        fds: list[int] = []
        _encoding.fds = fds
        try:
            pickler.dump(form)
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        finally:
            _encoding.fds = None
            chunks.clear()
            pickler.clear_memo()
        if len(fds) > MAX_FDS:
            raise WireError(f"a message may carry at most {MAX_FDS} memories, this one has {len(fds)}")
        return data, fds


_PLAIN_VALUES = frozenset({type(None), bool, int, float, str, bytes})


def _is_plain(message: Message) -> bool:
    """Whether a message holds only plain values (a call without arguments, a reply of None or a
    scalar): the common small messages, which need no reducer."""
    if type(message) is Call:
        return not message.args and type(message.target) in _PLAIN_VALUES
    if type(message) is Reply:
        return type(message.value) in _PLAIN_VALUES
    return False


class _Sink:
    """Where a pickler writes: the pickle arrives in one write (large buffers in a few)."""

    __slots__ = ("write",)

    def __init__(self, write: Callable[[bytes], Any]) -> None:
        self.write = write


_plain_encoder = Encoder()


def encode(message: Message) -> tuple[bytes, list[int]]:
    """Pickle ``message`` with no object references (a connection keeps an `Encoder` instead)."""
    return _plain_encoder(message)


def send(sock: socket.socket, data: bytes, fds: list[int]) -> int:
    """Send one message; returns the bytes that went through the socket."""
    if len(data) <= INLINE_LIMIT:
        if fds:
            socket.send_fds(sock, [data], fds)
        else:
            sock.send(data)
        return len(data)
    big = os.memfd_create("harness-message", os.MFD_CLOEXEC)
    try:
        os.write(big, data)
        header = _BIG + str(len(data)).encode()
        socket.send_fds(sock, [header], [*fds, big])
        return len(header)
    finally:
        os.close(big)


_FD_SPACE = socket.CMSG_SPACE((MAX_FDS + 1) * array.array("i").itemsize)
_TRUNCATED = int(socket.MSG_TRUNC | socket.MSG_CTRUNC)


class MessageTooLarge(ValueError):
    """A message over the receiver's limit: refused unread (the connection itself is intact)."""


def receive(sock: socket.socket, limit: int | None = None) -> tuple[bytes, list[int]] | None:
    """One message and its descriptors, or None at end of stream.

    With ``limit``, a message larger than that many bytes is refused with `MessageTooLarge`
    before any of it is read (its descriptors are closed): a peer cannot make this side hold
    more than ``limit`` bytes of one message."""
    try:
        data, ancillary, flags, _ = sock.recvmsg(INLINE_LIMIT + 1024, _FD_SPACE)
    except (ConnectionResetError, BrokenPipeError):
        return None
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(payload[: len(payload) - len(payload) % received.itemsize])
            fds.extend(received)
    if not data and not fds:
        return None
    if flags & _TRUNCATED:
        for fd in fds:
            os.close(fd)
        raise WireError("a message was truncated")
    if data.startswith(_BIG):
        big = fds.pop() if fds else -1
        try:
            if big < 0 or not stat.S_ISREG(os.fstat(big).st_mode):
                raise WireError("large message descriptor is not a memfd")
            size = int(data[len(_BIG):])
            if limit is not None and size > limit:
                for fd in fds:
                    os.close(fd)
                raise MessageTooLarge(f"a message of {size} bytes, over the limit of {limit} bytes")
            data = os.pread(big, size, 0)
        finally:
            if big >= 0:
                os.close(big)
    return data, fds


def messages(sock: socket.socket):
    """Received (data, descriptors) pairs until the peer closes or the socket fails."""
    while True:
        try:
            received = receive(sock)
        except OSError:
            return
        if received is None:
            return
        yield received


class UntrustedContent(pickle.UnpicklingError):
    """A message from the driver service refers to something the harness does not allow."""


#: What a reply from the driver service may be made of, beyond plain data (str, bytes, numbers,
#: tuples, lists, dicts, sets): the harness's data types, the wire's own rebuilders, and numpy
#: arrays.  Nothing the driver sends can name another callable, so nothing it sends can run code
#: in the harness (a pickle naming os._exit is refused, not called).
_ALLOWED_MODULES = ("harness.api.hal", "harness.api.errors", "harness.api.shapes", "harness.service.messages")
_ALLOWED = {
    ("harness.service.wire", "_rebuild_memory"), ("harness.service.wire", "_rebuild_object"),
    ("harness.service.wire", "ObjectRef"), ("harness.service.wire", "Foreign"),
    ("harness.api.memory", "MemoryKind"),  # in Capabilities.memory_kinds (the module's other types are not data)
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "bytearray"), ("builtins", "complex"),
}


class _AllowListUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        allowed = (module, name) in _ALLOWED or (module in _ALLOWED_MODULES and isinstance(
            getattr(sys.modules.get(module), name, None), type))
        if not allowed:
            raise UntrustedContent(f"the message refers to {module}.{name}, which is not one of the harness's own types")
        return super().find_class(module, name)


def _loads(data: bytes, trusted: bool) -> Any:
    return pickle.loads(data) if trusted else _AllowListUnpickler(io.BytesIO(data)).load()


def decode(data: bytes, fds: list[int], accepted: frozenset[type], load_object: Callable[[tuple], Any] | None = None,
           *, trusted: bool = False) -> tuple[Message, list[Memory]]:
    """The message, if it is one of ``accepted``, and the memories made from its descriptors
    (the caller closes them).  Anything else raises `UnknownMessage` naming what came.

    Only the harness's own types decode, unless ``trusted``: a process that ran driver code (a
    service, a zygote that imported the driver's plugin) decoding what the harness sent it, where
    nothing it decodes can reach the harness."""
    if not fds and b"_rebuild_" not in data:  # plain data: no memory or object to resolve
        return from_wire(_loads(data, trusted), accepted), []
    _decoding.fds, _decoding.memories, _decoding.load_object = fds, [], load_object
    try:
        message = _loads(data, trusted)
    except BaseException:
        for memory in _decoding.memories:
            memory.close()
        _close_unclaimed(fds, _decoding.memories)
        raise
    finally:
        memories = _decoding.memories
        _decoding.fds, _decoding.memories, _decoding.load_object = [], [], None
    _close_unclaimed(fds, memories)  # descriptors no record claimed are closed at once, never leaked
    try:
        return from_wire(message, accepted), memories
    except UnknownMessage:
        for memory in memories:
            memory.close()
        raise


def _close_unclaimed(fds: list[int], memories: list[Memory]) -> None:
    used = {m.fd for m in memories}
    for fd in fds:
        if fd not in used:
            os.close(fd)


def socketpair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
