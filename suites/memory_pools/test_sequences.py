"""STATE-1 and POOL-2 over sequences: models prepared one after another, then executed in turn,
each execution's request memory fresh or reused from the model's earlier executions (sequences:
`harness.strategies.sequences`).  Every execution is judged against the reference running the
same sequence: its outputs within CHOICE-7 of the reference's, and its inputs' bytes as they were.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given

from harness.api.hal import Capabilities, DataLocation, DriverError, Request, RequestArgument
from harness.api.memory import Memory, create_ashmem
from harness.integration.skips import not_applicable
from harness.judging.oracle import checking, compare_values
from harness.judging.verdict import violation
from harness.strategies.domains import BINARY_OPS, Flavor, declared_flavor, nbytes, values_for
from harness.strategies.sequences import ExecutionSequence, Step, execution_sequences


@pytest.fixture
def sequence_flavor(capabilities: Capabilities) -> Flavor:
    """The models' operation and type: a declared binary operation on a declared type."""
    found = declared_flavor(capabilities)
    if found is None:
        not_applicable("operations", f"the sequences' models need one of {', '.join(op.name for op in BINARY_OPS)} on "
                                     "a type it takes, and the driver declares none")
    return found


@dataclass
class _Side:
    """One device's part of a sequence: its prepared models and, when reused, their memories."""

    prepared: list[object]
    memories: dict[int, Memory]

    def close(self) -> None:
        for memory in self.memories.values():
            memory.close()


def _execute(side: _Side, sequence: ExecutionSequence, step: Step, flavor: Flavor) -> tuple[str, bytes, bytes]:
    """Write the step's inputs into its memory and execute: (error, or '', the output's bytes,
    the inputs' bytes after the execution)."""
    shape = sequence.models[step.model]
    size = nbytes(flavor.type, shape)
    memory = side.memories.get(step.model) if sequence.reuse_memories else None
    if memory is None:
        memory = create_ashmem(3 * size)
        if sequence.reuse_memories:
            side.memories[step.model] = memory
    inputs = values_for(flavor.type, shape, step.seed).tobytes() + values_for(flavor.type, shape, step.seed + 8).tobytes()
    memory.write(inputs)
    memory.write(b"\0" * size, at=2 * size)
    request = Request(inputs=(RequestArgument(location=DataLocation(0, 0, size)),
                              RequestArgument(location=DataLocation(0, size, size))),
                      outputs=(RequestArgument(location=DataLocation(0, 2 * size, size)),), pools=(memory,))
    try:
        side.prepared[step.model].execute(request)
        error = ""
    except DriverError as failure:
        error = str(failure)
    held = memory.read()
    if not sequence.reuse_memories:
        memory.close()
    return error, held[2 * size:], held[:2 * size]


@pytest.mark.requirement("STATE-1", "POOL-2")
@given(sequence=execution_sequences())
def test_executions_in_sequence_depend_only_on_their_requests(driver, reference, sequence_flavor, sequence) -> None:
    flavor = sequence_flavor
    models = [flavor.model(shape).build_model() for shape in sequence.models]
    expected, actual = _Side([reference.prepare_model(m) for m in models], {}), _Side([], {})
    try:
        with checking("POOL-2"):
            actual.prepared = [driver.prepare_model(m) for m in models]
        for number, step in enumerate(sequence.steps):
            rule = "POOL-2" if number == 0 else "STATE-1"
            where = (f"execution {number + 1} of {len(sequence.steps)} (model {step.model + 1} of {len(models)}, "
                     f"{sequence.executions_of(step.model)} executions of it in all)")
            want_error, want, want_inputs = _execute(expected, sequence, step, flavor)
            with checking(rule):
                got_error, got, got_inputs = _execute(actual, sequence, step, flavor)
            if want_error:  # the reference refuses nothing here: a valid request on a declared model
                raise AssertionError(f"the reference failed {where}: {want_error}")
            if got_error:
                raise violation(rule, f"{where} failed: {got_error}; the reference ran it")
            if got_inputs != want_inputs:
                raise violation("POOL-2", f"{where} changed its input regions")
            problem = compare_values(flavor.type, want, got, terms=2)
            if problem:
                raise violation(rule, f"{where} gave other outputs than its request's: {problem}")
    finally:
        expected.close()
        actual.close()
