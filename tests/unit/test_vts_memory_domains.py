"""The memory-domain scenarios of the NN HAL vendor test suite, on the reference driver.

Each scenario runs for FLOAT32, FLOAT16 and QUANT8_ASYMM role operands and names the
status SPEC expects (allocation failures may be INVALID_ARGUMENT or GENERAL_FAILURE
only where SPEC allows it: DOM-ALLOC-1/2 are INVALID_ARGUMENT).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from harness.judging.builders import ModelBuilder, binary_model, pack_request
from harness.api.hal import (
    BufferDesc,
    BufferRole,
    DataLocation,
    ErrorStatus,
    OperandType,
    OperationType,
    Request,
    RequestArgument,
    numpy_dtype,
)
from harness.api.memory import create_ashmem
from harness.judging.oracle import expect_status
from reference_driver import ReferenceDevice

INVALID, FAILURE = ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE


@dataclass(frozen=True)
class Flavor:
    type: OperandType
    scale: float
    zero_point: int
    other_type: OperandType

    @property
    def quantized(self) -> bool:
        return self.scale != 0

    def nbytes(self, dims) -> int:
        return int(np.prod(dims)) * np.dtype(numpy_dtype(self.type)).itemsize


FLAVORS = [
    Flavor(OperandType.TENSOR_FLOAT32, 0.0, 0, OperandType.TENSOR_INT32),
    Flavor(OperandType.TENSOR_FLOAT16, 0.0, 0, OperandType.TENSOR_FLOAT32),
    Flavor(OperandType.TENSOR_QUANT8_ASYMM, 0.5, 10, OperandType.TENSOR_QUANT8_ASYMM_SIGNED),
]
DIMS = (2, 2)


@pytest.fixture(params=FLAVORS, ids=lambda f: f.type.name)
def flavor(request) -> Flavor:
    return request.param


def model_for(flavor: Flavor, dims=DIMS, *, type=None, scale=None, zero_point=None):
    return binary_model(
        OperationType.ADD,
        type or flavor.type,
        dims,
        scale=flavor.scale if scale is None else scale,
        zero_point=flavor.zero_point if zero_point is None else zero_point,
    )


def two_output_model(flavor: Flavor):
    b = ModelBuilder()
    x = b.input(flavor.type, DIMS, flavor.scale, flavor.zero_point)
    y = b.input(flavor.type, DIMS, flavor.scale, flavor.zero_point)
    b.operation(OperationType.ADD, [x, y, b.scalar(0)], flavor.type, DIMS, flavor.scale, flavor.zero_point)
    b.operation(OperationType.MUL, [x, y, b.scalar(0)], flavor.type, DIMS, flavor.scale, flavor.zero_point)
    return b.build()


@pytest.fixture
def prepared(device, flavor):
    return device.prepare_model(model_for(flavor))


def filled(nbytes: int, seed: int = 1):
    memory = create_ashmem(nbytes)
    memory.write(np.random.default_rng(seed).integers(0, 60, nbytes, dtype=np.uint8).tobytes())
    return memory


# --------------------------------------------------------------------------- allocate


ALLOCATE_CASES = {
    "empty-roles": lambda pm, other: (BufferDesc(), [pm], [], []),
    "no-prepared-models": lambda pm, other: (BufferDesc(), [], [BufferRole(0, 0)], []),
    "bad-model-index": lambda pm, other: (BufferDesc(), [pm], [BufferRole(1, 0)], []),
    "bad-input-io-index": lambda pm, other: (BufferDesc(), [pm], [BufferRole(0, 2)], []),
    "bad-output-io-index": lambda pm, other: (BufferDesc(), [pm], [], [BufferRole(0, 1)]),
    "probability-10": lambda pm, other: (BufferDesc(), [pm], [BufferRole(0, 0, 10.0)], []),
    "probability-0": lambda pm, other: (BufferDesc(), [pm], [BufferRole(0, 0, 0.0)], []),
    "probability-negative": lambda pm, other: (BufferDesc(), [pm], [BufferRole(0, 0, -0.5)], []),
    "same-role-twice": lambda pm, other: (BufferDesc(), [pm], [BufferRole(0, 0), BufferRole(0, 0)], []),
    "same-model-listed-twice": lambda pm, other: (BufferDesc(), [pm, pm], [BufferRole(0, 0), BufferRole(1, 0)], []),
    "rank-conflicts-with-desc": lambda pm, other: (BufferDesc((2, 2, 1)), [pm], [BufferRole(0, 0)], []),
    "dims-conflict-with-desc": lambda pm, other: (BufferDesc((2, 3)), [pm], [BufferRole(0, 0)], []),
}


@pytest.mark.requirement("DOM-ALLOC-1", "DOM-ALLOC-2")
@pytest.mark.parametrize("case", ALLOCATE_CASES)
def test_allocate_rejects(device, prepared, flavor, case) -> None:
    args = ALLOCATE_CASES[case](prepared, None)
    with expect_status(INVALID, rule="DOM-ALLOC", call=f"allocate[{case}]"):
        device.allocate(*args)


@pytest.mark.requirement("DOM-ALLOC-1")
def test_allocate_rejects_a_model_prepared_by_another_driver(device, prepared, flavor) -> None:
    foreign = ReferenceDevice().prepare_model(model_for(flavor))
    with expect_status(INVALID, rule="DOM-ALLOC-1"):
        device.allocate(BufferDesc(), [prepared, foreign], [BufferRole(0, 0), BufferRole(1, 0)], [])


CONFLICTS = {
    "type": lambda f: dict(type=f.other_type, scale=0.5 if f.other_type.name.startswith("TENSOR_QUANT") else 0.0,
                           zero_point=0),
    "scale": lambda f: dict(scale=f.scale * 2),
    "zero-point": lambda f: dict(zero_point=f.zero_point + 1),
    "rank": lambda f: dict(dims=(2, 2, 1)),
    "dimensions": lambda f: dict(dims=(2, 3)),
}


@pytest.mark.requirement("DOM-ALLOC-2")
@pytest.mark.parametrize("conflict", CONFLICTS)
def test_allocate_rejects_roles_that_conflict(device, prepared, flavor, conflict) -> None:
    if conflict in ("scale", "zero-point") and not flavor.quantized:
        pytest.skip("scale and zeroPoint are fixed at 0 for non-quantized operands; no conflicting model exists")
    other = device.prepare_model(model_for(flavor, **CONFLICTS[conflict](flavor)))
    with expect_status(INVALID, rule="DOM-ALLOC-2", call=f"allocate with a {conflict} conflict"):
        device.allocate(BufferDesc(), [prepared, other], [BufferRole(0, 0), BufferRole(1, 0)], [])


@pytest.mark.requirement("DOM-ALLOC-2")
def test_allocate_rejects_scalar_role_with_dimensions(device, flavor) -> None:
    b = ModelBuilder()
    x = b.input(flavor.type, DIMS, flavor.scale, flavor.zero_point)
    y = b.input(flavor.type, DIMS, flavor.scale, flavor.zero_point)
    act = b.input(OperandType.INT32)
    b.operation(OperationType.ADD, [x, y, act], flavor.type, DIMS, flavor.scale, flavor.zero_point)
    pm = device.prepare_model(b.build())
    device.allocate(BufferDesc(), [pm], [BufferRole(0, 2)], [])[0].release()  # without dimensions: fine
    with expect_status(INVALID, rule="DOM-ALLOC-2"):
        device.allocate(BufferDesc((1,)), [pm], [BufferRole(0, 2)], [])


# --------------------------------------------------------------------------- copies


@pytest.fixture
def buffer(device, prepared):
    buffer, _ = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    yield buffer
    buffer.release()


@pytest.mark.requirement("DOM-COPY-1")
def test_copy_from_wrong_memory_size(buffer, flavor) -> None:
    with expect_status(INVALID, rule="DOM-COPY-1"):
        buffer.copy_from(filled(flavor.nbytes(DIMS) - 1), ())
    with expect_status(INVALID, rule="DOM-COPY-1"):
        buffer.copy_from(filled(flavor.nbytes(DIMS) + 1), ())


@pytest.mark.requirement("DOM-COPY-1")
def test_copy_to_wrong_memory_size(buffer, flavor) -> None:
    buffer.copy_from(filled(flavor.nbytes(DIMS)), ())
    with expect_status(INVALID, rule="DOM-COPY-1"):
        buffer.copy_to(create_ashmem(flavor.nbytes(DIMS) + 1))


@pytest.mark.requirement("DOM-COPY-2")
@pytest.mark.parametrize("dims", [(2, 3), (2, 0), (0, 0), (4,), (2, 2, 1)], ids=["wrong", "zero", "all-zero", "rank-1", "rank-3"])
def test_copy_from_bad_dimensions(buffer, flavor, dims) -> None:
    size = max(flavor.nbytes(tuple(d or 1 for d in dims)), 1)
    with expect_status(INVALID, rule="DOM-COPY-2", call=f"copy_from(dims={dims})"):
        buffer.copy_from(filled(size), dims)


@pytest.mark.requirement("DOM-COPY-2", "DOM-DYN-1")
def test_copy_with_dynamic_shapes(device, flavor) -> None:
    pm = device.prepare_model(model_for(flavor, dims=(0, 2)))
    buffer, _ = device.allocate(BufferDesc(), [pm], [BufferRole(0, 0)], [])
    with expect_status(INVALID, rule="DOM-COPY-2", call="copy_from(dims=()) into a dynamic buffer"):
        buffer.copy_from(filled(flavor.nbytes((3, 2))), ())
    with expect_status(INVALID, rule="DOM-COPY-2", call="copy_from(dims=(3, 3)) into (0, 2)"):
        buffer.copy_from(filled(flavor.nbytes((3, 3))), (3, 3))
    source = filled(flavor.nbytes((3, 2)), seed=7)
    buffer.copy_from(source, (3, 2))
    with expect_status(INVALID, rule="DOM-COPY-1"):
        buffer.copy_to(create_ashmem(flavor.nbytes((2, 2))))
    target = create_ashmem(flavor.nbytes((3, 2)))
    buffer.copy_to(target)
    assert target.read() == source.read()
    larger = filled(flavor.nbytes((5, 2)), seed=8)
    buffer.copy_from(larger, (5, 2))
    target = create_ashmem(flavor.nbytes((5, 2)))
    buffer.copy_to(target)
    assert target.read() == larger.read()


@pytest.mark.requirement("DOM-STATE-2", "DOM-COPY-1")
def test_copy_to_uninitialized(buffer, flavor) -> None:
    with expect_status(FAILURE, rule="DOM-STATE-2"):
        buffer.copy_to(create_ashmem(flavor.nbytes(DIMS)))


# --------------------------------------------------------------------------- execution


def request_with_input_token(flavor, token, io_index=0, *, pool_offset=0):
    model = model_for(flavor)
    value = np.zeros(DIMS, numpy_dtype(flavor.type))
    request, in_memory, out_memory = pack_request(model, [value, value])
    inputs = list(request.inputs)
    inputs[io_index] = RequestArgument(False, DataLocation(2, pool_offset, 0))
    return Request(tuple(inputs), request.outputs, (in_memory, out_memory, token))


@pytest.mark.requirement("DOM-ROLE-1")
@pytest.mark.parametrize("token", [0, -1, 12345], ids=["zero", "negative", "unknown"])
def test_execute_with_invalid_token(prepared, flavor, token) -> None:
    with expect_status(INVALID, rule="DOM-ROLE-1", call=f"execute with token {token}"):
        prepared.execute(request_with_input_token(flavor, token))


@pytest.mark.requirement("DOM-ROLE-1")
def test_execute_with_released_token(device, prepared, flavor) -> None:
    buffer, token = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    buffer.copy_from(filled(flavor.nbytes(DIMS)), ())
    prepared.execute(request_with_input_token(flavor, token))
    buffer.release()
    with expect_status(INVALID, rule="DOM-ROLE-1"):
        prepared.execute(request_with_input_token(flavor, token))


@pytest.mark.requirement("DOM-ROLE-2")
def test_execute_with_buffer_of_another_prepared_model(device, prepared, flavor) -> None:
    again = device.prepare_model(model_for(flavor))  # the same graph, prepared again
    buffer, token = device.allocate(BufferDesc(), [again], [BufferRole(0, 0)], [])
    buffer.copy_from(filled(flavor.nbytes(DIMS)), ())
    again.execute(request_with_input_token(flavor, token))
    with expect_status(INVALID, rule="DOM-ROLE-2"):
        prepared.execute(request_with_input_token(flavor, token))


@pytest.mark.requirement("DOM-ROLE-2")
def test_execute_with_wrong_io_index(device, prepared, flavor) -> None:
    buffer, token = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    buffer.copy_from(filled(flavor.nbytes(DIMS)), ())
    with expect_status(INVALID, rule="DOM-ROLE-2"):
        prepared.execute(request_with_input_token(flavor, token, io_index=1))


@pytest.mark.requirement("DOM-ROLE-2")
def test_execute_with_wrong_direction(device, prepared, flavor) -> None:
    buffer, token = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    buffer.copy_from(filled(flavor.nbytes(DIMS)), ())
    request = request_with_input_token(flavor, token)
    value = np.zeros(DIMS, numpy_dtype(flavor.type))
    plain, in_memory, out_memory = pack_request(prepared.model, [value, value])
    as_output = Request(plain.inputs, (RequestArgument(False, DataLocation(2, 0, 0)),), (in_memory, out_memory, token))
    with expect_status(INVALID, rule="DOM-ROLE-2"):
        prepared.execute(as_output)
    prepared.execute(request)  # the allocated role still works


@pytest.mark.requirement("DOM-STATE-2")
def test_execute_with_uninitialized_input(device, prepared, flavor) -> None:
    _, token = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    with expect_status(FAILURE, rule="DOM-STATE-2"):
        prepared.execute(request_with_input_token(flavor, token))


@pytest.mark.requirement("DOM-ROLE-3")
def test_same_buffer_as_two_outputs(device, flavor) -> None:
    pm = device.prepare_model(two_output_model(flavor))
    _, token = device.allocate(BufferDesc(), [pm], [], [BufferRole(0, 0), BufferRole(0, 1)])
    value = np.zeros(DIMS, numpy_dtype(flavor.type))
    plain, in_memory, _ = pack_request(pm.model, [value, value])
    token_arg = RequestArgument(False, DataLocation(1, 0, 0))
    with expect_status(INVALID, rule="DOM-ROLE-3"):
        pm.execute(Request(plain.inputs, (token_arg, token_arg), (in_memory, token)))


@pytest.mark.requirement("DOM-ROLE-3")
def test_same_buffer_as_input_and_output(device, prepared, flavor) -> None:
    buffer, token = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [BufferRole(0, 0)])
    buffer.copy_from(filled(flavor.nbytes(DIMS)), ())
    request = request_with_input_token(flavor, token)
    as_both = Request(request.inputs, (RequestArgument(False, DataLocation(2, 0, 0)),), request.pools)
    with expect_status(INVALID, rule="DOM-ROLE-3"):
        prepared.execute(as_both)


@pytest.mark.requirement("DOM-DYN-2")
def test_execute_with_conflicting_dimensions(device, flavor) -> None:
    pm = device.prepare_model(model_for(flavor, dims=(0, 2)))
    buffer, token = device.allocate(BufferDesc((3, 2)), [pm], [BufferRole(0, 0)], [])
    buffer.copy_from(filled(flavor.nbytes((3, 2))), ())
    value = np.zeros((4, 2), numpy_dtype(flavor.type))
    plain, in_memory, out_memory = pack_request(pm.model, [value, value], output_capacity=[flavor.nbytes((4, 2))])
    conflicting = RequestArgument(False, DataLocation(2, 0, 0), (4, 2))
    with expect_status(INVALID, rule="DOM-DYN-2"):
        pm.execute(Request((conflicting, plain.inputs[1]), plain.outputs, (in_memory, out_memory, token)))
