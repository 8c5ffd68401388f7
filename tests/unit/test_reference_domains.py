"""Reference driver, SPEC §3 memory domains: state, copies, roles, dynamic shapes, concurrency."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from harness.judging.builders import ModelBuilder, binary_model, pack_request
from harness.api.hal import (
    BufferDesc,
    BufferRole,
    DataLocation,
    DriverError,
    ErrorStatus,
    OperandType,
    OperationType,
    OutputShape,
    Request,
    RequestArgument,
)
from harness.api.memory import create_ashmem, create_hardware_buffer_blob, create_mmap_fd
from harness.judging.oracle import expect_status

F32, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32
INVALID, FAILURE = ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE


def f32_memory(values) -> object:
    array = np.asarray(values, np.float32)
    memory = create_ashmem(array.nbytes)
    memory.write(array.tobytes())
    return memory


def reshape_model():
    """out = RESHAPE(data, shape): the output shape depends on an input's values."""
    b = ModelBuilder()
    data = b.input(F32, (0,))
    shape = b.input(I32, (2,))
    b.operation(OperationType.RESHAPE, [data, shape], F32, (0, 0))
    return b.build()


def run_reshape_into(prepared, values, shape, pools_tail, output_arg):
    data = np.asarray(values, np.float32)
    plain, in_memory, _ = pack_request(prepared.model, [data, np.asarray(shape, np.int32)], output_capacity=[0])
    return prepared.execute(Request(plain.inputs, (output_arg,), (in_memory, *pools_tail)))


@pytest.mark.requirement("DOM-ALLOC-3")
def test_tokens_are_positive_and_unique_among_live_buffers(device) -> None:
    pm = device.prepare_model(binary_model())
    buffers = [device.allocate(BufferDesc(), [pm], [BufferRole(0, i % 2)], []) for i in range(20)]
    tokens = [t for _, t in buffers]
    assert all(t > 0 for t in tokens) and len(set(tokens)) == len(tokens)
    for b, _ in buffers[:10]:
        b.release()
    more = [device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])[1] for _ in range(10)]
    assert not set(more) & set(tokens[10:])


@pytest.mark.requirement("DOM-STATE-1", "DOM-STATE-2")
def test_state_follows_copies_and_executions(device) -> None:
    pm = device.prepare_model(binary_model(dims=(2,)))
    buffer, token = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    target = create_ashmem(8)
    with expect_status(FAILURE, rule="DOM-STATE-2"):
        buffer.copy_to(target)
    buffer.copy_from(f32_memory([1, 2]), ())
    buffer.copy_to(target)
    assert target.read() == np.float32([1, 2]).tobytes()
    with expect_status(INVALID, rule="DOM-COPY-1"):
        buffer.copy_from(f32_memory([1, 2, 3]), ())
    with expect_status(FAILURE, rule="DOM-STATE-1: a failed copyFrom leaves the buffer uninitialized"):
        buffer.copy_to(target)
    # An execution that writes the buffer initializes it.
    plain, in_memory, _ = pack_request(pm.model, [np.float32([1, 2]), np.float32([10, 20])])
    as_output = Request(plain.inputs, (RequestArgument(False, DataLocation(1, 0, 0)),), (in_memory, token))
    pm.execute(as_output)
    buffer.copy_to(target)
    assert target.read() == np.float32([11, 22]).tobytes()
    # A failed execution that writes it makes it uninitialized again.
    in_memory.close()
    with expect_status(FAILURE, rule="POOL-4"):
        pm.execute(as_output)
    with expect_status(FAILURE, rule="DOM-STATE-1: a failed execution leaves its output buffer uninitialized"):
        buffer.copy_to(target)


@pytest.mark.requirement("DOM-COPY-1")
@pytest.mark.parametrize("make", [create_ashmem, lambda n: create_mmap_fd(n, 4096 + 12), create_hardware_buffer_blob],
                         ids=["ashmem", "mmap_fd", "hardware_buffer_blob"])
def test_copies_work_with_every_required_memory_kind(device, make) -> None:
    pm = device.prepare_model(binary_model(dims=(3,)))
    buffer, _ = device.allocate(BufferDesc(), [pm], [BufferRole(0, 1)], [])
    source, target = make(12), make(12)
    source.write(np.float32([4, 5, 6]).tobytes())
    buffer.copy_from(source, (3,))
    buffer.copy_to(target)
    assert target.read() == source.read()


@pytest.mark.requirement("DOM-ROLE-3")
def test_same_token_as_two_inputs_is_fine(device) -> None:
    pm = device.prepare_model(binary_model(dims=(2,)))
    buffer, token = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0), BufferRole(0, 1)], [])
    buffer.copy_from(f32_memory([3, 4]), ())
    out = create_ashmem(8)
    token_arg = RequestArgument(False, DataLocation(0, 0, 0))
    pm.execute(Request((token_arg, token_arg), (RequestArgument(False, DataLocation(1, 0, 8)),), (token, out)))
    assert out.read() == np.float32([6, 8]).tobytes()


@pytest.mark.requirement("DOM-ROLE-3")
def test_one_buffer_in_two_pool_slots_as_input_and_output_is_refused(device) -> None:
    """The same token listed twice in ``pools`` is still one buffer: as output and input, INVALID_ARGUMENT."""
    pm = device.prepare_model(binary_model(dims=(2,)))
    buffer, token = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    buffer.copy_from(f32_memory([3, 4]), ())
    other = create_ashmem(8)
    other.write(np.float32([1, 1]).tobytes())
    first, second = RequestArgument(False, DataLocation(0, 0, 0)), RequestArgument(False, DataLocation(2, 0, 0))
    with expect_status(INVALID, rule="DOM-ROLE-3"):
        pm.execute(Request((first, RequestArgument(False, DataLocation(1, 0, 8))), (second,), (token, other, token)))


@pytest.mark.requirement("DOM-ROLE-4")
@pytest.mark.parametrize("location", [DataLocation(0, 4, 0), DataLocation(0, 0, 8), DataLocation(0, 0, 0, 4)],
                         ids=["offset", "length", "padding"])
def test_token_arguments_have_a_zero_location(device, location) -> None:
    pm = device.prepare_model(binary_model(dims=(2,)))
    buffer, token = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])
    buffer.copy_from(f32_memory([3, 4]), ())
    plain, in_memory, out_memory = pack_request(pm.model, [np.float32([0, 0])] * 2)
    bad = RequestArgument(False, location)
    with expect_status(INVALID, rule="DOM-ROLE-4"):
        pm.execute(Request((bad, RequestArgument(False, DataLocation(1, 8, 8))), plain.outputs, (token, in_memory, out_memory)))


@pytest.mark.requirement("DOM-DYN-1")
def test_dynamic_buffer_resizes_across_executions(device) -> None:
    producer = device.prepare_model(reshape_model())
    b = ModelBuilder()
    b.operation(OperationType.ADD, [b.input(F32, (0, 0)), b.input(F32, (0, 0)), b.scalar(0)], F32, (0, 0))
    consumer = device.prepare_model(b.build())
    buffer, token = device.allocate(BufferDesc(), [producer, consumer], [BufferRole(1, 0)], [BufferRole(0, 0)])
    token_out = RequestArgument(False, DataLocation(1, 0, 0))
    for values, shape in [(range(6), (2, 3)), (range(3), (3, 1)), (range(8), (4, 2))]:
        result = run_reshape_into(producer, values, shape, (token,), token_out)
        assert result.output_shapes == (OutputShape(shape, True),)
        target = create_ashmem(4 * len(values))
        buffer.copy_to(target)
        assert target.read() == np.float32(list(values)).tobytes()
        # Used as an input, the buffer has the dimensions last written.
        ones = np.ones(shape, np.float32)
        plain, in_memory, out_memory = pack_request(consumer.model, [ones, ones], output_capacity=[ones.nbytes])
        token_in = RequestArgument(False, DataLocation(2, 0, 0))
        result = consumer.execute(Request((token_in, plain.inputs[1]), plain.outputs, (in_memory, out_memory, token)))
        assert result.output_shapes[0].dimensions == shape
        assert out_memory.read() == (np.float32(list(values)).reshape(shape) + 1).tobytes()


@pytest.mark.requirement("DOM-DYN-2")
def test_output_shape_the_buffer_cannot_hold_is_general_failure(device) -> None:
    producer = device.prepare_model(reshape_model())
    buffer, token = device.allocate(BufferDesc((2, 3)), [producer], [], [BufferRole(0, 0)])
    token_out = RequestArgument(False, DataLocation(1, 0, 0))
    run_reshape_into(producer, range(6), (2, 3), (token,), token_out)
    with expect_status(FAILURE, rule="DOM-DYN-2"):
        run_reshape_into(producer, range(6), (3, 2), (token,), token_out)
    with expect_status(FAILURE, rule="DOM-STATE-1"):
        buffer.copy_to(create_ashmem(24))


@pytest.mark.requirement("DOM-DYN-2")
def test_too_small_memory_output_reports_needed_dimensions(device) -> None:
    producer = device.prepare_model(reshape_model())
    out = create_ashmem(64)
    out.fill(0x5A)
    small = RequestArgument(False, DataLocation(1, 0, 20))
    with expect_status(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, rule="DOM-DYN-2") as info:
        run_reshape_into(producer, range(6), (2, 3), (out,), small)
    assert info.value.output_shapes == (OutputShape((2, 3), False),)
    assert out.read() == b"\x5a" * 64  # nothing written on failure
    result = run_reshape_into(producer, range(6), (2, 3), (out,), RequestArgument(False, DataLocation(1, 0, 64)))
    assert result.output_shapes == (OutputShape((2, 3), True),)
    assert out.read()[:24] == np.float32(range(6)).tobytes() and out.read()[24:] == b"\x5a" * 40


@pytest.mark.requirement("DOM-CONC-1")
def test_many_threads_read_one_buffer(device) -> None:
    pm = device.prepare_model(binary_model(dims=(1024,)))
    buffer, token = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])
    values = np.random.default_rng(0).random(1024, dtype=np.float32)
    buffer.copy_from(f32_memory(values), ())
    start = threading.Barrier(8)

    def read(i: int) -> bytes:
        start.wait()
        if i % 2:
            target = create_ashmem(4096)
            buffer.copy_to(target)
            return target.read()
        plain, in_memory, out_memory = pack_request(pm.model, [values, np.zeros(1024, np.float32)])
        token_arg = RequestArgument(False, DataLocation(2, 0, 0))
        pm.execute(Request((token_arg, plain.inputs[1]), plain.outputs, (in_memory, out_memory, token)))
        return out_memory.read()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(read, range(8)))
    assert set(results) == {values.tobytes()}


@pytest.mark.requirement("DOM-CONC-2")
def test_concurrent_writers_and_readers_all_return(device) -> None:
    pm = device.prepare_model(binary_model(dims=(256,)))
    buffer, token = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [BufferRole(0, 0)])
    buffer.copy_from(f32_memory(np.zeros(256)), ())
    ones = np.ones(256, np.float32)

    def call(i: int) -> str:
        kind = i % 4
        try:
            if kind == 0:
                buffer.copy_from(f32_memory(np.full(256, i)), ())
            elif kind == 1:
                buffer.copy_to(create_ashmem(1024))
            elif kind == 2:
                plain, in_memory, _ = pack_request(pm.model, [ones, ones])
                pm.execute(Request(plain.inputs, (RequestArgument(False, DataLocation(1, 0, 0)),), (in_memory, token)))
            else:
                plain, in_memory, out_memory = pack_request(pm.model, [ones, ones])
                token_arg = RequestArgument(False, DataLocation(2, 0, 0))
                pm.execute(Request((token_arg, plain.inputs[1]), plain.outputs, (in_memory, out_memory, token)))
        except DriverError as error:
            return error.status.name
        return "NONE"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(call, range(200), timeout=60))
    assert set(outcomes) <= {"NONE", "GENERAL_FAILURE"}  # content undefined; never hang nor crash
    buffer.copy_from(f32_memory(np.arange(256)), ())
    target = create_ashmem(1024)
    buffer.copy_to(target)
    assert target.read() == np.float32(np.arange(256)).tobytes()
