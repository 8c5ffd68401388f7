"""DOM-CONC-2 and DOM-ALLOC-3 under threads: every Driver API entry point called from several
threads at once, allocation and buffer copies included (plans: `harness.strategies.concurrency`).

What may differ from a run alone is only what DOM-CONC-2 leaves open: a call that meets another
may fail, and a buffer written at once by several may hold anything.  What may not: a call that
never returns, two buffers live at once under one token, a successful execution of ordinary
memories with other outputs than alone, and a driver that no longer serves a call once the
threads are done.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable

import pytest
from hypothesis import given, note

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, DriverError, ErrorStatus
from harness.integration.skips import allocated_or_not_run
from harness.judging.direct_calls import DirectCalls
from harness.judging.oracle import checking, execute_scenario
from harness.judging.scenario import MemorySpec, make_memory
from harness.judging.verdict import violation
from harness.strategies.concurrency import CallPlan, call_plans
from harness.strategies.domains import Flavor, TokenUse, nbytes, request, values_for

pytestmark = pytest.mark.usefixtures("memory_domains")

SHAPE = (4, 4)
#: Each call's bound (DOM-CONC-2: within a bounded time); the plan's is this times its calls per thread.
CALL_DEADLINE_S = 10.0


def _outcome(call: Callable[[], object]) -> object:
    """What a call gave: its value, or the status of the error it raised (DOM-CONC-2 allows one)."""
    try:
        return call()
    except DriverError as error:
        return error.status


class _Plan:
    """The objects one plan's calls share, made before the threads start, and what they gave."""

    def __init__(self, driver, calls: DirectCalls, flavor: Flavor, plan: CallPlan) -> None:
        self.driver, self.flavor = driver, flavor
        self.model = flavor.model(SHAPE)
        self.hal_model = self.model.build_model()
        self.prepared = calls.prepare(self.model)
        # one buffer every copy and read names, never released during the plan
        self.shared, self.shared_token = allocated_or_not_run(calls, BufferDesc(), [self.prepared], [BufferRole(0, 0)],
                                                              [BufferRole(0, 0)])
        calls.copy_from(self.shared, MemorySpec("ashmem", values_for(flavor.type, SHAPE, 5).tobytes()))
        # one buffer per release in the plan, each released once by it: as many as the driver serves
        # (DOM-ALLOC-3 lets it refuse past its limits, and a release with none left releases nothing)
        self.doomed: list[object] = []
        for _ in range(plan.count("release")):
            doomed = _outcome(lambda: driver.allocate(BufferDesc(), [self.prepared], [BufferRole(0, 0)], []))
            if doomed == ErrorStatus.GENERAL_FAILURE:
                note(f"{len(self.doomed)} buffers to release allocated before the driver refused more")
                break
            if not isinstance(doomed, tuple):
                raise violation("DOM-ALLOC-3", f"a valid allocation was refused with {doomed!r}, not GENERAL_FAILURE")
            self.doomed.append(doomed[0])
        self.plain = request(self.model, [values_for(flavor.type, SHAPE, 1), values_for(flavor.type, SHAPE, 2)],
                             [nbytes(flavor.type, SHAPE)], label="ordinary memories")
        with checking("POOL-2"):  # made alone: a crash here is no concurrency's
            self.supported = driver.get_supported_operations(self.hal_model)
            self.expected = execute_scenario(self.prepared, self.plain)
        self.allocated: list[tuple[object, int]] = []
        self._lock = threading.Lock()
        self._doomed_next = 0

    def call(self, entry_point: str) -> object:
        match entry_point:
            case "get_supported_operations":
                return self.driver.get_supported_operations(self.hal_model)
            case "prepare_model":
                return _outcome(lambda: self.driver.prepare_model(self.hal_model))
            case "allocate":
                allocated = _outcome(lambda: self.driver.allocate(BufferDesc(), [self.prepared], [BufferRole(0, 0)],
                                                                  [BufferRole(0, 0)]))
                if isinstance(allocated, tuple):
                    with self._lock:
                        self.allocated.append(allocated)
                return allocated
            case "execute":
                return execute_scenario(self.prepared, self.plain)
            case "copy_from":
                return _outcome(lambda: self.copy_from(self.shared, 7))
            case "copy_to":
                return _outcome(lambda: self.copy_to(self.shared))
            case "release":
                with self._lock:
                    if self._doomed_next == len(self.doomed):
                        return "none left to release"
                    buffer = self.doomed[self._doomed_next]
                    self._doomed_next += 1
                return _outcome(buffer.release)
        raise ValueError(f"no entry point {entry_point!r}")

    def release_all(self) -> None:
        """Every buffer the plan holds, released (a failed release is no concern of this test's)."""
        for buffer in [buffer for buffer, _ in self.allocated] + [self.shared] + self.doomed[self._doomed_next:]:
            _outcome(buffer.release)

    def copy_from(self, buffer, seed: int) -> None:
        memory = make_memory(MemorySpec("ashmem", values_for(self.flavor.type, SHAPE, seed).tobytes()))
        try:
            buffer.copy_from(memory, ())
        finally:
            memory.close()

    def copy_to(self, buffer) -> bytes:
        memory = make_memory(MemorySpec("ashmem", b"\0" * nbytes(self.flavor.type, SHAPE)))
        try:
            buffer.copy_to(memory)
            return memory.read()
        finally:
            memory.close()


def _run(plan: CallPlan, shared: _Plan) -> list[object]:
    """Every call of the plan on its threads, all started at once; a violation of DOM-CONC-2 if
    any has not returned within its bound."""
    gate = threading.Barrier(plan.threads)

    def first(entry_point: str) -> object:  # the first call of each thread waits for the others
        gate.wait(timeout=CALL_DEADLINE_S)
        return shared.call(entry_point)

    jobs = [(first if i < plan.threads else shared.call, point) for i, point in enumerate(plan.calls)]
    bound = CALL_DEADLINE_S * (1 + len(plan.calls) / plan.threads)
    with checking("DOM-CONC-2"), concurrent.futures.ThreadPoolExecutor(plan.threads) as pool:
        futures = [pool.submit(job, point) for job, point in jobs]
        done, pending = concurrent.futures.wait(futures, timeout=bound)
        if pending:
            raise violation("DOM-CONC-2", f"{len(pending)} of {len(futures)} calls made from {plan.threads} threads "
                                          f"at once did not return within {bound:.0f} s")
        return [future.result() for future in futures]


def _check_tokens(shared: _Plan) -> None:
    """DOM-ALLOC-3: the buffers the plan allocated are all live; their tokens are positive and
    none is another's, or the shared buffer's."""
    tokens = [token for _, token in shared.allocated]
    bad = [token for token in tokens if not isinstance(token, int) or token <= 0]
    if bad:
        raise violation("DOM-ALLOC-3", f"allocations made from several threads at once gave tokens {bad[:5]} (tokens are "
                                       f"positive integers)")
    seen = {shared.shared_token: "the buffer allocated before the threads started"}
    for number, token in enumerate(tokens, 1):
        if token in seen:
            raise violation("DOM-ALLOC-3", f"allocation {number} of {len(tokens)} made from several threads at once "
                                           f"got token {token}, which {seen[token]} holds, live: no two live buffers "
                                           f"share a token")
        seen[token] = f"allocation {number} of them"


def _check_alone(shared: _Plan) -> None:
    """Once the threads are done, each buffer the plan allocated holds what is written into it
    alone, as on a driver that never saw threads (DOM-CONC-2: it goes on serving calls)."""
    buffers = [buffer for buffer, _ in shared.allocated]
    for number, buffer in enumerate(buffers):
        answer = _outcome(lambda: shared.copy_from(buffer, 20 + number))
        if answer is not None:
            raise violation("DOM-CONC-2", f"after calls from several threads, a copy_from alone into buffer {number + 1} "
                                          f"of the {len(buffers)} they allocated failed: {answer!r}")
    for number, buffer in enumerate(buffers):
        got = _outcome(lambda: shared.copy_to(buffer))
        if got != values_for(shared.flavor.type, SHAPE, 20 + number).tobytes():
            raise violation("DOM-CONC-2", f"after calls from several threads, buffer {number + 1} of the "
                                          f"{len(buffers)} they allocated reads other bytes than were copied into it "
                                          f"alone ({got!r:.60}): two buffers share storage, or a copy lost its way")


@pytest.mark.requirement("DOM-CONC-2", "DOM-ALLOC-3", "POOL-2")
@given(plan=call_plans())
def test_every_entry_point_from_several_threads(driver, flavor, plan) -> None:
    shared = _Plan(driver, DirectCalls(driver), flavor, plan)
    try:
        results = _run(plan, shared)
        _check_tokens(shared)
        for point, result in zip(plan.calls, results):
            if point == "get_supported_operations" and result != shared.supported:
                raise violation("DOM-CONC-2", f"get_supported_operations answered {result!r} from several threads "
                                              f"at once and {shared.supported!r} alone")
            if point == "execute" and result.ok and shared.expected.ok and result.outputs != shared.expected.outputs:
                raise violation("POOL-2", "an execution of ordinary memories made while other threads called the driver "
                                          f"succeeded with other outputs than alone: {result.summary()}; alone: "
                                          f"{shared.expected.summary()}")
        refused = sum(1 for point, result in zip(plan.calls, results) if point == "allocate" and
                      result == ErrorStatus.GENERAL_FAILURE)
        if refused:
            note(f"{refused} allocations refused with GENERAL_FAILURE (DOM-ALLOC-3 allows it)")
        _check_alone(shared)
    except ConformanceError:  # the driver still answers: what the test holds is given back before the verdict
        shared.release_all()
        raise
    shared.release_all()
