"""The ONNX Runtime driver (plugins/onnxruntime), a real engine: certified, and right on what the
nightly job found it wrong on.

Four minutes of ``harness fuzz --driver onnxruntime`` found three requests it got wrong that the
certify profile's examples had not reached, and a review a fourth, which no request mutation
made then; each scenario below is one of them, judged against the reference
(nothing here says what the outcome must be)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.api.hal import DataLocation, Operand, OperandLifeTime, OperandType, Operation, OperationType, RequestArgument, Subgraph
from harness.api.memory import MemoryKind
from harness.judging.oracle import assert_conforms, run_scenario
from harness.judging.scenario import MemorySpec, Scenario
from harness.report.reproducer import driver_under_test
from reference_driver import ReferenceDevice

pytest.importorskip("onnxruntime", reason="the ort extra installs it (the README's test command does)")

F32, INT32, BOOL8 = OperandType.TENSOR_FLOAT32, OperandType.INT32, OperandType.TENSOR_BOOL8
INPUT, OUTPUT, CONSTANT = OperandLifeTime.SUBGRAPH_INPUT, OperandLifeTime.SUBGRAPH_OUTPUT, OperandLifeTime.CONSTANT_COPY
_CANARY = b"\xa5" * 4


def _argument(offset: int, length: int, dimensions: tuple[int, ...] = ()) -> RequestArgument:
    return RequestArgument(False, DataLocation(0, offset, length), dimensions)


def _fully_connected_given_a_rank_1_input() -> Scenario:
    """FULLY_CONNECTED of an input whose rank the model leaves unknown, given rank 1 by the request:
    NNAPI needs rank 2 to 4, and onnxruntime's Reshape flattened it all the same."""
    operands = (Operand(F32, (), lifetime=INPUT), Operand(F32, (1, 1), lifetime=CONSTANT, location=DataLocation(0, 0, 4)),
                Operand(F32, (1,), lifetime=CONSTANT, location=DataLocation(0, 4, 4)),
                Operand(INT32, (), lifetime=CONSTANT, location=DataLocation(0, 8, 4)), Operand(F32, (1, 1), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.FULLY_CONNECTED, (0, 1, 2, 3), (4,)),), (0,), (4,))
    return Scenario(subgraph, bytes(12), (), (_argument(0, 4, (1,)),), (_argument(4, 4),),
                    (MemorySpec(MemoryKind.ASHMEM, bytes(4) + _CANARY),), notes=("FULLY_CONNECTED, input of rank 1",))


def _scalar_input_of_no_bytes() -> Scenario:
    """ADD whose activation code is a model input, given a region of 0 bytes for its 4: the driver
    raised a numpy ValueError from inside the service instead of refusing the request."""
    operands = (Operand(F32, (0, 1), lifetime=INPUT), Operand(F32, (1, 1), lifetime=CONSTANT, location=DataLocation(0, 0, 4)),
                Operand(INT32, (), lifetime=INPUT), Operand(F32, (1, 1), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.ADD, (0, 1, 2), (3,)),), (0, 2), (3,))
    return Scenario(subgraph, bytes(4), (), (_argument(0, 4, (1, 1)), _argument(4, 0)), (_argument(8, 4),),
                    (MemorySpec(MemoryKind.ASHMEM, bytes(8) + _CANARY),), notes=("ADD, a scalar input of 0 bytes",))


def _inner_tensor_of_another_rank() -> Scenario:
    """ADD then RELU, the tensor between them declared (1, 1, 1, 1), the ADD's inputs given ranks 3
    and 1 by the request: the ADD makes (1, 1, 1), which NNAPI refuses at execution; onnxruntime
    knows nothing of what the model declares inside it."""
    operands = (Operand(F32, (), lifetime=INPUT), Operand(F32, (0,), lifetime=INPUT),
                Operand(INT32, (), lifetime=CONSTANT, location=DataLocation(0, 0, 4)), Operand(F32, (1, 1, 1, 1)),
                Operand(F32, (), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.ADD, (0, 1, 2), (3,)), Operation(OperationType.RELU, (3,), (4,))),
                        (0, 1), (4,))
    return Scenario(subgraph, bytes(4), (), (_argument(0, 4, (1, 1, 1)), _argument(4, 4, (1,))), (_argument(8, 4),),
                    (MemorySpec(MemoryKind.ASHMEM, bytes(8) + _CANARY),), notes=("ADD then RELU, the tensor between of another rank",))


def _input_given_a_negative_dimension() -> Scenario:
    """ADD of an input whose first dimension the model leaves unknown, given -1 by the request over
    8 bytes: the driver checked for a 0 dimension only, and numpy's reshape read -1 as "whatever the
    bytes hold"."""
    operands = (Operand(F32, (0, 1), lifetime=INPUT), Operand(F32, (1, 1), lifetime=CONSTANT, location=DataLocation(0, 0, 4)),
                Operand(INT32, (), lifetime=CONSTANT, location=DataLocation(0, 4, 4)), Operand(F32, (0, 1), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.ADD, (0, 1, 2), (3,)),), (0,), (3,))
    return Scenario(subgraph, bytes(8), (), (_argument(0, 8, (-1, 1)),), (_argument(8, 8),),
                    (MemorySpec(MemoryKind.ASHMEM, bytes(16) + _CANARY),), notes=("ADD, an input given a negative dimension",))


@pytest.mark.parametrize("scenario", [_fully_connected_given_a_rank_1_input(), _scalar_input_of_no_bytes(),
                                      _inner_tensor_of_another_rank(), _input_given_a_negative_dimension()],
                         ids=lambda scenario: scenario.notes[0])
def test_onnxruntime_agrees_with_the_reference_on_what_fuzzing_found(scenario: Scenario) -> None:
    with driver_under_test("onnxruntime", "process") as driver:
        assert_conforms("REQ-2", scenario, run_scenario(ReferenceDevice(), scenario), run_scenario(driver, scenario))


def _max_pool_of_stride_above_its_filter() -> Scenario:
    """MAX_POOL_2D, SAME padding, a 1 x 1 filter at stride 2, of an input whose height and width are
    known only at execution: onnxruntime's SAME auto-padding failed on the negative total padding
    that NNAPI makes 0."""
    parameters = np.asarray([1, 2, 2, 1, 1, 0], np.int32)  # SAME, strides, filter, no activation
    operands = (Operand(F32, (1, 0, 0, 1), lifetime=INPUT),
                *(Operand(INT32, (), lifetime=CONSTANT, location=DataLocation(0, 4 * i, 4)) for i in range(6)),
                Operand(F32, (1, 0, 0, 1), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.MAX_POOL_2D, tuple(range(7)), (7,)),), (0,), (7,))
    data = np.arange(9, dtype=np.float32).tobytes()
    return Scenario(subgraph, parameters.tobytes(), (), (_argument(0, 36, (1, 3, 3, 1)),), (_argument(36, 16, (1, 2, 2, 1)),),
                    (MemorySpec(MemoryKind.ASHMEM, data + bytes(16) + _CANARY),), notes=("MAX_POOL_2D, stride above its filter",))


def _booleans_ordered() -> Scenario:
    """GREATER of two TENSOR_BOOL8 tensors, a byte of 2 among them (true): ONNX orders no booleans."""
    operands = (Operand(BOOL8, (4,), lifetime=INPUT), Operand(BOOL8, (4,), lifetime=INPUT), Operand(BOOL8, (4,), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.GREATER, (0, 1), (2,)),), (0, 1), (2,))
    return Scenario(subgraph, b"", (), (_argument(0, 4), _argument(4, 4)), (_argument(8, 4),),
                    (MemorySpec(MemoryKind.ASHMEM, bytes([0, 1, 2, 0, 0, 0, 1, 1]) + bytes(4) + _CANARY),),
                    notes=("GREATER of booleans",))


def _prelu_broadcast_both_ways() -> Scenario:
    """PRELU of a (1, 2) input and a (3, 1) alpha, whose output is (3, 2): ONNX's PRelu is specified to
    broadcast alpha to the input's shape only, and the driver had refused the model."""
    alpha = np.asarray([[0.5], [-2.0], [3.0]], np.float32)
    operands = (Operand(F32, (1, 2), lifetime=INPUT), Operand(F32, (3, 1), lifetime=CONSTANT, location=DataLocation(0, 0, 12)),
                Operand(F32, (3, 2), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.PRELU, (0, 1), (2,)),), (0,), (2,))
    data = np.asarray([-1.5, 2.0], np.float32).tobytes()
    return Scenario(subgraph, alpha.tobytes(), (), (_argument(0, 8),), (_argument(8, 24),),
                    (MemorySpec(MemoryKind.ASHMEM, data + bytes(24) + _CANARY),), notes=("PRELU, broadcast both ways",))


def _strided_slice_of_every_axis_shrunk() -> Scenario:
    """STRIDED_SLICE of a rank-1 input shrinking its one axis, then EXPAND_DIMS of its result: ONNX's
    Squeeze gives a scalar, where NNAPI's CTS (strided_slice_b155662254) and the reference give [1],
    and the rank shows in the shape EXPAND_DIMS makes of it."""
    parameters = np.asarray([0, 1, 1, 0, 0, 1, 0], np.int32)  # begin, end, strides; the three masks; the new axis
    operands = (Operand(F32, (4,), lifetime=INPUT),
                *(Operand(OperandType.TENSOR_INT32, (1,), lifetime=CONSTANT, location=DataLocation(0, 4 * i, 4)) for i in range(3)),
                *(Operand(INT32, (), lifetime=CONSTANT, location=DataLocation(0, 4 * i, 4)) for i in range(3, 7)),
                Operand(F32, (), lifetime=OperandLifeTime.TEMPORARY_VARIABLE), Operand(F32, (), lifetime=OUTPUT))
    operations = (Operation(OperationType.STRIDED_SLICE, tuple(range(7)), (8,)), Operation(OperationType.EXPAND_DIMS, (8, 7), (9,)))
    subgraph = Subgraph(operands, operations, (0,), (9,))
    data = np.arange(4, dtype=np.float32).tobytes()
    return Scenario(subgraph, parameters.tobytes(), (), (_argument(0, 16),), (_argument(16, 4),),
                    (MemorySpec(MemoryKind.ASHMEM, data + bytes(4) + _CANARY),), notes=("STRIDED_SLICE, every axis shrunk",))


@pytest.mark.parametrize("scenario", [_max_pool_of_stride_above_its_filter(), _booleans_ordered(), _prelu_broadcast_both_ways(),
                                      _strided_slice_of_every_axis_shrunk()],
                         ids=lambda scenario: scenario.notes[0])
def test_onnxruntime_agrees_with_the_reference_where_a_translation_differed(scenario: Scenario) -> None:
    """What the differential suites or NNAPI's CTS found where ONNX's operator is not NNAPI's, worked around in the driver."""
    with driver_under_test("onnxruntime", "process") as driver:
        assert_conforms("POOL-2", scenario, run_scenario(ReferenceDevice(), scenario), run_scenario(driver, scenario))


def test_onnxruntime_is_certified_with_nothing_left_unrun(tmp_path: Path) -> None:
    """What docs/drivers.md says of it: PASS, every requirement it declares checked."""
    done = subprocess.run([sys.executable, "-m", "harness.commands.cli", "certify", "--driver", "onnxruntime",
                           "--out", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    certificate = json.loads((tmp_path / "certificate.json").read_text())
    assert (done.returncode, certificate["verdict"], certificate["not_run"]) == (0, "PASS", []), done.stdout[-3000:]
