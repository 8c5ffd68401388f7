"""Reference driver, SPEC §2 memory pools: one test per rule with the status it expects."""

from __future__ import annotations

import os

import numpy as np
import pytest

from harness.judging.builders import ModelBuilder, binary_model, pack_request
from harness.api.hal import DataLocation, ErrorStatus, OperandType, OperationType, Request, RequestArgument
from harness.api.memory import (
    Memory,
    create_ashmem,
    create_hardware_buffer,
    create_hardware_buffer_blob,
    create_mmap_fd,
)
from harness.judging.oracle import expect_status

F32 = OperandType.TENSOR_FLOAT32
INVALID, FAILURE = ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE


def add_constant_model(value: np.ndarray, *, by_reference: bool, pool_factory=create_ashmem):
    b = ModelBuilder()
    x = b.input(F32, value.shape)
    c = b.constant(F32, value, by_reference=by_reference)
    b.operation(OperationType.ADD, [x, c, b.scalar(0)], F32, value.shape)
    return b.build(pool_factory)


def run_single_output(device, model, inputs):
    prepared = device.prepare_model(model)
    request, _, out = pack_request(model, inputs)
    prepared.execute(request)
    return out.read()


@pytest.mark.requirement("POOL-1")
@pytest.mark.parametrize("pool_factory", [create_ashmem, lambda n: create_mmap_fd(n, 8), create_hardware_buffer_blob])
def test_constant_copy_and_reference_agree(device, pool_factory) -> None:
    value = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    by_copy = run_single_output(device, add_constant_model(value, by_reference=False), [x])
    by_reference = run_single_output(device, add_constant_model(value, by_reference=True, pool_factory=pool_factory), [x])
    assert by_copy == by_reference == (x + value).tobytes()


@pytest.mark.requirement("POOL-2")
def test_offsets_padding_honoured_and_bytes_outside_untouched(device) -> None:
    model = binary_model(dims=(3,))
    prepared = device.prepare_model(model)
    a, b = np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32)
    pool = create_ashmem(256)
    pool.fill(0xA5)
    pool.write(a.tobytes(), 20)
    pool.write(b.tobytes(), 100)
    request = Request(
        (RequestArgument(False, DataLocation(0, 20, 12, 4)), RequestArgument(False, DataLocation(0, 100, 12, 8))),
        (RequestArgument(False, DataLocation(0, 160, 12, 16)),),
        (pool,),
    )
    prepared.execute(request)
    after = pool.map(writable=False)
    assert after[160:172].view(np.float32).tolist() == [11, 22, 33]
    outside = np.concatenate([after[:20], after[32:100], after[112:160], after[172:]])
    untouched = np.concatenate([np.full(20, 0xA5), np.full(68, 0xA5), np.full(48, 0xA5), np.full(84, 0xA5)])
    assert np.array_equal(outside, untouched)
    assert after[20:32].tobytes() == a.tobytes()


@pytest.mark.requirement("POOL-3")
@pytest.mark.parametrize(
    "make", [create_ashmem, lambda n: create_mmap_fd(n, 4100), create_hardware_buffer_blob, lambda n: create_hardware_buffer(n // 4, 1)]
)
def test_every_memory_kind_serves_execution(device, make) -> None:
    model = binary_model(dims=(4,))
    request, _, out = pack_request(model, [np.ones(4, np.float32), np.full(4, 2, np.float32)], memory_factory=make)
    device.prepare_model(model).execute(request)
    assert out.read()[:16] == np.full(4, 3, np.float32).tobytes()


@pytest.mark.requirement("POOL-3")
def test_non_blob_hardware_buffer_is_never_a_constant_pool(device) -> None:
    model = add_constant_model(np.ones(4, np.float32), by_reference=True, pool_factory=lambda n: create_hardware_buffer(n // 4, 1))
    assert device.get_supported_operations(model) == [False]
    with expect_status(INVALID, FAILURE, rule="POOL-3"):
        device.prepare_model(model)


@pytest.mark.requirement("POOL-4")
def test_unusable_constant_pool_fails_preparation(device) -> None:
    model = add_constant_model(np.ones(4, np.float32), by_reference=True)
    model.pools[0].close()
    with expect_status(FAILURE, rule="POOL-4"):
        device.prepare_model(model)


@pytest.mark.requirement("POOL-4")
def test_unusable_request_pool_fails_execution(device) -> None:
    model = binary_model(dims=(2,))
    request, in_memory, _ = pack_request(model, [np.ones(2, np.float32)] * 2)
    in_memory.close()
    with expect_status(FAILURE, rule="POOL-4"):
        device.prepare_model(model).execute(request)


def _closed_memory(size: int) -> Memory:
    memory = create_ashmem(size)
    memory.close()
    return memory


def _pipe_memory(size: int) -> Memory:
    read_end, write_end = os.pipe()
    os.close(write_end)
    return Memory("ashmem", read_end, 0, size)


def _short_memory(size: int) -> Memory:
    memory = create_ashmem(size)
    memory.resize(size // 2)
    memory.size = size
    return memory


def _unknown_kind(size: int) -> Memory:
    memory = create_ashmem(size)
    memory.kind = "ion"
    return memory


@pytest.mark.requirement("POOL-5")
@pytest.mark.parametrize(
    "broken, where, statuses",
    [
        (_closed_memory, "input", (FAILURE,)),
        (_pipe_memory, "input", (FAILURE,)),
        (_short_memory, "input", (FAILURE,)),
        (_unknown_kind, "input", (INVALID,)),
        (_closed_memory, "output", (FAILURE,)),
        (_short_memory, "output", (FAILURE,)),
        (lambda n: create_ashmem(n).read_only(), "output", (FAILURE,)),
    ],
    ids=["closed-in", "pipe-in", "short-in", "unknown-kind", "closed-out", "short-out", "read-only-out"],
)
def test_invalid_handles_are_rejected(device, broken, where, statuses) -> None:
    model = binary_model(dims=(2,))
    prepared = device.prepare_model(model)
    request, in_memory, out_memory = pack_request(model, [np.ones(2, np.float32)] * 2)
    pools = list(request.pools)
    pools[0 if where == "input" else 1] = broken(pools[0 if where == "input" else 1].size)
    with expect_status(*statuses, rule="POOL-5"):
        prepared.execute(Request(request.inputs, request.outputs, tuple(pools)))


@pytest.mark.requirement("POOL-5", "REQ-2")
def test_region_out_of_range_is_invalid(device) -> None:
    model = binary_model(dims=(2,))
    request, in_memory, out_memory = pack_request(model, [np.ones(2, np.float32)] * 2)
    bad = RequestArgument(False, DataLocation(1, out_memory.size - 4, 8))
    with expect_status(INVALID, rule="POOL-5"):
        device.prepare_model(model).execute(Request(request.inputs, (bad,), request.pools))
