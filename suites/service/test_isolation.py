"""SPEC §7 (SVC): what the harness itself guarantees, proved at the start of every run.

Canary drivers (`harness.service.canaries`) fault on purpose in their own driver services:
a crash must be reported with the call and the exit reason and the next call must get a fresh
service (SVC-1); a hang must be cut off at the deadline with the service's stacks (SVC-2).  A
correct driver (the reference) in a service must receive memory as descriptors, and survive
a client that shrinks a memory after handing it over (SVC-3).  These do not depend on the
driver under test: they certify the harness that certifies it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from harness.judging.builders import binary_model, pack_request
from harness.api.errors import DriverCrash, DriverHang
from harness.api.hal import DriverError, ErrorStatus
from harness.api.memory import Memory
from harness.service import DriverService
from harness.service.canaries import EXIT_CODE

CANARIES = "harness.service.canaries"
HANG_DEADLINE_S = 1.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _add(elements: int, memory_factory=None):
    model = binary_model(dims=(elements,))
    values = np.arange(elements, dtype=np.float32)
    options = {"memory_factory": memory_factory} if memory_factory else {}
    request, _, out = pack_request(model, [values, values], **options)
    return model, request, out, values + values


@pytest.fixture
def canary(request: pytest.FixtureRequest):
    factory, timeout = request.param
    service = DriverService(f"{CANARIES}:{factory}", timeout=timeout)
    yield service
    service.close()


@pytest.mark.requirement("SVC-1")
@pytest.mark.parametrize("canary, how", [(("segfaulting", 10.0), "killed by signal SIGSEGV"),
                                         (("exiting", 10.0), f"exited with code {EXIT_CODE}")],
                         ids=["segfault", "exit"], indirect=["canary"])
def test_a_crash_is_reported_and_the_next_call_gets_a_fresh_service(canary: DriverService, how: str) -> None:
    model, request, _, _ = _add(4)
    prepared = canary.device.prepare_model(model)
    crashed_pid, generation = canary.pid, canary.generation
    with pytest.raises(DriverCrash) as crash:
        prepared.execute(request)
    report = str(crash.value)
    assert "PreparedModel.execute(request of 2 inputs" in report, f"[SVC-1] the report does not name the call: {report}"
    assert how in report, f"[SVC-1] the report does not give the exit reason {how!r}: {report}"
    assert canary.device.get_supported_operations(model) == [True], "[SVC-1] the next call got no answer"
    assert canary.generation == generation + 1 and canary.pid != crashed_pid, "[SVC-1] the service was not replaced"
    assert crashed_pid is not None and not _alive(crashed_pid), "[SVC-1] the crashed service process is still there"


@pytest.mark.requirement("SVC-2")
@pytest.mark.parametrize("canary", [("hanging", HANG_DEADLINE_S)], ids=["hang"], indirect=True)
def test_a_hang_is_cut_off_at_the_deadline_with_the_stacks(canary: DriverService) -> None:
    model, request, _, _ = _add(4)
    prepared = canary.device.prepare_model(model)
    hung_pid = canary.pid
    with pytest.raises(DriverHang) as hang:
        prepared.execute(request)
    report = str(hang.value)
    assert f"did not return within {HANG_DEADLINE_S:g} s" in report, f"[SVC-2] no deadline in the report: {report}"
    assert "canaries.py" in report and "in execute" in report, f"[SVC-2] the hung thread's stack is missing: {report}"
    assert hung_pid is not None and not _alive(hung_pid), "[SVC-2] the hung service process was not killed"
    assert canary.device.get_supported_operations(model) == [True], "[SVC-2] the replaced service does not answer"


@pytest.fixture
def reference_service():
    service = DriverService("reference", timeout=30)
    yield service
    service.close()


@pytest.mark.requirement("SVC-3")
def test_memory_crosses_as_descriptors(reference_service: DriverService) -> None:
    elements = (16 << 20) // 4
    model, request, out, expected = _add(elements)
    prepared = reference_service.device.prepare_model(model)
    before = reference_service.connection.bytes_sent
    prepared.execute(request)
    sent = reference_service.connection.bytes_sent - before
    assert sent < 4096, f"[SVC-3] an execute over {3 * elements * 4} bytes of pools sent {sent} bytes to the service"
    assert np.array_equal(np.frombuffer(out.read(), np.float32), expected)


def _unsealable(size: int) -> Memory:
    """A memfd without MFD_ALLOW_SEALING: nothing can stop the client from shrinking it."""
    fd = os.memfd_create("shrinkable", os.MFD_CLOEXEC)
    os.ftruncate(fd, size)
    return Memory("ashmem", fd, 0, size)


@pytest.mark.requirement("SVC-3")
def test_a_memory_shrunk_after_handover_does_not_crash_a_correct_driver(reference_service: DriverService) -> None:
    model, request, _, _ = _add(1024, _unsealable)
    prepared = reference_service.device.prepare_model(model)
    prepared.execute(request)
    os.ftruncate(request.pools[0].fd, 16)  # the client shrinks what it handed over
    try:
        prepared.execute(request)
        status = ErrorStatus.NONE
    except DriverError as error:
        status = error.status
    assert status != ErrorStatus.NONE, "[SVC-3] an execute over a pool shrunk below its regions succeeded"
    assert reference_service.generation == 1 and reference_service.running, "[SVC-3] the service had to be replaced"
