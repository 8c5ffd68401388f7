"""The judge of RANDOM_MULTINOMIAL's samples: their shares against the probabilities of their
logits, within a bound that a correct driver misses at most `FALSE_ALARM_RATE` of the time."""

from __future__ import annotations

import numpy as np
import pytest

from harness.api.hal import OperandType, OperationType
from harness.judging.builders import ModelBuilder
from harness.judging.distributions import random_outputs, samples_mismatch
from harness.judging.scenario import Scenario

F32, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32
LOGITS = np.array([[0.0, np.log(3.0), np.log(4.0)], [2.0, 0.0, -1.0]], np.float32)
SAMPLES = 600


def _scenario() -> tuple[Scenario, int]:
    b = ModelBuilder()
    logits = b.constant(F32, LOGITS)
    out = b.operation(OperationType.RANDOM_MULTINOMIAL, [logits, b.scalar(SAMPLES), b.constant(I32, [1, 2])], I32,
                      (2, SAMPLES))
    return Scenario(b.subgraph(), bytes(b.values), notes=("RANDOM_MULTINOMIAL",)), out


def _drawn(probabilities: np.ndarray, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    rows = [rng.choice(probabilities.shape[1], SAMPLES, p=row) for row in probabilities]
    return np.asarray(rows, np.int32).tobytes()


def _probabilities() -> np.ndarray:
    weights = np.exp(LOGITS.astype(np.float64))
    return weights / weights.sum(axis=1, keepdims=True)


def test_the_output_of_each_random_multinomial_is_known_by_its_logits() -> None:
    scenario, out = _scenario()
    assert random_outputs(scenario.subgraph) == {out: scenario.subgraph.operations[0].inputs[0]}


@pytest.mark.parametrize("seed", range(50))
def test_samples_of_the_right_distribution_pass(seed) -> None:
    scenario, out = _scenario()
    assert samples_mismatch(scenario, out, _drawn(_probabilities(), seed)) == ""


def test_samples_of_another_distribution_fail() -> None:
    scenario, out = _scenario()
    uniform = np.full_like(_probabilities(), 1 / 3)
    assert "class" in samples_mismatch(scenario, out, _drawn(uniform, 0))


def test_a_class_outside_the_logits_fails() -> None:
    scenario, out = _scenario()
    samples = np.frombuffer(_drawn(_probabilities(), 0), np.int32).copy()
    samples[5] = 3
    assert "class 3 drawn, of 3 classes" in samples_mismatch(scenario, out, samples.tobytes())
