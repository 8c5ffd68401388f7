"""A leak found across runs of the memory-domain state machine carries every run up to it as its
steps, so that its reproducer, replayed on a fresh driver, fails the same way (DOM-ALLOC-3)."""

from __future__ import annotations

import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, OperandType, OperationType
from harness.judging.lockstep import NEXT_RUN, Lockstep, replay
from harness.strategies.domains import Flavor
from harness.suites.memory_domains.test_state_machine import AcrossRuns
from reference_driver import ReferenceDevice

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)


def _run(across: AcrossRuns, driver, reference, first_run: bool) -> None:
    """One run as the state machine starts one: a model, and a buffer of its first input."""
    step = Lockstep(driver, reference, leaks=across.leaks, before=across.history)
    pair = step.prepare(FLAVOR.model((2, 2)))
    served = step.allocate("buffer1", BufferDesc(), [pair], [BufferRole(0, 0)], [])
    if served is None and not first_run:
        step.served_again("buffer1", "at the start of an earlier run")
    step.close()
    across.end_run(step.steps)


def test_a_leak_across_runs_replays_with_every_run_before_it(leaky) -> None:
    across, driver, reference = AcrossRuns(), leaky(1), ReferenceDevice()
    _run(across, driver, reference, first_run=True)
    _run(across, driver, reference, first_run=False)
    [leak] = across.leaks
    assert leak.requirement == "DOM-ALLOC-3" and [s.method for s in leak.steps].count(NEXT_RUN) == 1
    with pytest.raises(ConformanceError) as again:
        replay(leak.steps, leaky(1), ReferenceDevice())
    assert again.value.requirement == "DOM-ALLOC-3"
    second_run = leak.steps[[s.method for s in leak.steps].index(NEXT_RUN) + 1:]
    replay(second_run, leaky(1), ReferenceDevice()).close()  # alone, on a fresh driver, it passes
