"""A driver that declares it refuses buffers of unknown shape (Capabilities.dynamic_buffers=False,
CHOICE-5) and refuses one does what it declared: the test's tally counts it as declared, not as
a refusal that leaves the test not run.  The same refusal from a driver that declares dynamic
buffers is a refusal (DOM-ALLOC-3 allows it; a test with nothing but those is not run)."""

from __future__ import annotations

import dataclasses

import pytest

from harness.api.hal import BufferDesc, BufferRole, DriverError, ErrorStatus, OperandType, OperationType, is_fully_specified
from harness.judging.lockstep import Lockstep, counting_allocations
from harness.strategies.domains import Flavor
from reference_driver import ReferenceDevice

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)


class _RefusesUnknownShapes(ReferenceDevice):
    """Refuses every buffer whose shape is open at allocation, with GENERAL_FAILURE."""

    declares_dynamic_buffers = True

    def capabilities(self):
        return dataclasses.replace(super().capabilities(), dynamic_buffers=self.declares_dynamic_buffers)

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
        if not is_fully_specified(buffer.state.operand_type, buffer.state.initial_dimensions):
            buffer.release()
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "no buffers of unknown shape")
        return buffer, token


class _DeclaresIt(_RefusesUnknownShapes):
    declares_dynamic_buffers = False


@pytest.mark.parametrize(("driver", "declared", "refused"), [(_DeclaresIt(), 1, 0), (_RefusesUnknownShapes(), 0, 1)],
                         ids=["declared", "not declared"])
def test_a_refused_buffer_of_unknown_shape_counts_as_what_the_driver_declared(driver, declared: int, refused: int) -> None:
    with counting_allocations() as tally, Lockstep(driver, ReferenceDevice()) as step:
        open_shape = step.prepare(FLAVOR.model((0, 2)))  # its first dimension unknown
        known = step.prepare(FLAVOR.model((2, 2)))
        assert step.allocate("open", BufferDesc(), [open_shape], [BufferRole(0, 0)], []) is None
        assert step.allocate("known", BufferDesc(), [known], [BufferRole(0, 0)], []) is not None
        assert step.refused_allocations == 1  # the driver's refusal either way (the state machine keeps its buffer)
    assert (tally.declared, tally.refused, tally.served) == (declared, refused, 1)
