"""A refusal is a leak (DOM-ALLOC-3) only when the driver served the same allocation before with
no less live: with every buffer live now live then too, or one just like it.  A driver whose limit
is in bytes may refuse an allocation it served before beside as many buffers, when they are
bigger now; one that refuses it beside the same buffers leaks."""

from __future__ import annotations

import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, DriverError, ErrorStatus, OperandType, OperationType
from harness.judging.lockstep import Lockstep
from harness.strategies.domains import Flavor
from reference_driver import ReferenceDevice

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)


class _HoldsFortyBytes(ReferenceDevice):
    """Correct: at most 40 bytes in live buffers, however many; a release gives its bytes back."""

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
        held = sum(self.tokens.get(t).byte_size for t in self.tokens.live_tokens() if t != token)
        if held + buffer.state.byte_size > 40:
            buffer.release()
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"{held} of 40 bytes held")
        return buffer, token


class _NeverFrees(_HoldsFortyBytes):
    """Leaks: counts every byte it ever served, released or not."""

    spent = 0

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        buffer, token = ReferenceDevice.allocate(self, desc, prepared_models, input_roles, output_roles)
        if self.spent + buffer.state.byte_size > 40:
            buffer.release()
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"{self.spent} of 40 bytes spent")
        self.spent += buffer.state.byte_size
        return buffer, token


def _refill(step: Lockstep, beside: str) -> object:
    """Serve a 16-byte buffer beside one other, release both, then ask the same beside ``beside``."""
    small = step.prepare(FLAVOR.model((2, 2)))  # float32 2x2: 16-byte buffers
    big = step.prepare(FLAVOR.model((2, 4)))  # 32-byte buffers
    assert step.allocate("first", BufferDesc(), [small], [BufferRole(0, 0)], []) is not None
    assert step.allocate("served", BufferDesc(), [small], [BufferRole(0, 1)], []) is not None
    step.release("served")
    step.release("first")
    other = small if beside == "small" else big
    assert step.allocate("beside", BufferDesc(), [other], [BufferRole(0, 0)], []) is not None
    return step.allocate("again", BufferDesc(), [small], [BufferRole(0, 1)], [])


def test_a_byte_limit_beside_bigger_buffers_is_not_a_leak() -> None:
    with Lockstep(_HoldsFortyBytes(), ReferenceDevice()) as step:
        assert _refill(step, beside="big") is None  # refused (32 + 16 > 40): allowed, not judged
        assert step.refused_allocations == 1


def test_a_refusal_beside_the_same_buffers_is_a_leak() -> None:
    with pytest.raises(ConformanceError) as raised:
        with Lockstep(_NeverFrees(), ReferenceDevice()) as step:
            _refill(step, beside="small")
    assert raised.value.requirement == "DOM-ALLOC-3"
