"""An execution that may check one of several rules (the memory-domain state machine's reads: of a
buffer in its own roles, or in another's, of one never written) names the rule the reference
refused it by: a driver that accepted a read of a buffer never written broke DOM-STATE-2, not the
roles rule the read was labelled with, and its certificate fails DOM-STATE-2."""

from __future__ import annotations

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, OperandType, OperationType
from harness.drivers.registry import load_registry
from harness.judging.lockstep import Lockstep, replay
from harness.judging.scenario import MemorySpec
from harness.report.attribution import failed_requirements
from harness.strategies.domains import Flavor, TokenUse, nbytes, request, values_for
from harness.suites.memory_domains.test_state_machine import READ_RULES
from reference_driver import ReferenceDevice

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)
DIMS = (2, 2)
REQUIREMENTS = ["DOM-STATE-1", "DOM-STATE-2", "DOM-ROLE-1", "DOM-ROLE-2"]  # as the state machine names them


def _read_after_a_release(driver, refusal_rules: tuple[str, ...]) -> ConformanceError | None:
    """A buffer written and released, a new one of the same roles read before anything wrote it."""
    step = Lockstep(driver, ReferenceDevice())
    model = FLAVOR.model(DIMS)
    pair = step.prepare(model)
    step.allocate("first", BufferDesc(), [pair], [BufferRole(0, 0)], [])
    step.copy_from("first", MemorySpec("ashmem", values_for(FLAVOR.type, DIMS, 3).tobytes()), ())
    step.release("first")
    step.allocate("second", BufferDesc(), [pair], [BufferRole(0, 0)], [])
    inputs = [TokenUse("second"), values_for(FLAVOR.type, DIMS, 1)]
    try:
        step.execute(pair, request(model, inputs, [nbytes(FLAVOR.type, DIMS)], label="read second"), "DOM-ROLE-2", refusal_rules)
    except ConformanceError as verdict:
        return verdict
    finally:
        step.close()
    return None


def _record(verdict: ConformanceError) -> dict:
    return {"outcome": "failed", "fault": "driver", "requirements": REQUIREMENTS, "rule": verdict.requirement}


def _recycling() -> object:
    return load_registry().resolve("mutant-released-storage-recycled").create()


def test_a_read_of_a_recycled_buffer_fails_the_state_rule() -> None:
    verdict = _read_after_a_release(_recycling(), READ_RULES)
    assert verdict is not None and verdict.requirement == "DOM-STATE-2"
    assert failed_requirements(_record(verdict)) == ("DOM-STATE-2",)
    # its steps replay to the same verdict on a fresh driver: the rules travel with the call
    again = None
    try:
        replay(verdict.steps, _recycling(), ReferenceDevice()).close()
    except ConformanceError as error:
        again = error
    assert again is not None and again.requirement == "DOM-STATE-2"


def test_without_other_rules_the_label_stands() -> None:
    verdict = _read_after_a_release(_recycling(), ())
    assert verdict is not None and verdict.requirement == "DOM-ROLE-2"


def test_the_same_sequence_on_a_correct_driver_is_no_verdict() -> None:
    assert _read_after_a_release(ReferenceDevice(), READ_RULES) is None


def _copy_out(driver, written_first: bool) -> ConformanceError | None:
    """A buffer copied out in a step labelled DOM-COPY-1: after nothing wrote it, or after a
    successful write and then a failed one (which makes it uninitialized again, DOM-STATE-1)."""
    step = Lockstep(driver, ReferenceDevice())
    pair = step.prepare(FLAVOR.model(DIMS))
    step.allocate("buffer", BufferDesc(), [pair], [BufferRole(0, 0)], [])
    size = nbytes(FLAVOR.type, DIMS)
    if written_first:
        step.copy_from("buffer", MemorySpec("ashmem", values_for(FLAVOR.type, DIMS, 3).tobytes()), ())
        step.copy_from("buffer", MemorySpec("ashmem", bytes(size + 4)), (), requirement="DOM-STATE-1")
    try:
        step.copy_to("buffer", size, requirement="DOM-COPY-1")
    except ConformanceError as verdict:
        return verdict
    finally:
        step.close()
    return None


def test_a_copy_of_a_buffer_nothing_wrote_fails_the_state_rule_whatever_the_step_checks() -> None:
    verdict = _copy_out(load_registry().resolve("mutant-copy-to-uninitialized").create(), written_first=False)
    assert verdict is not None and verdict.requirement == "DOM-STATE-2", verdict


def test_a_copy_after_a_failed_write_keeps_the_step_s_rule() -> None:
    """The reference refuses it by DOM-STATE-2 too, but the state the driver kept is what a failed
    write should have undone: the step names the rule it checks."""
    verdict = _copy_out(load_registry().resolve("mutant-failed-copy-keeps-initialized").create(), written_first=True)
    assert verdict is not None and verdict.requirement == "DOM-COPY-1", verdict


def test_both_copies_are_no_verdict_on_a_correct_driver() -> None:
    assert _copy_out(ReferenceDevice(), written_first=False) is None
    assert _copy_out(ReferenceDevice(), written_first=True) is None


def _add_one_more(values, ins, out_op, out):
    """ADD computed one too high: a wrong value however the operands travel."""
    from reference_driver.ops import KERNELS

    return KERNELS[OperationType.ADD].run(values, ins, out_op, None) + 1


def _read_from_a_buffer(driver, dims: tuple[int, ...] = DIMS) -> ConformanceError | None:
    """An execution whose input 0 is a driver-managed buffer written by copy_from, checked as a
    test of roles would check it."""
    step = Lockstep(driver, ReferenceDevice())
    model = FLAVOR.model(dims)
    pair = step.prepare(model)
    step.allocate("in", BufferDesc(), [pair], [BufferRole(0, 0)], [])
    step.copy_from("in", MemorySpec("ashmem", values_for(FLAVOR.type, dims, 3).tobytes()), ())
    try:
        step.execute(pair, request(model, [TokenUse("in"), values_for(FLAVOR.type, dims, 1)],
                                   [nbytes(FLAVOR.type, dims)], label="read in"), "DOM-ROLE-1")
    except ConformanceError as verdict:
        return verdict
    finally:
        step.close()
    return None


def test_a_wrong_value_read_through_a_driver_managed_buffer_is_the_value_rule() -> None:
    """The plain run takes the buffer's contents as a plain argument: wrong there too, the
    operation computes wrong values (OPS-1), whatever the memory-domain test checked."""
    from harness.plugins.mutants._registry import with_kernels

    verdict = _read_from_a_buffer(with_kernels({OperationType.ADD: _add_one_more}))
    assert verdict is not None and verdict.requirement == "OPS-1", verdict
    assert "why OPS-1: with plain I/O" in str(verdict)


def test_a_wrong_value_of_the_buffers_own_making_keeps_the_tests_rule() -> None:
    """A driver that keeps rank-4 buffers in another layout computes right from plain arguments:
    the buffer's handling is the cause, the test's own rule stays."""
    verdict = _read_from_a_buffer(load_registry().resolve("mutant-rank-4-buffers-kept-channels-first").create(),
                                  dims=(1, 2, 2, 3))
    assert verdict is not None and verdict.requirement == "DOM-ROLE-1", verdict
