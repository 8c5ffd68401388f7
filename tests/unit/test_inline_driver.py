"""A driver run in the harness's own process (``--driver-isolation=inline``) is called through
`harness.drivers.inline`: what leaves its code is marked as the driver's, as a service's client
marks what comes back from its process, and what the harness raises on its own stays the
harness's fault (no verdict: the certificate says INCOMPLETE)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.api.hal import BufferDesc, BufferRole
from harness.api.memory import create_ashmem
from harness.drivers.inline import InlineCustomCalls, InlineDevice
from harness.judging.builders import binary_model
from harness.report.attribution import fault_of
from reference_driver import ReferenceDevice


def _fault(error: BaseException) -> str:
    return fault_of(error, lambda filename: False)  # no assert here is a suite's check


def _raised(call, *args) -> BaseException:
    with pytest.raises(BaseException) as caught:
        call(*args)
    return caught.value


class _Slots(ReferenceDevice):
    """Raises a KeyError from its own code in capabilities, get_supported_operations and execute."""

    def prepare_model(self, model):
        prepared = super().prepare_model(model)

        class Broken:
            own = prepared

            def execute(self, request):
                raise KeyError("a slot the driver forgot")

        return Broken()

    def capabilities(self):
        raise KeyError("capabilities")

    def get_supported_operations(self, model):
        raise KeyError("supported")


def test_what_the_inline_drivers_code_raises_is_the_drivers() -> None:
    device = InlineDevice(_Slots())
    model = binary_model()
    assert _fault(_raised(device.capabilities)) == "driver"
    assert _fault(_raised(device.get_supported_operations, model)) == "driver"
    prepared = device.prepare_model(model)
    assert _fault(_raised(prepared.execute, None)) == "driver"


def test_what_the_harness_raises_around_an_inline_driver_is_its_own_fault() -> None:
    device = InlineDevice(ReferenceDevice())
    assert device.capabilities().memory_domains  # a call that returns is untouched

    def harness_step() -> None:
        device.capabilities()
        raise KeyError("a slot the harness forgot")

    assert _fault(_raised(harness_step)) == "harness"


def test_an_inline_driver_gets_its_own_prepared_models_back() -> None:
    seen: list = []

    class ChecksItsModels(ReferenceDevice):
        def allocate(self, desc, prepared_models, input_roles, output_roles):
            seen.extend(prepared_models)
            return super().allocate(desc, prepared_models, input_roles, output_roles)

    device = InlineDevice(ChecksItsModels())
    prepared = device.prepare_model(binary_model())
    buffer, token = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    assert [type(m).__name__ for m in seen] == ["ReferencePreparedModel"] and token > 0
    memory = create_ashmem(16)
    memory.write(np.arange(4, dtype=np.float32))
    buffer.copy_from(memory, ())
    out = create_ashmem(16)
    buffer.copy_to(out)
    assert out.read() == memory.read()
    buffer.release()
    assert _fault(_raised(buffer.copy_to, out)) == "driver"  # a released token: the driver's own refusal


def test_a_malformed_reply_of_an_inline_driver_is_the_drivers() -> None:
    class NotAPair(ReferenceDevice):
        def allocate(self, desc, prepared_models, input_roles, output_roles):
            return None

    device = InlineDevice(NotAPair())
    prepared = device.prepare_model(binary_model())
    error = _raised(device.allocate, BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    assert isinstance(error, TypeError) and _fault(error) == "driver"


def test_what_the_inline_custom_call_executor_raises_is_the_drivers() -> None:
    class Executor:
        def lookup(self, name, platform):
            raise KeyError(name)

        invoke = prepare_xla = under_xla = lookup

    calls = InlineCustomCalls(Executor())
    assert _fault(_raised(calls.lookup, "add", "Host")) == "driver"
