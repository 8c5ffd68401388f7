"""Reference driver, SPEC §4 requests: every REQ rule with the status it expects."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.judging.builders import ModelBuilder, binary_model, pack_request
from harness.api.hal import DataLocation, ErrorStatus, OperandType, OperationType, Request, RequestArgument
from harness.judging.oracle import expect_status

F32 = OperandType.TENSOR_FLOAT32
INVALID = ErrorStatus.INVALID_ARGUMENT


@pytest.fixture
def scenario(device):
    model = binary_model(dims=(2, 2))
    request, in_memory, out_memory = pack_request(model, [np.ones((2, 2), np.float32)] * 2)
    return device.prepare_model(model), request


def with_input(request: Request, index: int, argument: RequestArgument) -> Request:
    inputs = list(request.inputs)
    inputs[index] = argument
    return Request(tuple(inputs), request.outputs, request.pools)


def test_the_valid_request_runs(scenario) -> None:
    prepared, request = scenario
    assert prepared.execute(request).output_sufficient_size


@pytest.mark.requirement("REQ-1")
@pytest.mark.parametrize("change", ["drop-input-0", "drop-input-1", "drop-output-0", "extra-input", "extra-output"])
def test_argument_count_must_match(scenario, change) -> None:
    prepared, request = scenario
    inputs, outputs = list(request.inputs), list(request.outputs)
    match change:
        case "drop-input-0" | "drop-input-1":
            del inputs[int(change[-1])]
        case "drop-output-0":
            del outputs[0]
        case "extra-input":
            inputs.append(inputs[0])
        case "extra-output":
            outputs.append(outputs[0])
    with expect_status(INVALID, rule="REQ-1", call=change):
        prepared.execute(Request(tuple(inputs), tuple(outputs), request.pools))


@pytest.mark.requirement("REQ-2")
@pytest.mark.parametrize(
    "mutate",
    [
        lambda a: replace(a, location=replace(a.location, pool_index=7)),
        lambda a: replace(a, location=replace(a.location, offset=10_000)),
        lambda a: replace(a, location=replace(a.location, padding=10_000)),
        lambda a: replace(a, location=replace(a.location, length=a.location.length - 4)),
        lambda a: replace(a, location=replace(a.location, length=a.location.length + 4)),
        lambda a: replace(a, dimensions=(2, 3)),
        lambda a: replace(a, dimensions=(4,)),
        lambda a: replace(a, has_no_value=True),
        lambda a: RequestArgument(True, DataLocation(), (2, 2)),
    ],
    ids=["pool-index", "offset", "padding", "short-length", "long-length", "dims-conflict", "rank-conflict",
         "no-value-with-location", "no-value-with-dims"],
)
def test_argument_rules(scenario, mutate) -> None:
    prepared, request = scenario
    with expect_status(INVALID, rule="REQ-2"):
        prepared.execute(with_input(request, 1, mutate(request.inputs[1])))


@pytest.mark.requirement("REQ-2")
def test_input_of_unknown_rank_needs_full_dimensions(device) -> None:
    b = ModelBuilder()
    b.operation(OperationType.ADD, [b.input(F32, ()), b.input(F32, ()), b.scalar(0)], F32, ())
    model = b.build()
    prepared = device.prepare_model(model)
    request, _, out = pack_request(model, [np.ones((3,), np.float32)] * 2, output_capacity=[12])
    assert prepared.execute(request).output_shapes[0].dimensions == (3,)
    with expect_status(INVALID, rule="REQ-2"):
        prepared.execute(with_input(request, 0, replace(request.inputs[0], dimensions=())))
    with expect_status(INVALID, rule="REQ-2"):
        prepared.execute(with_input(request, 0, replace(request.inputs[0], dimensions=(0,))))
