"""A lockstep sequence releases its buffers on both drivers however it ends, so that nothing a
test leaves live counts against a driver's memory limit (DOM-ALLOC-3 lets a driver refuse past
one); after a fault, the driver is not called again."""

from __future__ import annotations

import pytest

from harness.api.errors import ConformanceError, DriverFault
from harness.api.hal import BufferDesc, BufferRole, DriverError, ErrorStatus, OperandType, OperationType
from harness.integration.skips import NotRun
from harness.judging.lockstep import Lockstep
from harness.strategies.domains import Flavor
from reference_driver import ReferenceDevice
from reference_driver.device import ReferenceBuffer

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)


def _allocated(step: Lockstep) -> None:
    pair = step.prepare(FLAVOR.model((2, 2)))
    assert step.allocate("a", BufferDesc(), [pair], [BufferRole(0, 0)], []) is not None
    assert step.allocate("b", BufferDesc(), [pair], [BufferRole(0, 1)], []) is not None


class _StopsTheExample(BaseException):
    """As hypothesis stops an example that ran out of choices: no Exception."""


ENDINGS = [_StopsTheExample("out of choices"), ValueError("a harness error"), NotRun("cut short", "nothing")]


@pytest.mark.parametrize("ending", ENDINGS, ids=["example-stopped", "harness-error", "not-run"])
def test_buffers_are_released_when_a_sequence_is_cut_short(ending) -> None:
    driver, reference = ReferenceDevice(), ReferenceDevice()
    with pytest.raises(type(ending)):
        with Lockstep(driver, reference) as step:
            _allocated(step)
            raise ending
    assert driver.tokens.live_tokens() == [] and reference.tokens.live_tokens() == []
    assert [s.method for s in step.steps][-2:] == ["release", "release"]


def test_buffers_are_released_when_a_sequence_ends() -> None:
    driver, reference = ReferenceDevice(), ReferenceDevice()
    with Lockstep(driver, reference) as step:
        _allocated(step)
    assert driver.tokens.live_tokens() == [] and reference.tokens.live_tokens() == []


def test_after_a_fault_only_the_reference_releases() -> None:
    driver, reference = ReferenceDevice(), ReferenceDevice()
    with pytest.raises(DriverFault):
        with Lockstep(driver, reference) as step:
            _allocated(step)
            raise DriverFault("the service crashed", requirement="SVC-1")
    assert reference.tokens.live_tokens() == []
    assert len(driver.tokens.live_tokens()) == 2  # not called: a crashed or hung service is replaced
    assert "release" not in [s.method for s in step.steps]


class _ReleaseFails(ReferenceBuffer):
    def release(self) -> None:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "release refused")


def test_a_verdict_outlives_a_release_that_fails_after_it() -> None:
    driver, reference = ReferenceDevice(buffer_class=_ReleaseFails), ReferenceDevice()
    with pytest.raises(ConformanceError) as raised:
        with Lockstep(driver, reference) as step:
            _allocated(step)
            raise ConformanceError("[DOM-COPY-1] wrong bytes", requirement="DOM-COPY-1")
    assert raised.value.requirement == "DOM-COPY-1"
    assert any("release refused" in note for note in raised.value.__notes__)


def test_a_release_that_fails_on_its_own_is_the_outcome() -> None:
    driver, reference = ReferenceDevice(buffer_class=_ReleaseFails), ReferenceDevice()
    with pytest.raises(DriverError) as raised:
        with Lockstep(driver, reference) as step:
            _allocated(step)
            raise NotRun("cut short", "nothing")
    assert raised.value.status == ErrorStatus.GENERAL_FAILURE
