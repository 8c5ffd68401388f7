"""Outputs judged by their distribution, not their values: RANDOM_MULTINOMIAL's samples.

NNAPI fixes which distribution the samples follow (each row's classes with probability softmax of
its logits), not the random stream a driver draws them from (SPEC CHOICE-8), so two correct
drivers give different samples for the same seeds.  A driver's samples are judged against the
probabilities themselves: every sample is a class of its row, and each class's share of a row's
n samples is within ``t = sqrt(ln(2 K / FALSE_ALARM_RATE) / (2 n))`` of its probability, K the
number of (row, class) pairs.  By Hoeffding's inequality a correct driver's share misses by t or
more with probability at most ``2 exp(-2 n t**2)`` per pair, so the whole output fails a correct
driver at most `FALSE_ALARM_RATE` of the time, whatever the distribution.
"""

from __future__ import annotations

import math

import numpy as np

from harness.api.hal import OperationType, Subgraph, numpy_dtype
from harness.judging.bounds import operand_value
from harness.judging.scenario import Scenario

__all__ = ["FALSE_ALARM_RATE", "random_outputs", "samples_mismatch"]

#: The chance that a correct driver's samples fail one judged output.
FALSE_ALARM_RATE = 1e-6


def random_outputs(subgraph: Subgraph) -> dict[int, int]:
    """Output operand -> the operand of its logits, for each RANDOM_MULTINOMIAL of ``subgraph``."""
    return {operation.outputs[0]: operation.inputs[0] for operation in subgraph.operations
            if operation.type == OperationType.RANDOM_MULTINOMIAL and operation.outputs and operation.inputs}


def samples_mismatch(scenario: Scenario, output: int, actual: bytes) -> str:
    """Empty when the samples ``actual`` of RANDOM_MULTINOMIAL output ``output`` follow its logits'
    distribution within the bound above; otherwise what does not.  Logits the scenario does not
    hold (computed by another operation, in a driver-managed buffer) leave only the classes' range
    judged."""
    logits_at = random_outputs(scenario.subgraph)[output]
    logits_operand = scenario.subgraph.operands[logits_at]
    stored = operand_value(scenario, logits_at)
    samples = np.frombuffer(actual, numpy_dtype(scenario.subgraph.operands[output].type))
    dims = logits_operand.dimensions
    if stored is None or len(dims) != 2 or not all(dims):
        return ""
    logits = stored.astype(np.float64).reshape(dims)
    rows, classes = logits.shape
    if samples.size % rows:
        return f"{samples.size} samples for {rows} rows of logits"
    samples = samples.reshape(rows, -1)
    drawn = samples.shape[1]
    outside = samples[(samples < 0) | (samples >= classes)]
    if outside.size:
        return f"class {int(outside[0])} drawn, of {classes} classes"
    if not drawn:
        return ""
    finite = np.isfinite(logits)
    weights = np.where(finite, np.exp(np.where(finite, logits, 0.0) - np.where(finite, logits, -np.inf).max(axis=1, keepdims=True)), 0.0)
    probabilities = weights / weights.sum(axis=1, keepdims=True)
    share = np.stack([np.bincount(row.astype(np.int64), minlength=classes) for row in samples]) / drawn
    bound = math.sqrt(math.log(2 * rows * classes / FALSE_ALARM_RATE) / (2 * drawn))
    off = np.argwhere(np.abs(share - probabilities) > bound)
    if not off.size:
        return ""
    row, c = (int(v) for v in off[0])
    return (f"row {row}: class {c} is {share[row, c]:.3f} of {drawn} samples, its probability {probabilities[row, c]:.3f} "
            f"(a correct driver's share is within {bound:.3f} of it but {FALSE_ALARM_RATE:g} of the time); "
            f"{len(off)} (row, class) pairs beyond it")
