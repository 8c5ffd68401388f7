"""The ONNX Runtime driver (plugins/onnxruntime), a real engine: certified, and right on what the
nightly job found it wrong on.

Four minutes of ``harness fuzz --driver onnxruntime`` found three requests it got wrong that the
certify profile's examples had not reached, and a review a fourth, which no request mutation
made then; each scenario below is one of them, judged against the reference
(nothing here says what the outcome must be)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from harness.api.hal import (DataLocation, Model, Operand, OperandLifeTime, OperandType, Operation, OperationType, RequestArgument,
                             Subgraph)
from harness.api.memory import MemoryKind
from harness.judging.oracle import assert_conforms, run_scenario
from harness.judging.scenario import MemorySpec, Scenario
from harness.report.reproducer import driver_under_test
from harness.strategies.layouts import scenarios
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


def _transpose_conv_of_an_output_shape_given_as_an_input() -> Scenario:
    """TRANSPOSE_CONV_2D, SAME, its output shape a request input, NHWC: a 2 x 2 input at stride 3 to a
    6 x 6 output through a 2 x 2 filter, so NNAPI's padding is 0 at the head and -1 at the tail: the
    last row and column hold the bias alone.  ConvTranspose takes the padding as attributes, so the
    driver works it out in the graph from the shape it is given."""
    filt = np.asarray([1.0, -2.0, 0.5, 3.0], np.float32).reshape(1, 2, 2, 1)
    values = filt.tobytes() + np.float32(0.25).tobytes() + np.asarray([1, 3, 3, 0, 0], np.int32).tobytes()
    operands = (Operand(F32, (1, 2, 2, 1), lifetime=INPUT), Operand(F32, (1, 2, 2, 1), lifetime=CONSTANT, location=DataLocation(0, 0, 16)),
                Operand(F32, (1,), lifetime=CONSTANT, location=DataLocation(0, 16, 4)),
                Operand(OperandType.TENSOR_INT32, (4,), lifetime=INPUT),
                *(Operand(INT32, (), lifetime=CONSTANT, location=DataLocation(0, 20 + 4 * i, 4)) for i in range(4)),
                Operand(OperandType.BOOL, (), lifetime=CONSTANT, location=DataLocation(0, 36, 1)),
                Operand(F32, (1, 0, 0, 1), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.TRANSPOSE_CONV_2D, tuple(range(9)), (9,)),), (0, 3), (9,))
    data = np.asarray([1.5, -1.0, 2.0, 0.5], np.float32).tobytes() + np.asarray([1, 6, 6, 1], np.int32).tobytes()
    return Scenario(subgraph, values, (), (_argument(0, 16), _argument(16, 16)), (_argument(32, 144, (1, 6, 6, 1)),),
                    (MemorySpec(MemoryKind.ASHMEM, data + bytes(144) + _CANARY),),
                    notes=("TRANSPOSE_CONV_2D, output shape as an input",))


def _instance_normalization_of_scalars_given_as_inputs() -> Scenario:
    """INSTANCE_NORMALIZATION, NCHW, gamma and beta request inputs: ONNX takes one of each per
    channel, NNAPI one scalar, expanded in the graph."""
    operands = (Operand(F32, (1, 2, 2, 2), lifetime=INPUT), Operand(OperandType.FLOAT32, (), lifetime=INPUT),
                Operand(OperandType.FLOAT32, (), lifetime=INPUT),
                Operand(OperandType.FLOAT32, (), lifetime=CONSTANT, location=DataLocation(0, 0, 4)),
                Operand(OperandType.BOOL, (), lifetime=CONSTANT, location=DataLocation(0, 4, 1)),
                Operand(F32, (1, 2, 2, 2), lifetime=OUTPUT))
    subgraph = Subgraph(operands, (Operation(OperationType.INSTANCE_NORMALIZATION, tuple(range(5)), (5,)),), (0, 1, 2), (5,))
    values = np.float32(0.01).tobytes() + b"\x01"
    data = np.asarray([1.0, -3.0, 0.5, 2.0, 4.0, 4.5, -1.0, 0.0, -2.0, 1.25], np.float32).tobytes()
    return Scenario(subgraph, values, (), (_argument(0, 32), _argument(32, 4), _argument(36, 4)), (_argument(40, 32),),
                    (MemorySpec(MemoryKind.ASHMEM, data + bytes(32) + _CANARY),),
                    notes=("INSTANCE_NORMALIZATION, gamma and beta as inputs",))


@pytest.mark.parametrize("scenario", [_transpose_conv_of_an_output_shape_given_as_an_input(),
                                      _instance_normalization_of_scalars_given_as_inputs()],
                         ids=lambda scenario: scenario.notes[0])
def test_onnxruntime_agrees_with_the_reference_where_nnapi_gives_what_onnx_takes_as_attributes(scenario: Scenario) -> None:
    with driver_under_test("onnxruntime", "process") as driver:
        assert_conforms("OPS", scenario, run_scenario(ReferenceDevice(), scenario), run_scenario(driver, scenario))


@pytest.mark.parametrize("family", ["transpose_conv_2d", "instance_normalization", "resize_bilinear", "conversion",
                                    "conv_2d", "depthwise_conv_2d", "fully_connected", "max_pool_2d", "relu", "pad"])
def test_onnxruntime_agrees_with_the_reference_on_drawn_models(family: str) -> None:
    """Models of each operation the driver translates with an ONNX operator of its own, in every
    signature and layout the generated suites draw, judged within CHOICE-7's bound: the 8-bit
    conversions and convolutions (QuantizeLinear, DequantizeLinear, QLinearConv) among them."""
    from harness.plugins.onnxruntime.driver import OrtDevice

    driver, reference = OrtDevice(), ReferenceDevice()

    @settings(max_examples=25, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(scenarios(driver.capabilities(), family=family))
    def agrees(scenario: Scenario) -> None:
        assert_conforms("OPS", scenario, run_scenario(reference, scenario), run_scenario(driver, scenario))

    agrees()


def _one_operation(kind: OperationType, operands: tuple[Operand, ...], values: bytes) -> Model:
    inputs = tuple(i for i, o in enumerate(operands) if o.lifetime == INPUT)
    operation = Operation(kind, tuple(range(len(operands) - 1)), (len(operands) - 1,))
    return Model(Subgraph(operands, (operation,), inputs, (len(operands) - 1,)), operand_values=values)


def test_onnxruntime_reports_unsupported_what_onnx_takes_as_an_attribute_given_as_an_input() -> None:
    """CHOICE-5: INSTANCE_NORMALIZATION's epsilon, and TRANSPOSE_CONV_2D's stride, as request inputs."""
    from harness.plugins.onnxruntime.driver import OrtDevice

    scalar = lambda at: Operand(INT32, (), lifetime=CONSTANT, location=DataLocation(0, at, 4))  # noqa: E731
    flag = Operand(OperandType.BOOL, (), lifetime=CONSTANT, location=DataLocation(0, 12, 1))
    normalization = _one_operation(OperationType.INSTANCE_NORMALIZATION, (
        Operand(F32, (1, 2, 2, 1), lifetime=INPUT), *(Operand(OperandType.FLOAT32, (), lifetime=INPUT) for _ in range(3)),
        flag, Operand(F32, (1, 2, 2, 1), lifetime=OUTPUT)), bytes(16))
    transpose_conv = _one_operation(OperationType.TRANSPOSE_CONV_2D, (
        Operand(F32, (1, 2, 2, 1), lifetime=INPUT), Operand(F32, (1, 1, 1, 1), lifetime=CONSTANT, location=DataLocation(0, 0, 4)),
        Operand(F32, (1,), lifetime=CONSTANT, location=DataLocation(0, 4, 4)), *(scalar(8) for _ in range(4)),
        Operand(INT32, (), lifetime=INPUT), scalar(8), scalar(8), flag, Operand(F32, (1, 0, 0, 1), lifetime=OUTPUT)),
        bytes(16))
    driver = OrtDevice()
    assert (driver.get_supported_operations(normalization), driver.get_supported_operations(transpose_conv)) == ([False], [False])


def test_onnxruntime_passes_every_suite_with_nothing_left_unrun() -> None:
    """What docs/drivers.md says of it: no failure, every requirement it declares checked, in a run
    of every suite at the ci profile's counts, judged as a correct variant's is (`score_variant`).
    `harness certify --driver onnxruntime`, the certify profile, is measured rather than run here:
    at four times the examples it was the test command's longest test after the score's."""
    from harness.commands.score import score_variant

    run = score_variant("onnxruntime", "its declarations", profile="ci")
    assert not run.caught, f"{run.first_test}: {run.message} ({run.failures_elsewhere} more)"


def test_onnxruntime_fails_a_negative_lookup_as_nnapi_does() -> None:
    """ONNX's Gather reads a negative index from the end; NNAPI fails EMBEDDING_LOOKUP's execution, and
    the driver checks a lookup given as a request input before onnxruntime runs."""
    from harness.api.hal import DriverError
    from harness.judging.builders import ModelBuilder, run_outputs
    from harness.plugins.onnxruntime.driver import OrtDevice

    b = ModelBuilder()
    lookups, table = b.input(OperandType.TENSOR_INT32, (2,)), b.input(F32, (3, 2))
    b.operation(OperationType.EMBEDDING_LOOKUP, [lookups, table], F32, (2, 2))
    model, rows = b.build(), np.arange(6, dtype=np.float32).reshape(3, 2)
    for device in (OrtDevice(), ReferenceDevice()):
        assert (run_outputs(device, model, [np.asarray([2, 0], np.int32), rows])[0] == rows[[2, 0]]).all()
        with pytest.raises(DriverError):
            run_outputs(device, model, [np.asarray([0, -1], np.int32), rows])
