"""SVC-3: a client that changes a memory after handing it over must not crash a correct driver.

The reference seals the memfds it maps against shrinking, and copies (pread/pwrite)
memory it cannot seal; these tests attack both paths through the service and require
that every call returns and the service never has to be replaced.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from harness.judging.builders import ModelBuilder, binary_model, pack_request
from harness.api.hal import DriverError, OperandType, OperationType, Request
from harness.api.memory import Memory, create_ashmem

F32 = OperandType.TENSOR_FLOAT32


def unsealable(size: int) -> Memory:
    """A memfd created without MFD_ALLOW_SEALING: the driver cannot stop it from shrinking."""
    fd = os.memfd_create("unsealable", os.MFD_CLOEXEC)
    os.ftruncate(fd, size)
    return Memory("ashmem", fd, 0, size)


def status_of(call) -> str:
    try:
        call()
    except DriverError as error:
        return error.status.name
    return "NONE"


@pytest.mark.requirement("SVC-3")
@pytest.mark.parametrize("make", [create_ashmem, unsealable], ids=["sealable", "unsealable"])
def test_shrinking_a_request_pool_after_handover(service, make) -> None:
    model = binary_model(dims=(1024,))
    prepared = service.device.prepare_model(model)
    ones = np.ones(1024, np.float32)
    request, _, out = pack_request(model, [ones, ones], memory_factory=make)
    prepared.execute(request)
    pool = request.pools[0]
    try:
        os.ftruncate(pool.fd, 16)  # the attack: shrink what the driver was given
        shrunk = True
    except PermissionError:  # sealed by the driver: the attack is impossible
        shrunk = False
    outcome = status_of(lambda: prepared.execute(request))
    assert outcome == ("GENERAL_FAILURE" if shrunk else "NONE")
    assert shrunk == (make is unsealable)
    assert service.generation == 1 and service.running


@pytest.mark.requirement("SVC-3")
def test_shrinking_and_growing_while_executions_run(service) -> None:
    model = binary_model(dims=(1 << 16,))
    prepared = service.device.prepare_model(model)
    values = np.ones(1 << 16, np.float32)
    request, _, _ = pack_request(model, [values, values], memory_factory=unsealable)
    target = request.pools[1]
    stop = threading.Event()

    def attack() -> None:
        while not stop.is_set():
            os.ftruncate(target.fd, 100)
            os.ftruncate(target.fd, target.size)

    attacker = threading.Thread(target=attack)
    attacker.start()
    try:
        outcomes = {status_of(lambda: prepared.execute(request)) for _ in range(200)}
    finally:
        stop.set()
        attacker.join()
    assert outcomes <= {"NONE", "GENERAL_FAILURE"}
    assert service.generation == 1 and service.running  # never crashed, never replaced


@pytest.mark.requirement("SVC-3", "POOL-4")
def test_shrinking_a_constant_pool_after_preparation(service) -> None:
    b = ModelBuilder()
    x = b.input(F32, (256,))
    b.operation(OperationType.ADD, [x, b.constant(F32, np.full(256, 2, np.float32), by_reference=True), b.scalar(0)], F32, (256,))
    model = b.build(pool_factory=unsealable)
    prepared = service.device.prepare_model(model)
    os.ftruncate(model.pools[0].fd, 0)
    request, _, out = pack_request(model, [np.ones(256, np.float32)])
    prepared.execute(request)
    assert np.frombuffer(out.read(), np.float32).tolist() == [3.0] * 256  # constants were read at preparation
    assert service.generation == 1


@pytest.mark.requirement("SVC-3", "POOL-5")
def test_closing_its_end_or_passing_a_pipe(service) -> None:
    model = binary_model(dims=(4,))
    prepared = service.device.prepare_model(model)
    request, in_memory, out = pack_request(model, [np.ones(4, np.float32)] * 2)
    closer = threading.Thread(target=in_memory.close)
    outcome = status_of(lambda: (closer.start(), prepared.execute(request)))
    closer.join()
    assert outcome in ("NONE", "GENERAL_FAILURE")
    read_end, write_end = os.pipe()
    os.close(write_end)
    pipe = Memory("ashmem", read_end, 0, 32)
    assert status_of(lambda: prepared.execute(Request(request.inputs, request.outputs, (pipe, out)))) == "GENERAL_FAILURE"
    pipe.close()
    assert service.generation == 1 and service.running
