"""Lockstep: the same sequence of Driver API calls on the reference and the driver under test.

Memory-domain behaviour depends on history (allocations, copies, executions), so it is
checked call by call: each call runs on both drivers, the outcomes are compared at once,
and a mismatch reports the requirement and the whole call sequence that led to it.
Buffers are named; each driver keeps its own object and token under that name.

Every call is also kept as a `Step` (plain data), and a failure carries the steps so far:
`replay` runs them again, which is what a reproducer script of a call sequence does.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.api.errors import ConformanceError, DriverFault
from harness.api.hal import (BufferDesc, BufferRole, Device, DriverError, ErrorStatus, OperandType, is_fully_specified, is_token,
                             operand_byte_size, truth_value_outputs)
from harness.api.memory import Memory
from harness.judging import verdict
from harness.judging.driver_history import history_of, lifetime_of
from harness.judging.oracle import Outcome, Stage, assert_conforms, compare_values, execute_on_both, written_over
from harness.judging.scenario import GUARD_BYTE, Defect, MemorySpec, Scenario, TokenRef, make_memory, outside_region
from harness.service.proxies import begin_call, let_go

__all__ = ["ALONE", "AllocationTally", "CallsAlone", "Lockstep", "NEXT_RUN", "Pair", "Step", "counting_allocations", "last_run_start", "replay"]


@dataclass
class Pair:
    """The reference's and the driver's object for the same thing (a prepared model, a buffer)."""

    reference: Any
    driver: Any
    name: str = ""


@dataclass(frozen=True)
class Step:
    """One lockstep call as data: the method and its arguments, prepared models by name."""

    method: str
    args: tuple


@dataclass
class _Result:
    status: ErrorStatus
    message: str = ""
    value: Any = None
    rule: str = ""  # DriverError.rule: which SPEC rule decided the error

    @property
    def ok(self) -> bool:
        return self.status == ErrorStatus.NONE

    def describe(self) -> str:
        return "success" if self.ok else f"{self.status.name}: {self.message}"


def _size_lost_with_contents(reference_buffer: Any) -> bool:
    """Whether the reference's buffer is uninitialized again after a failed write (DOM-STATE-1)
    and its allocation left its shape open.  Its size is then that of contents it no longer holds:
    a driver that forgot that shape with them, as a new buffer has none, may fail copy_to on the
    missing contents (GENERAL_FAILURE, DOM-STATE-2) where the reference checks the size first."""
    state = reference_buffer.state
    return not state.initialized and not is_fully_specified(state.operand_type, state.initial_dimensions)


@dataclass
class AllocationTally:
    """Valid allocations (ones the reference served) that the driver served and refused during
    one test.  DOM-ALLOC-3 lets a driver refuse them, but a test whose every valid allocation was
    refused checked nothing it is for: it is not run, never a silent pass."""

    served: int = 0
    refused: int = 0
    # Refused buffers of unknown shape from a driver that declares it refuses them
    # (Capabilities.dynamic_buffers=False, CHOICE-5): what it said it would do, so no refusal above.
    declared: int = 0


_TALLIES: list[AllocationTally] = []  # the running test's (the pytest plugin opens one per test call)


@contextmanager
def counting_allocations() -> Iterator[AllocationTally]:
    """Count the valid allocations of every lockstep inside the block (all threads)."""
    tally = AllocationTally()
    _TALLIES.append(tally)
    try:
        yield tally
    finally:
        _TALLIES.remove(tally)


def _keeps_steps(method: Callable) -> Callable:
    """A crash or hang of the driver during a call also carries the steps that led to it, and the
    requirement the call was checking (its ``requirement`` argument, given or by default)."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def call(self: Lockstep, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except DriverFault as fault:
            if not fault.checking and "requirement" in signature.parameters:
                bound = signature.bind(self, *args, **kwargs)
                bound.apply_defaults()
                fault.checking = str(bound.arguments["requirement"])
            # a circuit breaker's refusal carries the call that really failed (a scenario, or steps)
            if not fault.steps and not (fault.by_breaker and fault.scenario is not None):
                fault.steps = self.steps_so_far()  # its requirement (SVC-1 crash, SVC-2 hang) is its type's
                fault.earlier = self._earlier_on_a_verdict()
                self._on_verdict(fault)
            raise

    return call


def _call(fn: Callable[[], Any]) -> _Result:
    try:
        return _Result(ErrorStatus.NONE, value=fn())
    except DriverError as error:
        return _Result(error.status, error.message, rule=error.rule)


class Lockstep:
    """``leaks``: when given, a refusal of an allocation the driver served before beside the same
    buffers or more (DOM-ALLOC-3) is appended to it and the call counts as refused, instead of the
    failure being raised.  Whether a leaking driver refuses depends on everything it was asked
    before, not on this sequence alone; hypothesis must not see that as this example's outcome
    (its replays would disagree), so its state machine reports the leaks after its runs.

    ``before``: the calls the same two drivers had in earlier runs (a list the caller extends after
    each run).  A verdict's steps then begin with them: a driver's failure may depend on what it
    was asked before (storage a released buffer left behind), and its steps must replay on a fresh
    driver.  ``on_verdict`` is told of each verdict as it is made (before it is raised): the
    earliest of a requirement is the shortest history known to fail with it."""

    def __init__(self, driver: Device, reference: Device, leaks: list[ConformanceError] | None = None,
                 before: Sequence[Step] = (), on_verdict: Callable[[ConformanceError], None] = lambda verdict: None) -> None:
        self.driver = driver
        self.reference = reference
        self.leaks = leaks
        self._before = before  # not copied: only a verdict copies it
        self._on_verdict = on_verdict
        self.log: list[str] = []
        self.buffers: dict[str, Pair] = {}
        self.tokens: dict[str, Pair] = {}
        self.refused_allocations = 0
        self._dynamic_buffers: bool | None = None  # the driver's declaration, asked at its first refusal
        self.steps: list[Step] = []
        self._models = 0
        self._scenarios: dict[str, Scenario] = {}  # prepared model name -> its scenario
        self._driver_models: list[Any] = []  # the driver's prepared models, let go of when the sequence closes
        # Per buffer: its element type, and whether an execution computed what it holds (then a
        # read-back is judged within CHOICE-7's bound; a copied value must come back exact).
        self._types: dict[str, OperandType] = {}
        self._truths: dict[str, bool] = {}  # buffers holding truth values (`truth_value_outputs`)
        self._computed: dict[str, bool] = {}
        # The buffers a successful copy_from or execution wrote at least once: the reference refuses
        # to read one of the others because nothing ever initialized it (DOM-STATE-2), and one of
        # these because a failed write made it uninitialized again (DOM-STATE-1).
        self._written: set[str] = set()
        # A memory limit may count buffers or bytes: a refusal is a leak only beside no more than the
        # driver served the same allocation beside.  Per live buffer, what it holds (its allocation's
        # signature, and once written the bytes last written into it); per allocation signature, the
        # holdings live beside it each time the driver served it.
        self._holding: dict[str, tuple] = {}
        self._served: dict[tuple, list[Counter[tuple]]] = {}
        self._history = history_of(driver)  # what the driver had before this sequence, since its process started
        if self._history is not None:
            self._history.join(self.steps, lifetime_of(driver))

    # ----------------------------------------------------------------- comparison

    def _call_log(self) -> str:
        return "call sequence:\n" + "\n".join(f"  {i + 1}. {line}" for i, line in enumerate(self.log))

    def steps_so_far(self) -> tuple[Step, ...]:
        """Every call to replay, on a fresh driver, to get where this sequence is now: the earlier
        runs' (``before``) and this one's."""
        if not self._before:
            return tuple(self.steps)
        return (*self._before, Step(NEXT_RUN, ()), *self.steps)

    def _earlier_on_a_verdict(self) -> tuple:
        """The call sequences the driver had before this one (a verdict's ``earlier``); this one
        is marked as ending in a verdict, which a replay of a later one's history must get past."""
        if self._history is None:
            return ()
        self._history.ended_in_a_verdict(self.steps)
        return self._history.before(self.steps)

    def _failure(self, requirement: str, message: str) -> ConformanceError:
        """The error for a mismatch, with the history shown and the steps attached."""
        failure = ConformanceError(f"{message}\n{self._call_log()}", requirement=requirement, steps=self.steps_so_far(),
                                   earlier=self._earlier_on_a_verdict())
        self._on_verdict(failure)
        return failure

    def _compare(self, requirement: str, call: str, expected: _Result, actual: _Result,
                 also: frozenset[ErrorStatus] = frozenset()) -> None:
        """``also``: statuses SPEC allows here besides the reference's."""
        __tracebackhide__ = True
        self.log.append(f"{call} -> reference {expected.describe()}; driver {actual.describe()}")
        outcome = Outcome(Stage.CALL, expected.status, expected.message, rule=expected.rule)
        if expected.ok and actual.ok:
            return
        if expected.ok:
            problem = "the driver failed a call the reference accepts"
        elif actual.ok:
            problem = f"the driver accepted a call SPEC rejects with {expected.status.name}"
        elif actual.status not in outcome.acceptable_statuses() | also:
            problem = f"wrong status {actual.status.name}, SPEC requires {expected.status.name}"
        else:
            return
        rule = outcome.rule or requirement
        raise self._failure(requirement, f"[{requirement}] {call}: {problem} (reference rule {rule})")

    def _refused_after_serving(self, name: str, when: str) -> None:
        """The driver refused allocation ``name`` (the last call), which it served ``when``: a refusal
        that grows with history is a leak (DOM-ALLOC-3).  Raised at once, or gathered in ``leaks``
        when the caller judges leaks after its runs."""
        leak = self._failure("DOM-ALLOC-3", f"[DOM-ALLOC-3] allocate({name!r}): the driver refused an allocation it "
                                            f"served {when}; releasing a buffer must free what it held")
        if self.leaks is None:
            raise leak
        self.leaks.append(leak)

    @_keeps_steps
    def served_again(self, name: str, when: str) -> None:
        """Allocation ``name``, just made, is one the driver served ``when`` (in earlier call sequences,
        say): a refusal of it is a leak (DOM-ALLOC-3).  Recorded as a step, so that a replay of the
        whole history judges it again."""
        self.steps.append(Step("served_again", (name, when)))
        if name not in self.buffers:
            self._refused_after_serving(name, when)

    # ----------------------------------------------------------------- calls

    @_keeps_steps
    def prepare(self, scenario: Scenario, requirement: str = "DOM-ALLOC-1") -> Pair | None:
        """Prepare the scenario's model on both drivers; None if both (rightly) refuse."""
        call = f"prepare_model({', '.join(scenario.notes) or 'model'})"
        self._models += 1
        name = f"model-{self._models}"
        self.steps.append(Step("prepare", (scenario, requirement)))
        actual_call = begin_call(self.driver, "prepare_model", scenario.build_model())  # the driver works meanwhile
        expected = _call(lambda: self.reference.prepare_model(scenario.build_model()))
        actual = _call(actual_call)
        self._compare(requirement, call, expected, actual)  # its rule names a failure, not what a prepare checks
        self._scenarios[name] = scenario
        if actual.ok:
            self._driver_models.append(actual.value)
        return Pair(expected.value, actual.value, name) if expected.ok else None

    def _declared_refusal(self, reference_buffer: Any) -> bool:
        """Whether the reference's new buffer has a shape not fully known at allocation and the
        driver declares that it refuses such buffers (Capabilities.dynamic_buffers=False)."""
        state = reference_buffer.state
        if is_fully_specified(state.operand_type, state.initial_dimensions):
            return False
        if self._dynamic_buffers is None:
            self._dynamic_buffers = bool(self.driver.capabilities().dynamic_buffers)
        return not self._dynamic_buffers

    @_keeps_steps
    def allocate(
        self,
        name: str,
        desc: BufferDesc,
        prepared: Sequence[Pair],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
        requirement: str = "DOM-ALLOC-1",
    ) -> Pair | None:
        """Allocate on both; None when the reference refuses (and so did the driver) or when
        the driver refuses a valid allocation with GENERAL_FAILURE (DOM-ALLOC-3 allows it)."""
        call = f"allocate({name!r}, {desc}, models {len(prepared)}, in {list(input_roles)}, out {list(output_roles)})"
        self.steps.append(Step("allocate", (name, desc, tuple(p.name for p in prepared), tuple(input_roles),
                                            tuple(output_roles), requirement)))
        actual_call = begin_call(self.driver, "allocate", desc, [p.driver for p in prepared], list(input_roles), list(output_roles))
        expected = _call(lambda: self.reference.allocate(desc, [p.reference for p in prepared], list(input_roles), list(output_roles)))
        actual = _call(actual_call)
        # What the allocation asks for, whatever the buffer is called: the same request later is the same.
        signature = (tuple(desc.dimensions), tuple(p.name for p in prepared), tuple(input_roles), tuple(output_roles))
        if expected.ok and actual.status == ErrorStatus.GENERAL_FAILURE:
            declared = self._declared_refusal(expected.value[0])  # before the release: it reads that buffer
            what = ("a buffer of unknown shape with GENERAL_FAILURE, as it declares (dynamic_buffers=False)" if declared
                    else "a valid allocation with GENERAL_FAILURE (allowed by DOM-ALLOC-3)")
            self.log.append(f"{call} -> driver refused {what}")
            expected.value[0].release()
            self.refused_allocations += 1  # by the driver alone, declared or not
            if _TALLIES:
                if declared:
                    _TALLIES[-1].declared += 1
                else:
                    _TALLIES[-1].refused += 1
            beside = Counter(self._holding.values())
            if any(beside <= before for before in self._served.get(signature, ())):
                self._refused_after_serving(name, f"earlier in this sequence beside the same buffers or more "
                                                  f"({len(self.buffers)} live now, none bigger)")
            return None
        self._compare(requirement, call, expected, actual)
        if not expected.ok:
            verdict.held(requirement)
            return None
        if not (isinstance(actual.value, tuple) and len(actual.value) == 2):
            raise self._failure("DOM-ALLOC-1", f"[DOM-ALLOC-1] {call}: allocate returned {actual.value!r:.100}; SPEC "
                                               f"requires a (buffer, token) pair")
        (ref_buffer, ref_token), (dut_buffer, dut_token) = expected.value, actual.value
        if not is_token(dut_token):
            raise self._failure("DOM-ALLOC-3", f"[DOM-ALLOC-3] {call}: token {dut_token!r} is not a positive integer")
        dut_token = int(dut_token)  # an integer of any type is the same token; requests carry it as an int
        live = {p.driver for n, p in self.tokens.items() if n in self.buffers}
        if dut_token in live:
            raise self._failure("DOM-ALLOC-3", f"[DOM-ALLOC-3] {call}: token {dut_token} is already held by a live buffer")
        self._served.setdefault(signature, []).append(Counter(self._holding.values()))
        self._holding[name] = (signature,)
        if _TALLIES:
            _TALLIES[-1].served += 1
        self.buffers[name] = Pair(ref_buffer, dut_buffer)
        self.tokens[name] = Pair(ref_token, dut_token)
        direction, role = (("input", input_roles[0]) if input_roles else ("output", output_roles[0]))
        model = self._scenarios.get(prepared[role.model_index].name)
        if model is not None:
            indexes = model.subgraph.input_indexes if direction == "input" else model.subgraph.output_indexes
            self._types[name] = model.subgraph.operands[indexes[role.io_index]].type
            self._truths[name] = indexes[role.io_index] in truth_value_outputs(model.subgraph)
        self._computed[name] = False
        verdict.held(requirement)
        verdict.held("DOM-ALLOC-3")  # its token: positive, and no live buffer's
        return self.buffers[name]

    @_keeps_steps
    def copy_from(self, name: str, memory: MemorySpec, dimensions: Sequence[int], requirement: str = "DOM-COPY-1") -> bool:
        pair = self.buffers[name]
        call = f"copy_from({name!r}, {memory.kind} of {memory.size} bytes, dims {tuple(dimensions)})"
        self.steps.append(Step("copy_from", (name, memory, tuple(dimensions), requirement)))
        with make_memory(memory) as driver_memory:
            actual_call = begin_call(pair.driver, "copy_from", driver_memory, tuple(dimensions))
            expected = _with_memory(memory, lambda m: pair.reference.copy_from(m, tuple(dimensions)))
            actual = _call(actual_call)
            written = written_over(memory, driver_memory)  # a copy reads the client's memory, and only reads it
            reuse_after_copy(driver_memory, memory)
        self._compare(requirement, call, expected, actual)
        if written:
            raise self._failure(requirement, f"[{requirement}] {call}: the driver wrote into the client's memory: {written}")
        self._computed[name] = False
        if expected.ok:
            self._holding[name] = (self._holding[name][0], memory.size)
            self._written.add(name)
        verdict.held(requirement)
        return expected.ok

    @_keeps_steps
    def copy_to(self, name: str, size: int, kind: str = "ashmem", requirement: str = "DOM-COPY-1",
                file_offset: int = 0, in_file: bool = False) -> bytes | None:
        """Copy the buffer out on both; an ``mmap_fd`` memory is a region at ``file_offset`` of a
        larger file (a regular one with ``in_file``, else a memfd) with guard bytes around it,
        which must come back untouched."""
        pair = self.buffers[name]
        mmap_fd = kind == "mmap_fd"
        where = f" at file offset {file_offset}{' of a regular file' if in_file else ''}" if mmap_fd else ""
        call = f"copy_to({name!r}, {kind} of {size} bytes{where})"
        self.steps.append(Step("copy_to", (name, size, kind, requirement, file_offset, *((True,) if in_file else ()))))
        spec = MemorySpec(kind, b"\xee" * size, file_offset if mmap_fd else 0, guard=16 if mmap_fd else 0,
                          in_file=in_file and mmap_fd)
        around: list[bytes] = []
        with make_memory(spec) as driver_memory:
            copied = begin_call(pair.driver, "copy_to", driver_memory)
            expected = _with_memory(spec, lambda m: (pair.reference.copy_to(m), m.read())[1])

            def copy_out() -> bytes:
                copied()
                around.append(outside_region(driver_memory, spec))
                return driver_memory.read()

            actual = _call(copy_out)
        sized_by_lost_contents = not expected.ok and expected.rule == "DOM-COPY-1" and _size_lost_with_contents(pair.reference)
        if not expected.ok and expected.rule == "DOM-STATE-2" and name not in self._written:
            requirement = "DOM-STATE-2"  # nothing ever wrote it: whatever the step checks, reading it is the rule
        self._compare(requirement, call, expected, actual, frozenset({ErrorStatus.GENERAL_FAILURE}) if sized_by_lost_contents
                      else frozenset())
        if around and around[0] != GUARD_BYTE * len(around[0]):
            self.log.append(f"{call}: wrote outside the memory's region")
            raise self._failure("DOM-COPY-1", f"[DOM-COPY-1] {call}: the driver wrote outside the memory's region "
                                              f"(the file around it changed: {around[0].hex()})")
        if expected.ok and expected.value != actual.value and not self._within_bound(name, expected.value, actual.value):
            self.log.append(f"{call}: contents differ")
            raise self._failure(requirement, (
                f"[{requirement}] {call}: the driver's buffer holds different bytes than the reference's\n"
                f"  reference: {expected.value[:64].hex()}{'...' if len(expected.value) > 64 else ''}\n"
                f"  driver:    {actual.value[:64].hex()}{'...' if len(actual.value) > 64 else ''}"))
        verdict.held(requirement)
        return expected.value if expected.ok else None

    @_keeps_steps
    def execute(self, prepared: Pair, scenario: Scenario, requirement: str, refusal_rules: tuple[str, ...] = ()) -> Outcome:
        """Execute the scenario's request on both, `TokenRef` pools resolved per driver.

        ``refusal_rules``: other rules this execution checks, for a caller that cannot tell in
        advance which applies (the state machine's reads: of a buffer in its roles, or of one never
        written).  When the reference refuses the request by one of them, a driver that did
        otherwise broke that rule, and the verdict names it."""
        call = f"execute({', '.join(scenario.notes) or 'request'})"
        self.steps.append(Step("execute", (prepared.name, scenario, requirement, *([refusal_rules] if refusal_rules else []))))
        expected, actual = execute_on_both(prepared.reference, prepared.driver, scenario,
                                           {n: p.reference for n, p in self.tokens.items()},
                                           {n: p.driver for n, p in self.tokens.items()})
        self.log.append(f"{call} -> reference {expected.summary()}; driver {actual.summary()}")
        if not expected.ok and expected.rule in refusal_rules:
            requirement = expected.rule
        try:
            assert_conforms(requirement, scenario, expected, actual, devices=(self.reference, self.driver),
                            buffers=lambda: self._reference_contents(scenario))
        except ConformanceError as error:  # under the rule it breaks (a wrong value: culprit's plain run)
            raise self._failure(error.requirement or requirement, str(error)) from None
        for index, argument in enumerate(scenario.outputs):
            pool = scenario.request_pools[argument.location.pool_index] if not argument.has_no_value else None
            if isinstance(pool, TokenRef):
                self._computed[pool.buffer] = expected.ok
                if expected.ok:
                    self._written.add(pool.buffer)
                if expected.ok and index < len(expected.output_shapes) and pool.buffer in self._holding:
                    type = self._types.get(pool.buffer)
                    held = None if type is None else operand_byte_size(type, tuple(expected.output_shapes[index].dimensions))
                    self._holding[pool.buffer] = (self._holding[pool.buffer][0], held)
        verdict.held(requirement)
        return expected

    def _reference_contents(self, scenario: Scenario) -> dict[str, tuple[bytes, tuple[int, ...]]]:
        """What each driver-managed buffer of ``scenario``'s request holds on the reference, with its
        dimensions: a wrong output's plain run passes these as plain arguments (`culprit`)."""
        contents = {}
        for pool in scenario.request_pools:
            if isinstance(pool, TokenRef) and pool.buffer in self.buffers:
                state = getattr(self.buffers[pool.buffer].reference, "state", None)
                if state is not None and state.initialized:
                    contents[pool.buffer] = (np.ascontiguousarray(state.data).tobytes(), tuple(state.dimensions))
        return contents

    def _within_bound(self, name: str, expected: bytes, actual: bytes) -> bool:
        """A computed buffer read back within CHOICE-7's bound of the reference's value."""
        type = self._types.get(name)
        if not self._computed.get(name) or type is None or len(expected) != len(actual):
            return False
        return not compare_values(type, expected, actual, truth=self._truths.get(name, False))

    @_keeps_steps
    def release(self, name: str) -> None:
        pair = self.buffers.pop(name)
        self._holding.pop(name, None)
        self.steps.append(Step("release", (name,)))
        self.log.append(f"release({name!r})")
        released = begin_call(pair.driver, "release")
        pair.reference.release()
        released()

    def close(self) -> None:
        """The sequence is over: its buffers are released, and its prepared models let go of."""
        for name in list(self.buffers):
            self.release(name)
        for model in self._driver_models:
            let_go(model)
        self._driver_models.clear()

    def __enter__(self) -> Lockstep:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> None:
        """The sequence ends however it ends (a verdict, a skip, hypothesis stopping an example that
        ran out of choices): its buffers are released on both drivers.  Left live, they piled up in
        the driver over a run, and a driver that refuses allocations past a memory limit (DOM-ALLOC-3)
        then refused the next example's, so the same choices drew differently and a correct driver
        failed.  After a fault (the service crashed or hung, and is replaced) or an interrupt only
        the reference's are released: a call to the driver then would wait out a deadline."""
        if error is None:
            self.close()
            return
        if isinstance(error, (DriverFault, KeyboardInterrupt, SystemExit)):
            for pair in self.buffers.values():
                pair.reference.release()
            self.buffers.clear()
            self._holding.clear()
            self._driver_models.clear()
            return
        try:
            self.close()
        except (DriverError, ConformanceError) as failure:
            if not isinstance(error, ConformanceError):
                raise  # the release failed on its own: that is the test's outcome
            # the verdict stands: a release that failed after it is told beside it
            error.add_note(f"then, releasing the sequence's buffers: {type(failure).__name__}: {str(failure)[:300]}")


#: A step between the call sequences of two runs on the same drivers (history the later run's verdict may need).
NEXT_RUN = "next_run"
#: The first step of a sequence of calls a test made on the driver alone (`harness.judging.direct_calls`),
#: up to the next `NEXT_RUN`: a replay makes them on both drivers for the state they leave, and judges
#: none of them (the test judged them by its own checks, which may accept more than lockstep does).
ALONE = "alone"


def last_run_start(steps: Sequence[Step]) -> int:
    """Where the last run of ``steps`` begins: just after its last `NEXT_RUN` step (0 if none)."""
    return max((position + 1 for position, step in enumerate(steps) if step.method == NEXT_RUN), default=0)


def replay(steps: Sequence[Step], driver: Device, reference: Device) -> Lockstep:
    """Run recorded steps again on both drivers; raises the same ConformanceError while the
    driver still has the bug."""
    step = Lockstep(driver, reference)
    models: dict[str, Pair | None] = {}
    refused: set[str] = set()  # buffers not served in this replay
    alone: _Alone | None = None  # in a sequence of calls made on the driver alone: its handles

    def served_when_recorded(names: Sequence[str]) -> None:
        # A recorded sequence uses only buffers the driver served when it was recorded; one it
        # refuses now, after as much history or more, is a leak (DOM-ALLOC-3), not a missing name.
        for name in names:
            if name in refused and name not in step.buffers:
                step.served_again(name, "when this call sequence was recorded")

    for recorded in steps:
        method, args = recorded.method, recorded.args
        if method == NEXT_RUN:  # the sequence of the next run: its models are named from model-1 again
            models.clear()
            alone = None
        elif method == ALONE or alone is not None:
            alone = alone or _Alone(driver, reference)
            step.steps.append(recorded)  # counted as a call, as the verdict's steps count those before it
            alone.make(recorded)
        elif method == "prepare":
            models[f"model-{len(models) + 1}"] = step.prepare(*args)  # prepare() numbers models the same way
        elif method == "allocate":
            name, desc, model_names, input_roles, output_roles, requirement = args
            served = step.allocate(name, desc, [models[m] for m in model_names], input_roles, output_roles, requirement)
            (refused.discard if served is not None else refused.add)(name)
        elif method == "execute":
            model_name, scenario, requirement, *refusal_rules = args
            served_when_recorded([pool.buffer for pool in scenario.request_pools if isinstance(pool, TokenRef)])
            step.execute(models[model_name], scenario, requirement, *refusal_rules)
        elif method == "served_again":
            if args[0] not in refused and args[0] not in step.buffers:  # it judges the allocation just before it
                raise ValueError(f"a served_again step for {args[0]!r}, which this sequence never allocated")
            step.served_again(*args)
        else:
            if method in ("copy_from", "copy_to", "release"):
                served_when_recorded(args[:1])
            getattr(step, method)(*args)
    return step


class _Alone:
    """The calls of an `ALONE` sequence, made again on both drivers and judged on neither: each
    side keeps its own prepared models and buffers by name, and what one side refused is absent
    from that side's calls after it."""

    def __init__(self, driver: Device, reference: Device) -> None:
        self._sides = (CallsAlone(driver), CallsAlone(reference))

    def make(self, recorded: Step) -> None:
        for side in self._sides:
            try:
                side.make(recorded.method, recorded.args)
            except DriverError:
                pass  # the test judged the answer by its own checks; the replay needs only the state it left


@dataclass
class CallsAlone:
    """The calls of an `ALONE` sequence on one device, from their steps: what a test asking the
    driver alone makes (`harness.judging.direct_calls`), and what a replay makes again.  Prepared
    models are named model-1, model-2, ... in order (None where refused), buffers by their steps'
    names; a call on a buffer this device never served is not made."""

    device: Device
    models: list[Any] = field(default_factory=list)
    buffers: dict[str, Any] = field(default_factory=dict)

    def make(self, method: str, args: tuple) -> Any:
        """The call's answer: a prepared model, a (buffer, token) pair, the bytes a copy_to wrote, or None."""
        if method == "prepare":
            self.models.append(None)  # numbered as `Lockstep.prepare` numbers them, refused or not
            self.models[-1] = self.device.prepare_model(args[0].build_model())
            return self.models[-1]
        if method == "allocate":
            name, desc, model_names, input_roles, output_roles, _ = args
            prepared = [self.models[int(model.removeprefix("model-")) - 1] for model in model_names]
            if None in prepared:
                return None
            allocated = self.device.allocate(desc, prepared, list(input_roles), list(output_roles))
            self.buffers[name] = allocated[0]
            if isinstance(allocated, tuple) and len(allocated) == 2 and is_token(allocated[1]):
                allocated = (allocated[0], int(allocated[1]))  # the same token as an int, as requests carry it
            return allocated
        buffer = self.buffers.get(args[0]) if method in ("release", "copy_from", "copy_to") else None
        if buffer is None:  # the ALONE mark itself, or a buffer this device never served
            return None
        if method == "release":
            del self.buffers[args[0]]
            buffer.release()
        elif method == "copy_from":
            with make_memory(args[1]) as memory:
                buffer.copy_from(memory, args[2])
                reuse_after_copy(memory, args[1])
        elif method == "copy_to":
            with make_memory(MemorySpec(args[2], bytes(args[1]))) as memory:
                buffer.copy_to(memory)
                return memory.read()
        return None


#: What a client writes into its memory once a copy_from has returned: the copy is done by then,
#: so a buffer that still reads the memory (zero copy where SPEC asks for a copy) shows these bytes.
REUSED_BYTE = 0xA5


def reuse_after_copy(memory: Memory, spec: MemorySpec) -> None:
    """The client takes its memory back after a copy_from, as a staging memory is (DOM-COPY-1);
    a handle made unusable on purpose is left as it is."""
    if spec.defect is Defect.NONE and spec.size:
        memory.write(bytes([REUSED_BYTE]) * spec.size)


def _with_memory(spec: MemorySpec, use: Callable[[Any], Any]) -> _Result:
    memory = make_memory(spec)
    try:
        return _call(lambda: use(memory))
    finally:
        memory.close()

