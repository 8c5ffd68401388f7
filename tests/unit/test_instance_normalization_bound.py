"""INSTANCE_NORMALIZATION's error bound (`bounds.instance_normalization_magnitudes`): a driver
that computes it step by step in float32 or float16, with a one-pass or a two-pass variance,
passes on planes centred and far from 0 alike, and the seeded bugs of the operation fail."""

from __future__ import annotations

import numpy as np
import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import OperandType, OperationType
from harness.judging import bounds
from harness.judging.builders import ModelBuilder
from harness.judging.oracle import assert_conforms, run_scenario
from harness.judging.scenario import Scenario
from harness.plugins.mutants import MUTANTS
from harness.plugins.variants.drivers import instance_normalization_in
from harness.strategies.domains import request
from reference_driver import ReferenceDevice

F32, F16 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16
SCALAR = {F32: OperandType.FLOAT32, F16: OperandType.FLOAT16}


def _instance_normalization(x: np.ndarray, type: OperandType, epsilon: float, nchw: bool, relaxed: bool = False,
                            gamma: float = 1.5, beta: float = -1.0, batches_given_by_request: bool = False) -> Scenario:
    builder = ModelBuilder()
    given = builder.input(type, (0, *x.shape[1:]) if batches_given_by_request else x.shape)
    parameters = [builder.constant(SCALAR[type], value) for value in (gamma, beta, epsilon)]
    builder.operation(OperationType.INSTANCE_NORMALIZATION, [given, *parameters, builder.constant(OperandType.BOOL, nchw)],
                      type, x.shape)
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=("INSTANCE_NORMALIZATION",), relaxed=relaxed)
    return request(model, [x], [x.nbytes])


def _judge(device, scenario: Scenario) -> None:
    assert_conforms("POOL-2", scenario, run_scenario(ReferenceDevice(), scenario), run_scenario(device, scenario))


def _computing_in(dtype, one_pass: bool) -> ReferenceDevice:
    device = ReferenceDevice()
    device.kernels[OperationType.INSTANCE_NORMALIZATION] = instance_normalization_in(dtype, one_pass)
    return device


def _planes(offset: float, seed: int) -> np.ndarray:
    """Two batches of 3 planes of 6 x 6: values within 8 of ``offset`` (far from 0, one-pass variance cancels)."""
    rng = np.random.default_rng(seed)
    return offset + rng.uniform(-8, 8, (2, 6, 6, 3)) * (1 if abs(offset) < 1 else 0.1)


@pytest.mark.parametrize("one_pass", [True, False], ids=["one-pass", "two-pass"])
@pytest.mark.parametrize("type, relaxed", [(F32, False), (F32, True), (F16, False)], ids=["float32", "relaxed", "float16"])
def test_step_by_step_arithmetic_passes(type: OperandType, relaxed: bool, one_pass: bool) -> None:
    computed_in = np.float16 if relaxed or type == F16 else np.float32
    device = _computing_in(computed_in, one_pass)
    checked = 0
    for seed, offset in enumerate((0.0, 3.0, -6.0, 0.5)):
        for epsilon in (1e-3, 1e-2, 0.1, 1.0):
            for nchw in (False, True):
                x = _planes(offset, seed).astype(np.float16 if type == F16 else np.float32)
                scenario = _instance_normalization(x, type, epsilon, nchw, relaxed)
                if run_scenario(device, scenario).outputs == run_scenario(ReferenceDevice(), scenario).outputs:
                    continue
                _judge(device, scenario)
                checked += 1
    assert checked, "the step-by-step arithmetic never differed from the reference's"


def test_a_plane_of_equal_values_far_from_zero_is_not_judged_past_its_bound() -> None:
    x = np.full((1, 4, 4, 1), 7.75, np.float16)
    scenario = _instance_normalization(x, F16, 1e-3, False)
    operation = scenario.subgraph.operations[0]
    magnitudes = bounds.instance_normalization_magnitudes(scenario, operation)
    assert magnitudes is not None and np.isinf(magnitudes).all()
    centred = _instance_normalization(np.asarray(_planes(0.0, 1), np.float16), F16, 1e-3, False)
    assert np.isfinite(bounds.instance_normalization_magnitudes(centred, centred.subgraph.operations[0])).all()


def test_the_bound_takes_the_dimensions_a_request_gives() -> None:
    x = _planes(0.0, 2).astype(np.float32)
    scenario = _instance_normalization(x, F32, 1e-2, nchw=False, batches_given_by_request=True)
    magnitudes = bounds.instance_normalization_magnitudes(scenario, scenario.subgraph.operations[0])
    assert magnitudes is not None and magnitudes.shape == x.shape and np.isfinite(magnitudes).all()
    assert bounds.magnitude_scenario(scenario) is not None
    assert bounds.terms_in_model(scenario) == 6 * 6 + 3
    _judge(_computing_in(np.float32, one_pass=True), scenario)


@pytest.mark.parametrize("name, epsilon", [("instance-normalization-ignores-layout", 1e-3),
                                           ("instance-normalization-epsilon-outside-sqrt", 1e-3),
                                           ("instance-normalization-epsilon-outside-sqrt", 1.0)])
@pytest.mark.parametrize("type, relaxed", [(F32, False), (F32, True), (F16, False)], ids=["float32", "relaxed", "float16"])
def test_the_seeded_bugs_fail(name: str, epsilon: float, type: OperandType, relaxed: bool) -> None:
    if name.endswith("outside-sqrt") and epsilon < 0.1 and (relaxed or type == F16):
        pytest.skip("epsilon 1e-3 beside a variance of about 20 moves the result by less than float16's bound")
    x = _planes(0.0, 3).astype(np.float16 if type == F16 else np.float32)
    with pytest.raises(ConformanceError, match="POOL-2"):
        _judge(MUTANTS[name].factory(), _instance_normalization(x, type, epsilon, nchw=True, relaxed=relaxed))
