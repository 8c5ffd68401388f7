"""RANDOM_MULTINOMIAL (NeuralNetworks.h, HAL 1.3): samples drawn from a categorical distribution.

Each row of the input holds unnormalized log-probabilities; each output element is a class
drawn with probability proportional to ``exp(logit)``.  A class whose logit is not finite is
never drawn, as in NNAPI's CPU implementation.  NNAPI fixes the distribution, not the random
stream: which classes a driver draws for given seeds is its own (a driver is judged on the
distribution of its samples, never on their values).  The reference draws from numpy's Philox
generator keyed by the two seeds, so a run repeats, and from fresh entropy when both seeds are
0, as NNAPI says.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType

from ._numeric import FLOAT_TENSORS, KernelError, Refusal, first, scalar, type_in

I32, INT32 = OperandType.TENSOR_INT32, OperandType.INT32


def validate_random_multinomial(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    """Logits (float, rank 2), the sample count (INT32), two seeds (TENSOR_INT32 [2]); a
    TENSOR_INT32 output [batches, samples]."""
    if len(ins) != 3 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: logits, sample count and seeds; 1 output)")
    logits, seeds, output = ins[0], ins[2], outs[0]
    return first((
        type_in(ins, 0, FLOAT_TENSORS, "logits"),
        None if len(logits.dimensions) in (0, 2) else Refusal(f"logits of rank {len(logits.dimensions)} (NNAPI: 2)", 0),
        type_in(ins, 1, {INT32}, "sample count"),
        type_in(ins, 2, {I32}, "seeds"),
        None if not seeds.dimensions or list(seeds.dimensions) in ([2], [0])
        else Refusal(f"seeds of shape {list(seeds.dimensions)} (NNAPI: [2])", 2),
        None if output.type == I32 else Refusal(f"output of type {output.type.name} (NNAPI: TENSOR_INT32)", 0, True),
    ))


def run_random_multinomial(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                           out: np.ndarray | None) -> np.ndarray:
    logits, samples, seeds = values[0].astype(np.float64), scalar(values[1]), values[2].reshape(-1)
    if logits.ndim != 2 or seeds.size != 2:
        raise KernelError(f"RANDOM_MULTINOMIAL: logits of shape {logits.shape}, {seeds.size} seeds (NNAPI: rank 2, 2 seeds)")
    if samples < 0:
        raise KernelError(f"RANDOM_MULTINOMIAL: {samples} samples (NNAPI: a count)")
    batches, classes = logits.shape
    finite = np.isfinite(logits)
    if classes == 0 or not finite.any(axis=1).all():
        raise KernelError("RANDOM_MULTINOMIAL: a row with no class of finite logit to draw from")
    top = np.where(finite, logits, -np.inf).max(axis=1, keepdims=True)
    weights = np.where(finite, np.exp(np.where(finite, logits, 0.0) - top), 0.0)
    cdf = np.cumsum(weights, axis=1)
    key = [int(s) & 0xFFFFFFFF for s in seeds]
    generator = np.random.Generator(np.random.Philox(key=(key[0] << 32) | key[1]) if any(key) else np.random.Philox())
    uniform = generator.random((batches, samples)) * cdf[:, -1:]
    drawn = np.stack([np.searchsorted(cdf[b], uniform[b], side="right") for b in range(batches)]) if batches \
        else np.zeros((0, samples), np.int64)
    return np.minimum(drawn, classes - 1).astype(np.int32)


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {OperationType.RANDOM_MULTINOMIAL: (validate_random_multinomial, run_random_multinomial)}
