"""DOM-CONC-1/2: concurrent readers agree; concurrent writers never crash nor block the caller."""

from __future__ import annotations

import concurrent.futures
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.hal import BufferDesc, BufferRole, DriverError
from harness.judging.oracle import execute_scenario
from harness.judging.scenario import MemorySpec, make_memory
from harness.strategies.domains import Flavor, TokenUse, identity_operand, nbytes, request, values_for
from harness.integration.skips import allocated_or_not_run
from harness.judging.direct_calls import DirectCalls
from harness.judging.verdict import violation

pytestmark = pytest.mark.usefixtures("memory_domains")

SHAPE = (16, 16)
CALL_DEADLINE_S = 10.0


def _setup(calls: DirectCalls, flavor: Flavor):
    model = flavor.model(SHAPE)
    prepared = calls.prepare(model)
    buffer, token = allocated_or_not_run(calls, BufferDesc(), [prepared], [BufferRole(0, 0)], [BufferRole(0, 0)])
    calls.copy_from(buffer, MemorySpec("ashmem", values_for(flavor.type, SHAPE, 5).tobytes()))
    return model, prepared, buffer, token


def _read_by_copy(buffer, flavor: Flavor) -> bytes:
    memory = make_memory(MemorySpec("ashmem", b"\0" * nbytes(flavor.type, SHAPE)))
    try:
        buffer.copy_to(memory)
        return memory.read()
    finally:
        memory.close()


def _read_or_error(buffer, flavor: Flavor) -> bytes | str:
    """The buffer's bytes by copy_to, or the error the driver answered (DOM-CONC-1 judges both)."""
    try:
        return _read_by_copy(buffer, flavor)
    except DriverError as error:
        return str(error)


def _bounded(pool, jobs):
    futures = [pool.submit(job) for job in jobs]
    done, pending = concurrent.futures.wait(futures, timeout=CALL_DEADLINE_S * 3)
    if pending:
        raise violation("DOM-CONC-2", f"{len(pending)} of {len(futures)} concurrent calls did not return "
                                      f"within {CALL_DEADLINE_S * 3:.0f} s")
    return [f.result() for f in futures]


@pytest.mark.requirement("DOM-CONC-1")
@pytest.mark.parametrize("threads", [2, 8])
def test_concurrent_readers_see_the_same_bytes(driver, flavor, threads) -> None:
    # The threads only read: what the driver holds after them is as the calls left it.
    calls = DirectCalls(driver)
    model, prepared, buffer, token = _setup(calls, flavor)
    expected = values_for(flavor.type, SHAPE, 5).tobytes()
    reading = request(model, [TokenUse("b"), identity_operand(flavor, SHAPE)], [nbytes(flavor.type, SHAPE)], label="read")
    gate = threading.Barrier(threads)

    def read(i: int):
        gate.wait(timeout=CALL_DEADLINE_S)
        if i % 2:
            return _read_or_error(buffer, flavor)
        outcome = execute_scenario(prepared, reading, {"b": token})
        if outcome.shape_problem:
            return outcome.shape_problem
        return outcome.outputs[0] if outcome.ok else outcome.summary()

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        results = _bounded(pool, [lambda i=i: read(i) for i in range(threads * 4)])
    wrong = [r for r in results if r != expected]
    calls.release(buffer)
    if wrong:
        raise violation("DOM-CONC-1", f"{len(wrong)} of {len(results)} concurrent reads returned other bytes or "
                                      f"failed, e.g. {wrong[0]!r:.200}")


@pytest.mark.requirement("DOM-CONC-2")
@given(schedule=st.lists(st.sampled_from(["copy_from", "copy_to", "write", "read", "release"]), min_size=4, max_size=24))
def test_concurrent_writes_and_reads_return(driver, reference, flavor, schedule) -> None:
    # The threads' writes and releases are not kept (their order on the driver is not known).
    calls = DirectCalls(driver)
    model, prepared, buffer, token = _setup(calls, flavor)
    type = flavor.type
    writing = request(model, [values_for(type, SHAPE, 1), values_for(type, SHAPE, 2)], [TokenUse("b")], label="write")
    reading = request(model, [TokenUse("b"), values_for(type, SHAPE, 3)], [nbytes(type, SHAPE)], label="read")
    source = MemorySpec("ashmem", values_for(type, SHAPE, 4).tobytes())

    def call(kind: str) -> str:
        try:
            match kind:
                case "copy_from":
                    memory = make_memory(source)
                    try:
                        buffer.copy_from(memory, ())
                    finally:
                        memory.close()
                case "copy_to":
                    _read_by_copy(buffer, flavor)
                case "write" | "read":
                    outcome = execute_scenario(prepared, writing if kind == "write" else reading, {"b": token})
                    return outcome.status.name
                case "release":
                    buffer.release()
        except DriverError as error:
            return error.status.name
        return "NONE"

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        _bounded(pool, [lambda k=kind: call(k) for kind in schedule])
    if "release" not in schedule:  # a buffer left live would count against a driver's memory limit (DOM-ALLOC-3)
        calls.release(buffer)
    # The driver keeps serving: a fresh buffer works exactly as on the reference.
    _, fresh_prepared, fresh, fresh_token = _setup(calls, flavor)
    if calls.copy_to(fresh, nbytes(type, SHAPE)) != values_for(type, SHAPE, 5).tobytes():
        raise violation("DOM-CONC-2", "after concurrent use the driver no longer serves a simple copy correctly")
    calls.release(fresh)


@pytest.mark.requirement("DOM-CONC-1", "DOM-CONC-2")
@pytest.mark.parametrize("readers", [2, 4])
def test_one_buffer_as_both_inputs_while_it_is_written(driver, flavor, readers) -> None:
    """Readers use the same buffer as both inputs of an execution while a writer keeps copying
    into it: every call returns (a lock taken per argument deadlocks against the waiting writer).
    A read that meets a write may fail, and so may the write (DOM-CONC-2: each call returns with
    success or an error); afterwards the buffer, written once more alone, reads as it did before."""
    calls = DirectCalls(driver)
    model = flavor.model(SHAPE)
    prepared = calls.prepare(model)
    buffer, token = allocated_or_not_run(calls, BufferDesc(), [prepared], [BufferRole(0, 0), BufferRole(0, 1)], [])
    source = MemorySpec("ashmem", values_for(flavor.type, SHAPE, 5).tobytes())
    calls.copy_from(buffer, source)
    both = request(model, [TokenUse("b"), TokenUse("b")], [nbytes(flavor.type, SHAPE)], label="op(b, b)")
    expected = execute_scenario(prepared, both, {"b": token})

    def read(_: int) -> str:
        outcome = execute_scenario(prepared, both, {"b": token})
        return outcome.status.name

    def write(_: int) -> str:
        copy = make_memory(source)
        try:
            buffer.copy_from(copy, ())
        except DriverError as error:
            return error.status.name
        finally:
            copy.close()
        return "NONE"

    schedule = [read if i % (readers + 1) else write for i in range((readers + 1) * 6)]
    with concurrent.futures.ThreadPoolExecutor(readers + 1) as pool:
        _bounded(pool, [lambda c=c, i=i: c(i) for i, c in enumerate(schedule)])
    # A write that failed left the buffer uninitialized (DOM-STATE-1); which call came last is not known.
    try:
        calls.copy_from(buffer, source, requirement="DOM-CONC-2")
    except DriverError as error:
        raise violation("DOM-CONC-2", f"after the concurrent reads and writes, a copy_from alone failed: {error}") from None
    after = execute_scenario(prepared, both, {"b": token})
    calls.release(buffer)
    if not expected.ok:
        raise violation("DOM-CONC-1", f"the same buffer as both inputs failed even alone: {expected.summary()}")
    if not after.ok or after.outputs != expected.outputs:
        raise violation("DOM-CONC-2", f"after the concurrent reads and writes, the buffer as both inputs gives "
                                      f"{after.summary()}; before them: {expected.summary()}")


@pytest.mark.requirement("DOM-CONC-1")
@pytest.mark.parametrize("buffers", [2, 3])
def test_concurrent_reads_of_different_buffers(driver, flavor, buffers) -> None:
    """Threads copy several buffers out at once: each read gets its own buffer's bytes."""
    # The threads only read.
    calls = DirectCalls(driver)
    prepared = calls.prepare(flavor.model(SHAPE))
    held = []
    try:
        for i in range(buffers):
            buffer, _ = allocated_or_not_run(calls, BufferDesc(), [prepared], [BufferRole(0, 0)], [])
            held.append(buffer)
            calls.copy_from(buffer, MemorySpec("ashmem", values_for(flavor.type, SHAPE, 10 + i).tobytes()))
        jobs = [i % buffers for i in range(buffers * 12)]
        with concurrent.futures.ThreadPoolExecutor(buffers * 2) as pool:
            results = _bounded(pool, [lambda i=i: _read_or_error(held[i], flavor) for i in jobs])
        failed = [got for got in results if isinstance(got, str)]
        if failed:
            raise violation("DOM-CONC-1", f"{len(failed)} of {len(jobs)} concurrent copies of {buffers} different "
                                          f"buffers failed, e.g. {failed[0]}")
        wrong = [i for i, got in zip(jobs, results) if got != values_for(flavor.type, SHAPE, 10 + i).tobytes()]
        if wrong:
            raise violation("DOM-CONC-1", f"{len(wrong)} of {len(jobs)} concurrent copies of {buffers} different "
                                          f"buffers returned another buffer's bytes (buffers {sorted(set(wrong))})")
    finally:
        for buffer in held:
            calls.release(buffer)
