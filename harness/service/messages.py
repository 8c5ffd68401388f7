"""The closed set of messages between the harness, the zygote (and its template) and a driver service.

Every message is a typed record (a NamedTuple); on the wire it travels as a plain tuple whose
first element is its tag, so a pickle carries no class of this module and decoding one runs no
constructor the peer chose.  Each direction accepts only its own set (`TO_SERVICE`,
`FROM_SERVICE`, `TO_ZYGOTE`, `FROM_ZYGOTE`, `TO_TEMPLATE`); anything else is refused with an `UnknownMessage`
naming it.

A `Call` names its target, either a `ServiceObject` or the number of an object the service holds
for this connection, and a method that must be on that target's allow-list (`METHODS`).  Nothing
dispatches on a name the peer made up.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple, NoReturn, Union


class UnknownMessage(ValueError):
    """A peer sent something that is not one of the messages (or methods) of this protocol."""


class ServiceObject(enum.StrEnum):
    """The objects every service has, addressed by name."""

    SERVICE = "service"  # the service itself: the start-up handshake and a bare round trip
    DEVICE = "device"  # the driver's Device
    CUSTOM_CALLS = "custom_calls"  # the driver's custom-call executor (harness.service.custom_calls)


class HeldKind(enum.StrEnum):
    """The objects a service creates for a connection and keeps until the connection drops them."""

    PREPARED_MODEL = "prepared_model"
    BUFFER = "buffer"


#: The methods a call may name, per kind of target.  Anything else is refused, never looked up.
METHODS: dict[str, frozenset[str]] = {
    ServiceObject.SERVICE: frozenset({"hello", "ping"}),
    ServiceObject.DEVICE: frozenset({"capabilities", "get_supported_operations", "prepare_model", "allocate"}),
    ServiceObject.CUSTOM_CALLS: frozenset({"lookup", "invoke", "prepare_xla", "under_xla"}),
    HeldKind.PREPARED_MODEL: frozenset({"execute"}),
    HeldKind.BUFFER: frozenset({"copy_from", "copy_to", "release"}),
}

Target = Union[str, int]  # a ServiceObject's value, or the number of a held object


# --------------------------------------------------------------------------- harness -> service


class Call(NamedTuple):
    call_id: int
    target: Target
    method: str
    args: tuple
    # Held objects the client let go of since its last call, dropped before this one runs.  In the
    # call itself, not a message of their own: the service's threads receive messages at once, and
    # a drop handled by one thread while another received the call would close the dropped
    # memories' descriptors before or after the call's own took the lowest free numbers, by chance.
    # A driver's descriptor numbers then follow the calls alone, and a failure that needs a reused
    # number reproduces.
    drops: tuple[int, ...] = ()


class Shutdown(NamedTuple):
    """The client is done; the service stops when its primary client says so."""


# --------------------------------------------------------------------------- service -> harness


class Failure(NamedTuple):
    """What the driver raised that is not a DriverError, with its traceback (a reply's value)."""

    kind: str
    message: str
    trace: str


class Reply(NamedTuple):
    call_id: int
    ok: bool
    value: Any  # the result; if not ok, a DriverError or a Failure
    # The driver's coverage edges first reached since the service's previous reply (empty unless
    # the harness asked for coverage: harness.service.coverage)
    coverage: tuple[int, ...] = ()


# --------------------------------------------------------------------------- zygote


class Spawn(NamedTuple):
    """Fork a service listening at ``listen`` (its socket and stderr travel as descriptors), its
    address space limited to ``memory_limit`` bytes (0: no limit)."""

    request: int
    listen: str
    memory_limit: int


class Spawned(NamedTuple):
    request: int
    pid: int


class SpawnFailed(NamedTuple):
    request: int
    reason: str


class Exited(NamedTuple):
    pid: int
    status: int  # as os.waitpid reports it


class ZygoteStarted(NamedTuple):
    """A zygote's first message: its process, which the harness did not start itself when a
    template forked it (and so knows only from here)."""

    pid: int


# --------------------------------------------------------------------------- zygote template


class StartZygote(NamedTuple):
    """Fork a zygote for ``driver``, as ``python -m harness.service.zygote`` would start in ``cwd``
    with ``environment``; its control socket and output travel as descriptors."""

    driver: str
    cwd: str
    environment: tuple[tuple[str, str], ...]


Message = Union[Call, Shutdown, Reply, Spawn, Spawned, SpawnFailed, Exited, ZygoteStarted, StartZygote]

TAGS: dict[type, str] = {
    Call: "call", Shutdown: "shutdown", Reply: "reply",
    Spawn: "spawn", Spawned: "spawned", SpawnFailed: "spawn-failed", Exited: "exited",
    ZygoteStarted: "zygote-started", StartZygote: "start-zygote",
}
_BY_TAG = {tag: cls for cls, tag in TAGS.items()}
_ARITY = {cls: 1 + len(cls._fields) for cls in TAGS}  # type: ignore[attr-defined]

TO_SERVICE: frozenset[type] = frozenset({Call, Shutdown})
FROM_SERVICE: frozenset[type] = frozenset({Reply})
TO_ZYGOTE: frozenset[type] = frozenset({Spawn})
FROM_ZYGOTE: frozenset[type] = frozenset({Spawned, SpawnFailed, Exited, ZygoteStarted})
TO_TEMPLATE: frozenset[type] = frozenset({StartZygote})


def to_wire(message: Message) -> tuple:
    """The plain tuple a message travels as."""
    return (TAGS[type(message)], *message)


def from_wire(form: Any, accepted: frozenset[type]) -> Message:
    """The message ``form`` stands for, if it is one this side accepts; else `UnknownMessage`."""
    try:
        cls = _BY_TAG[form[0]]
    except (KeyError, TypeError, IndexError):
        cls = None
    if cls in accepted and type(form) is tuple and len(form) == _ARITY[cls]:
        return tuple.__new__(cls, form[1:])  # type: ignore[no-any-return]  # the fields, as the NamedTuple's own __new__ would
    return _refuse(form, cls, accepted)


def _refuse(form: Any, cls: type | None, accepted: frozenset[type]) -> NoReturn:
    if cls is None or cls not in accepted or type(form) is not tuple:
        tag = form[0] if type(form) is tuple and form else form
        raise UnknownMessage(f"unknown message {_describe(tag)}; this side accepts "
                             + ", ".join(sorted(TAGS[c] for c in accepted)))
    fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    raise UnknownMessage(f"message {form[0]!r} has {len(form) - 1} fields; it has {len(fields)} ({', '.join(fields)})")


def call_id_of(form: Any) -> int | None:
    """The call id a malformed message seems to carry, so that its sender can be told why."""
    if isinstance(form, tuple) and len(form) > 1 and type(form[1]) is int:
        return form[1]
    return None


def _describe(tag: Any) -> str:
    text = repr(tag)
    return text if len(text) <= 60 else text[:57] + "..."
