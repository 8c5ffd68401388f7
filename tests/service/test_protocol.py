"""The service protocol is a closed set of typed messages (issue 15).

A service dispatches only the messages of `harness.service.messages` and, for a call, only the
methods on its target's allow-list; anything else is refused with an error naming what came.
Nothing registers process-wide pickling hooks.
"""

from __future__ import annotations

import copyreg
import pickle
import socket

import pytest

from harness.api.memory import Memory, create_ashmem
from harness.service import wire
from harness.service.client import RemoteError
from harness.service.messages import (
    FROM_SERVICE, METHODS, TO_SERVICE, Call, Failure, HeldKind, Reply, ServiceObject, UnknownMessage, from_wire, to_wire,
)


def _raw_client(service) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.connect(service.address)
    sock.settimeout(10)
    return sock


def _exchange(sock: socket.socket, form: object) -> Reply:
    sock.send(pickle.dumps(form))
    received = wire.receive(sock)
    assert received is not None, "the service closed the connection instead of answering"
    reply = wire.decode(*received, FROM_SERVICE, trusted=False)[0]
    assert isinstance(reply, Reply)
    return reply


@pytest.mark.requirement("SVC-1")
@pytest.mark.parametrize("form, named", [
    (("frobnicate", 7, "device", "capabilities", ()), "'frobnicate'"),
    (("call", 7, "device", "__class__", (), ()), "'__class__'"),
    (("call", 7, "device", "prepare_model"), "'call' has 3 fields"),
    (("call", 7, "os", "system", ("true",), ()), "'os'"),
    (("call", 7, 4242, "execute", (), ()), "object 4242"),
    (("reply", 7, True, None), "'reply'"),
])
def test_an_unknown_message_is_refused_naming_it(service, form, named) -> None:
    with _raw_client(service) as sock:
        reply = _exchange(sock, form)
        assert reply.call_id == 7 and not reply.ok
        assert isinstance(reply.value, Failure) and reply.value.kind == "UnknownMessage"
        assert named in reply.value.message
        # The connection still serves: a refused message is not a broken peer.
        hello = _exchange(sock, to_wire(Call(8, ServiceObject.SERVICE.value, "hello", ())))
        assert hello.ok and hello.value[0] == "reference"


def test_a_refused_method_reaches_the_caller_as_a_failure_naming_it(service) -> None:
    with pytest.raises(RemoteError) as refused:
        service.call(None, ServiceObject.DEVICE.value, "__init__", (), "Device.__init__()")
    assert "UnknownMessage" in str(refused.value) and "'__init__'" in str(refused.value)


def test_every_side_accepts_only_its_own_messages() -> None:
    for form in [("reply", 1, True, None), ("spawn", 1, "/x"), ("exited", 1, 0), ("nonsense",), "call", 42]:
        with pytest.raises(UnknownMessage):
            from_wire(form, TO_SERVICE)
    call = Call(3, ServiceObject.DEVICE.value, "capabilities", ())
    assert from_wire(to_wire(call), TO_SERVICE) == call and type(from_wire(to_wire(call), TO_SERVICE)) is Call
    with pytest.raises(UnknownMessage):
        from_wire(to_wire(call), FROM_SERVICE)
    # Every target kind's methods are plain public names: nothing private or dunder is callable.
    assert set(METHODS) == {*ServiceObject, *HeldKind}
    assert all(not name.startswith("_") for names in METHODS.values() for name in names)


def test_no_process_wide_pickling_hooks(service) -> None:
    """The wire's reducers live in its own picklers' tables; copyreg is untouched."""
    memory = create_ashmem(64)
    try:
        service.device.ping()  # the wire has been used in this process
        assert Memory not in copyreg.dispatch_table
        assert not any(cls.__module__.startswith("harness") for cls in copyreg.dispatch_table)
        with pytest.raises(TypeError, match="descriptor"):
            pickle.dumps(memory)  # outside the wire a descriptor number would mean nothing
        data, fds = wire.encode(Call(1, ServiceObject.DEVICE.value, "capabilities", (memory,)))
        assert fds == [memory.fd] and b"harness.api.memory" not in data
    finally:
        memory.close()
