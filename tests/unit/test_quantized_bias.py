"""CHOICE-7's bias criterion judges how a driver rounds, over a uniform sample of values: a correct
driver one step off at one value (here a tie rounded up, as a fixed-point kernel does) is not
biased because a tensor holds that value many times, and a driver that truncates still fails."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import OperandType, OperationType
from harness.judging.builders import ModelBuilder
from harness.judging.oracle import assert_conforms, run_scenario
from harness.judging.scenario import Scenario
from harness.strategies.domains import request
from harness.plugins.mutants import MUTANTS
from harness.plugins.variants import VARIANTS
from reference_driver import ReferenceDevice

Q8 = OperandType.TENSOR_QUANT8_ASYMM


def _add(first: np.ndarray, second: np.ndarray, output_scale: float, second_zero_point: int = 0) -> Scenario:
    """first + second, both of scale 0.05 (zero points 0 and ``second_zero_point``), into
    ``output_scale`` with zero point 2."""
    builder = ModelBuilder()
    x, y = builder.input(Q8, first.shape, 0.05, 0), builder.input(Q8, second.shape, 0.05, second_zero_point)
    builder.operation(OperationType.ADD, [x, y, builder.scalar(0)], Q8, first.shape, output_scale, 2)
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=("ADD",))
    return request(model, [first, second], [first.nbytes], label="ADD")


def _judge(device, scenario: Scenario) -> None:
    assert_conforms("POOL-2", scenario, run_scenario(ReferenceDevice(), scenario), run_scenario(device, scenario))


def test_copies_of_a_tie_rounded_the_other_way_are_not_a_bias() -> None:
    # 0.05 * (0 - 0) + 0.05 * (0 - 1) = -0.05, -0.5 steps of 0.1: a tie, which the reference rounds
    # away from zero and the fixed-point variant rounds up.  64 copies of it are one element's
    # allowed step (CHOICE-7), not a bias.
    zeros = np.zeros(64, np.uint8)
    scenario = _add(zeros, zeros, 0.1, second_zero_point=1)
    fixed_point = VARIANTS["fixed-point-quantized"][0]()
    differ = run_scenario(ReferenceDevice(), scenario).outputs[0] != run_scenario(fixed_point, scenario).outputs[0]
    assert differ, "the scenario no longer shows the tie rounded the other way"
    _judge(fixed_point, scenario)


def test_truncation_over_a_uniform_sample_is_a_bias() -> None:
    sample = np.random.default_rng(0)
    first, second = (sample.integers(0, 24, 64, np.uint8, endpoint=True) for _ in range(2))
    scenario = replace(_add(first, second, 0.07), sampled_values=True)
    truncates = MUTANTS["quantized-rounding-truncates"].factory()
    with pytest.raises(ConformanceError, match="systematic rounding error"):
        _judge(truncates, scenario)
    _judge(VARIANTS["fixed-point-quantized"][0](), scenario)
