"""Driver API proxies: the same Device / PreparedModel / Buffer interface, served remotely.

Suites cannot tell a proxy from an inline driver.  Each proxy remembers the service
generation it came from; using it after the service was replaced is a clear error.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from harness.api.hal import BufferDesc, BufferRole, Capabilities, ExecutionResult, Model, Request
from harness.api.memory import Memory
from harness.service import wire
from harness.service.messages import HeldKind, ServiceObject


# The named targets as the plain strings they travel as (an enum member's .value costs a call per use).
_SERVICE, _DEVICE, _CUSTOM_CALLS = (str(ServiceObject.SERVICE.value), str(ServiceObject.DEVICE.value),
                                    str(ServiceObject.CUSTOM_CALLS.value))

#: The deadline of a set-up step in the service (importing jax for targets under XLA).
SETUP_DEADLINE_S = 60.0


def _summary(value: Any) -> str:
    if isinstance(value, Model):
        return f"model of {len(value.main.operands)} operands, {len(value.main.operations)} operations, {len(value.pools)} pools"
    if isinstance(value, Request):
        return f"request of {len(value.inputs)} inputs, {len(value.outputs)} outputs, {len(value.pools)} pools"
    if isinstance(value, Memory):
        return f"{value.kind} of {value.size} bytes"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class CallDescription:
    """What a call was, for error messages; formatted only when one is shown (calls are hot).

    ``counted_as``: what the circuit breaker counts the call's faults by (`Breaker.key`), when that is
    finer than the method: one custom-call target, since a target's crashes say nothing of another's."""

    __slots__ = ("owner", "method", "args", "counted_as")

    def __init__(self, owner: str, method: str, args: tuple, counted_as: str = "") -> None:
        self.owner, self.method, self.args, self.counted_as = owner, method, args, counted_as

    def __str__(self) -> str:
        return f"{self.owner}.{self.method}({', '.join(_summary(a) for a in self.args)})"


class Remote:
    """Base of every proxy for an object that lives in the service."""

    _kind = "object"

    def __init__(self, endpoint: Any, number: int, generation: int) -> None:
        self._endpoint = endpoint
        self._id = number
        self._generation = generation
        # When the harness lets go of the proxy, the service lets go of the object (and the
        # descriptors a prepared model keeps), so hours of fuzzing do not pile them up.
        self._let_go = weakref.finalize(self, endpoint.drop, generation, number)

    def _call(self, method: str, *args: Any) -> Any:
        return self._endpoint.call(self._generation, self._id, method, args, CallDescription(self._kind, method, args))

    def _begin(self, method: str, args: tuple) -> Callable[[], Any]:
        started = self._endpoint.begin(self._generation, self._id, method, args, CallDescription(self._kind, method, args))
        return functools.partial(self._endpoint.finish, started)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} #{self._id} of service generation {self._generation}>"


class PreparedModelProxy(Remote):
    _kind = "PreparedModel"

    def execute(self, request: Request) -> ExecutionResult:
        return self._call("execute", request)


class BufferProxy(Remote):
    _kind = "Buffer"

    def copy_from(self, memory: Memory, dimensions: Sequence[int] = ()) -> None:
        self._call("copy_from", memory, tuple(dimensions))

    def copy_to(self, memory: Memory) -> None:
        self._call("copy_to", memory)

    def release(self) -> None:
        self._call("release")


def let_go(obj: Any) -> None:
    """Let go of the service object behind proxy ``obj`` now, as when the proxy itself goes: the
    service drops it with the next call.  For a sequence of calls that ends while a proxy may
    still be referenced (by hypothesis' record of a state machine's steps, until a cyclic garbage
    collection): the driver then frees the object at the same point of every run.  The proxy is
    not called after this; anything that is no proxy is left as it is."""
    if isinstance(obj, Remote):
        obj._let_go()


def begin_call(obj: Any, method: str, *args: Any) -> Callable[[], Any]:
    """Start ``obj.method(*args)``; the function returned gives its result (or raises).

    A call to the driver service is sent now and its reply read when the function is called,
    so the caller's own work in between runs while the driver works.  Anything else (the
    in-process reference, an inline driver) is called when the function is."""
    if isinstance(obj, (Remote, DeviceProxy)):
        begin = getattr(obj, f"_begin_{method}", None)  # a method that adapts its arguments or result
        return begin(*args) if begin is not None else obj._begin(method, args)
    return functools.partial(getattr(obj, method), *args)


_KINDS = {HeldKind.PREPARED_MODEL: PreparedModelProxy, HeldKind.BUFFER: BufferProxy}
PROXY_CLASSES = tuple(_KINDS.values())


def make_proxy(endpoint: Any, number: int, generation: int, kind: str) -> Remote:
    return _KINDS[HeldKind(kind)](endpoint, number, generation)


class DeviceProxy:
    """The device of a driver service; survives service restarts (it always means 'the driver')."""

    def __init__(self, endpoint: Any) -> None:
        self._endpoint = endpoint

    @property
    def name(self) -> str:
        return self._endpoint.name

    @property
    def version(self) -> str:
        return self._endpoint.version

    @property
    def lifetime(self) -> int:
        """Which of the service's processes serves the driver now (a restart starts another)."""
        return self._endpoint.generation

    def _call(self, method: str, *args: Any) -> Any:
        return self._endpoint.call(None, _DEVICE, method, args, CallDescription("Device", method, args))

    def _begin(self, method: str, args: tuple) -> Callable[[], Any]:
        started = self._endpoint.begin(None, _DEVICE, method, args, CallDescription("Device", method, args))
        return functools.partial(self._endpoint.finish, started)

    def capabilities(self) -> Capabilities:
        return self._call("capabilities")

    def get_supported_operations(self, model: Model) -> list[bool]:
        return self._call("get_supported_operations", model)

    def prepare_model(self, model: Model) -> PreparedModelProxy:
        return self._call("prepare_model", model)

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[Any], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]) -> tuple[BufferProxy, int]:
        return self._begin_allocate(desc, prepared_models, input_roles, output_roles)()

    def _begin_allocate(self, desc: BufferDesc, prepared_models: Sequence[Any], input_roles: Sequence[BufferRole],
                        output_roles: Sequence[BufferRole]) -> Callable[[], tuple[BufferProxy, int]]:
        # An object that is no proxy (another driver's prepared model) reaches the driver as a stranger.
        models = [m if isinstance(m, Remote) else wire.Foreign(repr(m)) for m in prepared_models]
        finish = self._begin("allocate", (desc, models, list(input_roles), list(output_roles)))
        return lambda: tuple(finish())

    def ping(self) -> None:
        """A round trip through the service that does not reach the driver (benchmarks)."""
        self._endpoint.call(None, _SERVICE, "ping", (), CallDescription("Service", "ping", ()))

    def __repr__(self) -> str:
        return f"<DeviceProxy {self.name!r} in a driver service>"


class CustomCallsProxy:
    """The driver's custom-call executor in the service (`harness.service.custom_calls.CustomCallExecutor`)."""

    def __init__(self, endpoint: Any) -> None:
        self._endpoint = endpoint

    def _call(self, method: str, name: str, platform: str, *args: Any) -> Any:
        return self._endpoint.call(None, _CUSTOM_CALLS, method, (name, platform, *args),
                                   _described(method, name, platform, args))

    def lookup(self, name: str, platform: str) -> tuple:
        return self._call("lookup", name, platform)

    def invoke(self, name: str, platform: str, inputs: Memory, operands: tuple, outputs: Memory, output: Any,
               opaque: bytes) -> tuple:
        return self._call("invoke", name, platform, inputs, operands, outputs, output, opaque)

    def prepare_xla(self, name: str, platform: str) -> tuple:
        """Import jax in the service and register the target's handler: a set-up step, given the
        service's start-up deadline (importing jax takes seconds; a call's deadline may be 2 s)."""
        return self._endpoint.call(None, _CUSTOM_CALLS, "prepare_xla", (name, platform),
                                   _described("prepare_xla", name, platform, ()), deadline=SETUP_DEADLINE_S)

    def under_xla(self, name: str, platform: str, arguments: list, results: tuple, opaque: bytes) -> tuple:
        return self._call("under_xla", name, platform, arguments, results, opaque)


def _described(method: str, name: str, platform: str, args: tuple) -> CallDescription:
    """A custom call's description: its faults are counted per target (each is its own function in
    the driver's library), so one target that crashes does not get another's calls refused."""
    return CallDescription("CustomCalls", method, (name, platform, *args), f"CustomCalls.{method}[{name}@{platform}]")
