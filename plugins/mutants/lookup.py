"""Seeded bugs of the lookup operations (EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION):
each computes one NNAPI rule wrongly, and the generated suites' models of its family catch it
(OPS-1: the operation's values, whatever the test's theme)."""

from __future__ import annotations

import numpy as np

from harness.api.hal import OperationType
from reference_driver.ops import lookup
from reference_driver.ops._fingerprint import fingerprint64, signed
from reference_driver.ops._numeric import scalar

from ._registry import mutant, with_kernels


@mutant("embedding-lookup-rows-of-last-axis", "OPS-1",
        "EMBEDDING_LOOKUP sizes a row by the values' last dimension, as if they were 2-D: a row of rank-3 values is "
        "copied in part, the rest of the output taken from the following rows' start",
        operations=(OperationType.EMBEDDING_LOOKUP,))
def embedding_lookup_rows_of_last_axis():
    def run(values, ins, out_op, out):
        lookups, table = values[0].reshape(-1), values[1]
        row = table.shape[-1]
        flat = table.reshape(-1)
        whole = int(np.prod(table.shape[1:]))
        taken = np.zeros((lookups.size, whole), table.dtype)
        for i, index in enumerate(lookups):
            start = int(index) * row
            part = flat[start:start + whole]
            taken[i, :part.size] = part
        return taken.reshape(lookups.size, *table.shape[1:])

    return with_kernels({OperationType.EMBEDDING_LOOKUP: run})


@mutant("embedding-lookup-unique-sorted", "OPS-1",
        "EMBEDDING_LOOKUP gathers each distinct row once, in index order (a set of the lookups), not one row per "
        "lookup in the lookups' order",
        operations=(OperationType.EMBEDDING_LOOKUP,))
def embedding_lookup_unique_sorted():
    def run(values, ins, out_op, out):
        lookups = values[0].reshape(-1)
        distinct = np.unique(lookups)
        rows = values[1][distinct]
        # padded with the last row to the output's length, which the model declares
        return np.concatenate([rows, np.repeat(rows[-1:], lookups.size - distinct.size, axis=0)]) if rows.size else rows

    return with_kernels({OperationType.EMBEDDING_LOOKUP: run})


@mutant("hashtable-lookup-miss-takes-next-row", "OPS-1",
        "HASHTABLE_LOOKUP takes the row where a binary search would insert a missing key (the next larger key's) "
        "without checking that the key there is equal, so a miss is a hit of the wrong row",
        operations=(OperationType.HASHTABLE_LOOKUP,))
def hashtable_lookup_miss_takes_next_row():
    def run(values, ins, out_op, out):
        lookups, keys, table = values[0].reshape(-1), values[1].reshape(-1), values[2]
        at = np.searchsorted(keys, lookups)
        found = at < keys.size
        rows = np.zeros((lookups.size, *table.shape[1:]), table.dtype)
        rows[found] = table[at[found]]
        return rows, found.astype(np.uint8)

    return with_kernels({OperationType.HASHTABLE_LOOKUP: run})


@mutant("lsh-projection-sparse-without-offset", "OPS-1",
        "LSH_PROJECTION of type SPARSE (3) packs each function's bits without adding k << bits for the k-th function, "
        "the behaviour of SPARSE_DEPRECATED (1)",
        operations=(OperationType.LSH_PROJECTION,))
def lsh_projection_sparse_without_offset():
    def run(values, ins, out_op, out):
        kind = scalar(values[3])
        legacy = np.asarray(lookup.SPARSE_DEPRECATED if kind == lookup.SPARSE else kind, values[3].dtype)
        return lookup.run_lsh_projection([*values[:3], legacy], ins, out_op, out)

    return with_kernels({OperationType.LSH_PROJECTION: run})


@mutant("lsh-projection-weights-ignored", "OPS-1",
        "LSH_PROJECTION sums the items' fingerprints with weight 1 even when the weights are given",
        operations=(OperationType.LSH_PROJECTION,))
def lsh_projection_weights_ignored():
    def run(values, ins, out_op, out):
        return lookup.run_lsh_projection([values[0], values[1], np.zeros(0, values[2].dtype), values[3]], ins, out_op, out)

    return with_kernels({OperationType.LSH_PROJECTION: run})


@mutant("lsh-projection-seed-as-double", "OPS-1",
        "LSH_PROJECTION prefixes each item with the seed's 8 bytes as a double, not its 4 bytes as a float",
        operations=(OperationType.LSH_PROJECTION,))
def lsh_projection_seed_as_double():
    def run(values, ins, out_op, out):
        hashes, x, weights, kind = values[0], values[1], values[2], scalar(values[3])
        items = [np.ascontiguousarray(x)[i].tobytes() for i in range(x.shape[0])]
        w = weights.astype(np.float64) if weights.size else None
        bits = []
        for seed in hashes.astype(np.float32).reshape(-1):
            prefix = np.float64(seed).tobytes()
            score = sum((1.0 if w is None else float(w[i])) * float(signed(fingerprint64(prefix + item)))
                        for i, item in enumerate(items))
            bits.append(1 if score > 0 else 0)
        signs = np.asarray(bits, np.int64).reshape(hashes.shape)
        if kind == lookup.DENSE:
            return signs.reshape(-1).astype(np.int32)
        functions, width = hashes.shape
        packed = (signs << np.arange(width - 1, -1, -1, dtype=np.int64)).sum(axis=1)
        if kind == lookup.SPARSE:
            packed = packed + np.arange(functions, dtype=np.int64) * (1 << width)
        return packed.astype(np.int32)

    return with_kernels({OperationType.LSH_PROJECTION: run})


def _draw(probabilities: np.ndarray, samples: int, seeds: np.ndarray) -> np.ndarray:
    """``samples`` classes per row of ``probabilities``, from a generator keyed by the seeds."""
    generator = np.random.default_rng([int(s) & 0xFFFFFFFF for s in seeds.reshape(-1)])
    cdf = np.cumsum(probabilities, axis=1)
    uniform = generator.random((probabilities.shape[0], samples)) * cdf[:, -1:]
    drawn = np.stack([np.searchsorted(cdf[r], uniform[r], side="right") for r in range(probabilities.shape[0])])
    return np.minimum(drawn, probabilities.shape[1] - 1).astype(np.int32)


@mutant("random-multinomial-uniform", "OPS-1",
        "RANDOM_MULTINOMIAL draws every class with the same probability, whatever the logits",
        operations=(OperationType.RANDOM_MULTINOMIAL,))
def random_multinomial_uniform():
    def run(values, ins, out_op, out):
        logits = np.asarray(values[0], np.float64)
        return _draw(np.ones_like(logits), scalar(values[1]), values[2])

    return with_kernels({OperationType.RANDOM_MULTINOMIAL: run})


@mutant("random-multinomial-logits-as-probabilities", "OPS-1",
        "RANDOM_MULTINOMIAL reads its input as probabilities (negative ones as 0), not as log-probabilities",
        operations=(OperationType.RANDOM_MULTINOMIAL,))
def random_multinomial_logits_as_probabilities():
    def run(values, ins, out_op, out):
        weights = np.maximum(np.asarray(values[0], np.float64), 0.0)
        weights[weights.sum(axis=1) == 0] = 1.0  # a row of no positive value: uniform
        return _draw(weights, scalar(values[1]), values[2])

    return with_kernels({OperationType.RANDOM_MULTINOMIAL: run})


@mutant("random-multinomial-last-class-never-drawn", "OPS-1",
        "RANDOM_MULTINOMIAL's search through the cumulative probabilities stops one class short: the last class is "
        "never drawn, its share going to the one before",
        operations=(OperationType.RANDOM_MULTINOMIAL,))
def random_multinomial_last_class_never_drawn():
    def run(values, ins, out_op, out):
        logits = np.asarray(values[0], np.float64)
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        drawn = _draw(weights, scalar(values[1]), values[2])
        return np.minimum(drawn, logits.shape[1] - 2).astype(np.int32)

    return with_kernels({OperationType.RANDOM_MULTINOMIAL: run})
