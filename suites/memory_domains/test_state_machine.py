"""All of SPEC §3 at once: prepare / allocate / copy_from / execute / copy_to / release,
interleaved by hypothesis on the driver under test and the reference in lockstep."""

from __future__ import annotations

import unittest
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, event, note, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, get_state_machine_test, initialize, multiple, rule

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, element_size
from harness.judging.lockstep import NEXT_RUN, Lockstep, Pair, Step
from harness.judging.scenario import MemorySpec, Scenario
from harness.strategies.domains import Flavor, TokenUse, nbytes, request, values_for

pytestmark = pytest.mark.usefixtures("memory_domains")

MODEL_DIMS = [(2, 2), (0, 2), (3,)]
#: What a refused read of a buffer may have broken, by the reference's rule (`Lockstep.execute`).
READ_RULES = ("DOM-STATE-2", "DOM-ROLE-1", "DOM-ROLE-2")
WRITE_RULES = ("DOM-ROLE-1", "DOM-ROLE-2")  # a write outside the buffer's roles


@dataclass(frozen=True)
class Prepared:
    model: Scenario
    pair: Pair
    dims: tuple[int, ...]


@dataclass(frozen=True)
class Allocated:
    """A buffer the run holds, and the roles it was allocated for as (model, I/O index) pairs."""

    name: str
    models: tuple[Prepared, ...]
    inputs: tuple[tuple[Prepared, int], ...]
    outputs: tuple[tuple[Prepared, int], ...]
    held: bool = True  # False: the driver refused it with GENERAL_FAILURE (DOM-ALLOC-3), the reference served it


@dataclass
class AcrossRuns:
    """What one call of the test keeps across its runs on the same driver."""

    first_served: set[tuple[tuple[int, ...], str]] = field(default_factory=set)  # (dims, direction) a run began with
    leaks: list[ConformanceError] = field(default_factory=list)  # DOM-ALLOC-3, judged after the runs
    # Every run's calls, in order.  A run's verdict carries them all as its steps (Lockstep's
    # ``before``): the driver lives through every run, so its failure may need what came before.
    history: list[Step] = field(default_factory=list)
    # Per requirement, its first verdict: hypothesis shrinks a failure by running it again and
    # again, so the final verdict's history is the longest, and the first's the shortest.
    first_verdicts: dict[str, ConformanceError] = field(default_factory=dict)

    def judged(self, verdict: ConformanceError) -> None:
        self.first_verdicts.setdefault(verdict.requirement, verdict)

    def end_run(self, steps: list[Step]) -> None:
        if self.history:
            self.history.append(Step(NEXT_RUN, ()))
        self.history.extend(steps)


def concrete(dims: tuple[int, ...], rows: int) -> tuple[int, ...]:
    return tuple(d or rows for d in dims)


def _role(buffer: Allocated, direction: str, pick: int) -> tuple[Prepared, int] | None:
    """One of the buffer's own roles in ``direction`` (``pick`` chooses among them), or None."""
    roles = buffer.inputs if direction == "input" else buffer.outputs
    return roles[pick % len(roles)] if roles else None


class MemoryDomainMachine(RuleBasedStateMachine):
    driver = None
    reference = None
    flavor: Flavor  # set per run: a declared operation and type (CHOICE-5)
    count_example: Callable[[], None]  # set per run: the example_counter fixture
    across: AcrossRuns  # set per test call
    prepared = Bundle("prepared")
    buffers = Bundle("buffers")

    def __init__(self) -> None:
        super().__init__()
        self.step = Lockstep(self.driver, self.reference, leaks=self.across.leaks, before=self.across.history,
                             on_verdict=self.across.judged)
        self.count = 0

    def _prepare(self, dims: tuple[int, ...]) -> Prepared | None:
        model = self.flavor.model(dims)
        pair = self.step.prepare(model)
        return Prepared(model, pair, dims) if pair else None

    def _allocate(self, models: list[Prepared], roles: list[tuple[str, int, int]], desc: tuple[int, ...]) -> Allocated | None:
        """The buffer, or None when SPEC refuses the allocation.  A buffer only the driver refused
        stays in the bundle, unheld, so that what hypothesis draws depends on the reference alone:
        a driver whose refusals grow from run to run (a leak) then gets a verdict, not hypothesis'
        error about inconsistent data generation."""
        self.count += 1
        name = f"buffer{self.count}"
        inputs = [BufferRole(m % len(models), io) for d, m, io in roles if d == "input"]
        outputs = [BufferRole(m % len(models), io) for d, m, io in roles if d == "output"]
        refused_before = self.step.refused_allocations
        pair = self.step.allocate(name, BufferDesc(desc), [p.pair for p in models], inputs, outputs, requirement="DOM-ALLOC-1")
        held = pair is not None
        if not held and self.step.refused_allocations == refused_before:
            event("allocate rejected")
            return None
        event(f"allocate {'accepted' if held else 'refused by the driver alone'}")
        return Allocated(name, tuple(models), tuple((models[r.model_index], r.io_index) for r in inputs),
                         tuple((models[r.model_index], r.io_index) for r in outputs), held)

    # Hypothesis turns rules off at random for a whole run (swarm testing).  A run that started
    # with empty bundles and had `allocate` off could only prepare, step after step: two thirds of
    # all steps were prepares (in 1,000 runs of the nightly profile).  So every run starts with a
    # prepared model and a buffer of its own model, and the other rules can run from the first step.
    @initialize(target=prepared, dims=st.sampled_from(MODEL_DIMS))
    def first_model(self, dims):
        prepared = self._prepare(dims)
        return prepared if prepared else multiple()

    # DOM-ALLOC-3 across runs: each run starts with nothing live, so an allocation the driver served
    # at the start of an earlier run it must serve again (a refusal that grows with history is a leak).
    @initialize(target=buffers, dims=st.sampled_from(MODEL_DIMS), direction=st.sampled_from(["input", "output"]))
    def first_buffer(self, dims, direction):
        prepared = self._prepare(dims)
        buffer = self._allocate([prepared], [(direction, 0, 0)], ()) if prepared else None
        if buffer is None:
            return multiple()
        if buffer.held:
            self.across.first_served.add((dims, direction))
        elif (dims, direction) in self.across.first_served:
            self.step.served_again(buffer.name, "at the start of an earlier run of this test, with nothing else live")
        return buffer

    @rule(target=prepared, dims=st.sampled_from(MODEL_DIMS))
    def prepare(self, dims):
        prepared = self._prepare(dims)
        return prepared if prepared else multiple()

    # I/O indexes are mostly in range (a binary model has two inputs and one output), so that most
    # allocations are served and their buffers go on to be copied, executed and released.  A drawn
    # index 2 is one past the last input, or for an output becomes 1, one past the only output; with
    # conflicting models or descriptors it keeps refusals in every run (test_allocation.py tries
    # refused role sets in depth).
    @rule(target=buffers, models=st.lists(prepared, min_size=1, max_size=2),
          roles=st.lists(st.tuples(st.sampled_from(["input", "output"]), st.integers(0, 1), st.sampled_from([0, 1, 0, 2])),
                         min_size=1, max_size=3),
          desc=st.sampled_from([(), (2, 2), (0, 2)]))
    def allocate(self, models, roles, desc):
        roles = [(d, m, io if d == "input" else io // 2) for d, m, io in roles]
        buffer = self._allocate(models, roles, desc)
        return buffer if buffer else multiple()

    @rule(buffer=buffers, rows=st.integers(1, 3), dims_given=st.booleans(), seed=st.integers(0, 3))
    def copy_from(self, buffer, rows, dims_given, seed):
        if not buffer.held:
            return
        shape = concrete(buffer.models[0].dims, rows)
        self.step.copy_from(buffer.name, MemorySpec("ashmem", values_for(self.flavor.type, shape, seed).tobytes()),
                            shape if dims_given else (), requirement="DOM-COPY-2")

    # now and then a memory one element too long: a failed read, which must change nothing (DOM-STATE-1)
    @rule(buffer=buffers, rows=st.integers(1, 3), extra=st.sampled_from([0, 0, 0, 1]))
    def copy_to(self, buffer, rows, extra):
        if not buffer.held:
            return
        size = nbytes(self.flavor.type, concrete(buffer.models[0].dims, rows)) + extra * element_size(self.flavor.type)
        self.step.copy_to(buffer.name, size, requirement="DOM-STATE-2")

    # An execution uses the buffer in one of its own roles (``own``), which the driver must accept
    # once the buffer holds a value, or on any prepared model at any index, which it mostly must refuse.
    @rule(buffer=buffers, model=prepared, own=st.booleans(), pick=st.integers(0, 2), io=st.integers(0, 1), rows=st.integers(1, 3))
    def execute_reading(self, buffer, model, own, pick, io, rows):
        if not buffer.held:
            return
        target, io = (_role(buffer, "input", pick) if own else None) or (model, io)
        shape = concrete(target.dims, rows)
        inputs = [TokenUse(buffer.name) if i == io else values_for(self.flavor.type, shape, i) for i in range(2)]
        # a read in the buffer's own roles checks its state (DOM-STATE-2: never written, or a failed
        # write since), one in another's its roles: the reference's refusal says which the driver broke
        self.step.execute(target.pair, request(target.model, inputs, [nbytes(self.flavor.type, shape)], label=f"read {buffer.name}"),
                          "DOM-ROLE-2", READ_RULES)

    @rule(buffer=buffers, model=prepared, own=st.booleans(), pick=st.integers(0, 2), rows=st.integers(1, 3))
    def execute_writing(self, buffer, model, own, pick, rows):
        if not buffer.held:
            return
        target, _ = (_role(buffer, "output", pick) if own else None) or (model, 0)
        shape = concrete(target.dims, rows)
        inputs = [values_for(self.flavor.type, shape, 0), values_for(self.flavor.type, shape, 1)]
        self.step.execute(target.pair, request(target.model, inputs, [TokenUse(buffer.name)], label=f"write {buffer.name}"),
                          "DOM-STATE-1", WRITE_RULES)

    @rule(buffer=consumes(buffers))
    def release(self, buffer):
        if buffer.held:
            self.step.release(buffer.name)

    def teardown(self) -> None:
        note("\n".join(self.step.log))
        self.step.close()
        self.across.end_run(self.step.steps)
        self.count_example()


@pytest.mark.requirement("DOM-STATE-1", "DOM-STATE-2", "DOM-ROLE-1", "DOM-ROLE-2", "DOM-COPY-1", "DOM-COPY-2", "DOM-ALLOC-1",
                         "DOM-ALLOC-3")
@pytest.mark.generative
def test_memory_domain_state_machine(driver, reference, flavor, generation_seed, example_counter, stored_histories,
                                     shortest_history, failure_watch, run_built_test) -> None:
    machine = type("Machine", (MemoryDomainMachine,), {"driver": driver, "reference": reference, "flavor": flavor,
                                                        "count_example": staticmethod(example_counter),
                                                        "across": AcrossRuns()})
    # Hypothesis draws each step's rule among those whose bundles are filled, filtering the rest: early
    # in a run most rules wait for a prepared model or a buffer, and a run can fail the
    # filter_too_much health check on that alone (8 runs kept, 50 filtered, in one fuzz round).
    checks_off = [*settings.default.suppress_health_check, HealthCheck.filter_too_much]
    # A replay run (harness replay) plays the call sequences stored for this test first: a leak's.
    played = stored_histories.replay_stored(driver, reference)
    # run_state_machine_as_test builds this test and calls it; built here, its first failing run is
    # watched, so a run stopped while hypothesis shrinks it still records the failure.
    if generation_seed is not None:  # a seeded run (ci, certify, a fuzzing round) must be repeatable:
        machine = hypothesis_seed(generation_seed)(machine)  # hypothesis' @seed on the machine seeds its test
    run = get_state_machine_test(machine, settings=settings(settings.default, suppress_health_check=checks_off))
    failure_watch.watch(run)
    try:
        run_built_test(run)
    except unittest.SkipTest:  # hypothesis had no stored example of its own to replay
        if not played:
            raise
        return
    except Flaky as failure:
        # A run hypothesis replays must go as it went.  A driver whose answers depend on the runs
        # before may not, and then the verdict is its own first failure, not hypothesis' complaint.
        if not machine.across.first_verdicts:
            raise
        raise _first_verdict(machine.across, stored_histories, shortest_history) from failure
    except (ConformanceError, ExceptionGroup) as failure:  # one failure, or hypothesis' distinct ones
        # Hypothesis shrank each run, but on a driver that had lived through every run before it:
        # a verdict's steps are all of them, cut down here to what fails on a fresh driver.
        for verdict in (failure, *getattr(failure, "exceptions", ())):
            if isinstance(verdict, ConformanceError) and verdict.steps:
                _keep_shortest(verdict, stored_histories, shortest_history, machine.across)
        raise
    # A leak is judged over all the runs: a run's own outcome must not depend on the ones before it.
    # No example of hypothesis' carries it, so its history is stored for `harness replay`, then
    # shrunk (on a fresh driver each time: everything it ran before is part of the history).
    if machine.across.leaks:
        leak = machine.across.leaks[0]
        failure_watch.failed(leak)
        _keep_shortest(leak, stored_histories, shortest_history, machine.across)
        raise leak


def _first_verdict(across: AcrossRuns, stored_histories, shortest_history) -> ConformanceError:
    """The first failure the driver showed in this test call, its history shrunk."""
    verdict = next(iter(across.first_verdicts.values()))
    _keep_shortest(verdict, stored_histories, shortest_history, across)
    return verdict


def _keep_shortest(verdict: ConformanceError, stored_histories, shortest_history, across: AcrossRuns) -> None:
    """Store the verdict's call sequence for `harness replay` (first: a death while shrinking loses
    nothing), then put the shortest that still fails in its place, shrunk from the first history
    that failed with the verdict's requirement."""
    first = across.first_verdicts.get(verdict.requirement)
    stored_histories.keep(verdict.steps)
    history, verdict.steps = verdict.steps, shortest_history(verdict, first.steps if first is not None else ())
    stored_histories.replace(history, verdict.steps)
