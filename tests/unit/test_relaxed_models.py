"""A relaxed model (relaxComputationFloat32toFloat16) lets a driver compute TENSOR_FLOAT32 in
float16: the judge then takes float16's eps, and only for such a model.  Its flag reaches the
driver with the scenario's requests (the request builder keeps it), and a value past float16's
range, which float16 cannot hold, is not judged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import OperandType, OperationType
from harness.judging.builders import ModelBuilder
from harness.judging.oracle import assert_conforms, compare_values, run_scenario
from harness.judging.scenario import Scenario
from harness.strategies.domains import request
from harness.plugins.mutants import MUTANTS
from harness.plugins.variants import VARIANTS
from reference_driver import ReferenceDevice

F32 = OperandType.TENSOR_FLOAT32


def _mul(a: np.ndarray, b: np.ndarray, relaxed: bool) -> Scenario:
    builder = ModelBuilder()
    x, y = builder.input(F32, a.shape), builder.input(F32, b.shape)
    builder.operation(OperationType.MUL, [x, y, builder.scalar(0)], F32, a.shape)
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=("MUL",), relaxed=relaxed)
    return request(model, [a, b], [a.nbytes])


def _judge(device, scenario: Scenario) -> None:
    assert_conforms("POOL-2", scenario, run_scenario(ReferenceDevice(), scenario), run_scenario(device, scenario))


def _values() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.uniform(-8, 8, 200).astype(np.float32), rng.uniform(-8, 8, 200).astype(np.float32)


def test_a_relaxed_model_reaches_the_driver_and_float16_is_accepted_there_only() -> None:
    a, b = _values()
    relaxed, strict = _mul(a, b, relaxed=True), _mul(a, b, relaxed=False)
    assert relaxed.build_model().relax_computation_float32_to_float16
    variant = VARIANTS["relaxed-float32-in-float16"][0]()
    outcome = run_scenario(variant, relaxed)
    assert outcome.outputs[0] != run_scenario(ReferenceDevice(), relaxed).outputs[0], "the variant computed in float16"
    _judge(variant, relaxed)
    _judge(variant, strict)  # without the flag it is the reference
    with pytest.raises(ConformanceError, match="POOL-2"):  # float16 results where the model is not relaxed
        _judge(MUTANTS["float32-computed-in-float16"].factory(), strict)


def test_a_relaxed_path_that_loses_values_fails() -> None:
    a, b = _values()
    with pytest.raises(ConformanceError, match="POOL-2"):
        _judge(MUTANTS["relaxed-inputs-cut-at-64-elements"].factory(), _mul(a, b, relaxed=True))
    _judge(MUTANTS["relaxed-inputs-cut-at-64-elements"].factory(), _mul(a[:64], b[:64], relaxed=True))


def test_past_float16_range_a_relaxed_output_is_not_judged() -> None:
    expected = np.array([1.0e5, 2.0], np.float32)
    infinite = np.array([np.inf, 2.0], np.float32)
    assert compare_values(F32, expected.tobytes(), infinite.tobytes(), relaxed=True) == ""
    assert compare_values(F32, expected.tobytes(), infinite.tobytes(), relaxed=False) != ""
    wrong = np.array([np.inf, 2.5], np.float32)
    assert "element 1" in compare_values(F32, expected.tobytes(), wrong.tobytes(), relaxed=True)
