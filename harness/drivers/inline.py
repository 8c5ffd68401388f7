"""The driver under test in the harness's own process (``--driver-isolation=inline``).

In a driver service, whatever comes back from the driver's process is the driver's by
construction.  Inline, the driver's code and the harness's share one stack, so the Driver API is
presented through thin wrappers that mark each exception leaving a call into the driver
(`harness.api.errors.mark_raised_by_driver`).  A failure the harness raised on its own then stays
the harness's fault (the certificate says INCOMPLETE), exactly as with process isolation, instead
of becoming a verdict on the driver.

The wrappers hand the driver its own objects back: a prepared model passed to ``allocate`` reaches
it unwrapped (a driver may check that a model is one of its own), and anything else as it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.api.errors import calls_into_driver
from harness.api.hal import BufferDesc, BufferRole, Capabilities, Device, Model

__all__ = ["InlineBuffer", "InlineCustomCalls", "InlineDevice", "InlinePreparedModel"]


class InlinePreparedModel:
    """A prepared model of the inline driver; its ``execute`` is the driver's code."""

    __slots__ = ("driver_object", "execute")

    def __init__(self, driver_object: Any) -> None:
        self.driver_object = driver_object
        # looked up at the call, inside the marked region: a "model" without execute is the driver's mistake
        self.execute = calls_into_driver(lambda request: driver_object.execute(request))

    def __repr__(self) -> str:
        return f"<inline {self.driver_object!r}>"


class InlineBuffer:
    """A buffer of the inline driver; each method is the driver's code."""

    __slots__ = ("driver_object", "copy_from", "copy_to", "release")

    def __init__(self, driver_object: Any) -> None:
        self.driver_object = driver_object
        self.copy_from = calls_into_driver(lambda memory, dimensions=(): driver_object.copy_from(memory, dimensions))
        self.copy_to = calls_into_driver(lambda memory: driver_object.copy_to(memory))
        self.release = calls_into_driver(lambda: driver_object.release())

    def __repr__(self) -> str:
        return f"<inline {self.driver_object!r}>"


class InlineDevice:
    """The inline driver's device: the Driver API, every call marked as the driver's code."""

    def __init__(self, device: Device) -> None:
        self.driver_object = device

    @property
    def name(self) -> str:
        return calls_into_driver(lambda: self.driver_object.name)()

    @property
    def version(self) -> str:
        return calls_into_driver(lambda: self.driver_object.version)()

    def capabilities(self) -> Capabilities:
        return calls_into_driver(self.driver_object.capabilities)()

    def get_supported_operations(self, model: Model) -> list[bool]:
        return calls_into_driver(self.driver_object.get_supported_operations)(model)

    def prepare_model(self, model: Model) -> InlinePreparedModel:
        return InlinePreparedModel(calls_into_driver(self.driver_object.prepare_model)(model))

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[Any], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]) -> tuple[InlineBuffer, int]:
        models = [m.driver_object if isinstance(m, InlinePreparedModel) else m for m in prepared_models]
        buffer, token = calls_into_driver(_allocated)(self.driver_object, desc, models, list(input_roles), list(output_roles))
        return InlineBuffer(buffer), token

    def __getattr__(self, name: str) -> Any:
        if name == "driver_object":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        # what the Driver API does not name (a native driver's module, say) is read from the driver itself
        return getattr(self.driver_object, name)

    def __repr__(self) -> str:
        return f"<inline {self.driver_object!r}>"


def _allocated(device: Any, desc: BufferDesc, models: list, input_roles: list, output_roles: list) -> tuple[Any, int]:
    # unpacked here, inside the marked region: a reply that is not (buffer, token) is the driver's mistake
    buffer, token = device.allocate(desc, models, input_roles, output_roles)
    return buffer, token


class InlineCustomCalls:
    """The driver's custom-call executor (`harness.service.custom_calls.CustomCallExecutor`) in
    this process: what it raises is counted as the driver's, as it is from the driver's service."""

    def __init__(self, executor: Any) -> None:
        self.lookup = calls_into_driver(executor.lookup)
        self.invoke = calls_into_driver(executor.invoke)
        self.prepare_xla = calls_into_driver(executor.prepare_xla)
        self.under_xla = calls_into_driver(executor.under_xla)
