"""The reference's lookup operations and RANDOM_MULTINOMIAL: EMBEDDING_LOOKUP and HASHTABLE_LOOKUP
against loops written out here, LSH_PROJECTION against NNAPI's definition computed with Google's
FarmHash (pyfarmhash, not the reference's own fingerprint), RANDOM_MULTINOMIAL by the
distribution of its samples; and validation of NeuralNetworks.h's operand rules."""

from __future__ import annotations


import farmhash
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.hal import DriverError, ErrorStatus, OperandType, OperationType, numpy_dtype
from harness.judging.builders import ModelBuilder, run_outputs
from reference_driver import ReferenceDevice
from reference_driver.ops._fingerprint import fingerprint64

F16, F32, I32 = OperandType.TENSOR_FLOAT16, OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32
QU8, INT32 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.INT32
Op = OperationType


def run(op, inputs, outputs, constants=()):
    """``op`` on model inputs [(type, value, scale, zeroPoint) or (type, None, dims)] then
    ``constants`` [(type, value)], outputs [(type, dims, scale, zeroPoint)]; each output as reported."""
    b = ModelBuilder()
    indexes, values = [], []
    for t, value, *rest in inputs:
        dims = rest[0] if value is None else np.shape(value)
        quant = rest if value is not None and len(rest) == 2 else (0.0, 0)
        indexes.append(b.input(t, dims, *quant))
        values.append(None if value is None else np.asarray(value, numpy_dtype(t)))
    indexes += [b.constant(t, v) for t, v in constants]
    b.operation_outputs(op, indexes, outputs)
    return run_outputs(ReferenceDevice(), b.build(), values)


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=200))
def test_the_fingerprint_is_farmhash_fingerprint64(data) -> None:
    assert fingerprint64(data) == farmhash.fingerprint64(data)


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 5), width=st.integers(1, 3), picks=st.lists(st.integers(0, 4), min_size=1, max_size=6))
def test_embedding_lookup_takes_the_rows_named(rows, width, picks) -> None:
    picks = [p % rows for p in picks]
    table = np.arange(rows * width * 2, dtype=np.float32).reshape(rows, width, 2)
    got, = run(Op.EMBEDDING_LOOKUP, [(I32, picks), (F32, table)], [(F32, (0, 0, 0), 0.0, 0)])
    assert got.shape == (len(picks), width, 2)
    for i, p in enumerate(picks):
        for j in range(width):
            for k in range(2):
                assert got[i, j, k] == table[p, j, k]


def test_embedding_lookup_fails_an_index_outside_the_rows() -> None:
    with pytest.raises(DriverError) as failed:
        run(Op.EMBEDDING_LOOKUP, [(I32, [0, 3]), (F32, np.zeros((3, 2)))], [(F32, (2, 2), 0.0, 0)])
    assert failed.value.status == ErrorStatus.GENERAL_FAILURE


@settings(max_examples=20, deadline=None)
@given(keys=st.lists(st.integers(-50, 50), min_size=1, max_size=6, unique=True),
       lookups=st.lists(st.integers(-50, 50), min_size=1, max_size=6), quantized=st.booleans())
def test_hashtable_lookup_finds_each_key_or_gives_zero_bytes(keys, lookups, quantized) -> None:
    keys = sorted(keys)
    t, quant = (QU8, (0.5, 7)) if quantized else (F32, (0.0, 0))
    table = (np.arange(len(keys) * 2).reshape(len(keys), 2) + 10).astype(numpy_dtype(t))
    got, hits = run(Op.HASHTABLE_LOOKUP, [(I32, lookups), (I32, keys), (t, table, *quant)],
                    [(t, (0, 0), *quant), (QU8, (0,), 1.0, 0)])
    for i, wanted in enumerate(lookups):
        row = next((r for r, key in enumerate(keys) if key == wanted), None)
        assert hits[i] == (0 if row is None else 1)
        assert list(got[i]) == ([0, 0] if row is None else list(table[row]))


def test_hashtable_lookup_refuses_keys_out_of_order() -> None:
    with pytest.raises(DriverError) as failed:
        run(Op.HASHTABLE_LOOKUP, [(I32, [1]), (I32, [3, 1]), (F32, np.ones((2, 2)))],
            [(F32, (1, 2), 0.0, 0), (QU8, (1,), 1.0, 0)])
    assert failed.value.status == ErrorStatus.GENERAL_FAILURE


def _projection(seeds, items, weights, kind):
    """NNAPI's LSH_PROJECTION written out: a sign bit per seed from weighted int64 fingerprints."""
    bits = []
    for f in range(seeds.shape[0]):
        row = []
        for b in range(seeds.shape[1]):
            score = 0.0
            for i, item in enumerate(items):
                h = farmhash.fingerprint64(np.float32(seeds[f, b]).tobytes() + item.tobytes())
                h = h - (1 << 64) if h >= 1 << 63 else h
                score += (1.0 if weights is None else float(weights[i])) * float(h)
            row.append(1 if score > 0 else 0)
        bits.append(row)
    if kind == 2:
        return [bit for row in bits for bit in row]
    packed = [int("".join(map(str, row)), 2) for row in bits]
    return [p + (f << seeds.shape[1] if kind == 3 else 0) for f, p in enumerate(packed)]


@settings(max_examples=15, deadline=None)
@given(functions=st.integers(1, 4), bits=st.integers(1, 4), items=st.integers(1, 3), kind=st.sampled_from([1, 2, 3]),
       weighted=st.booleans(), seed=st.integers(0, 2**16))
def test_lsh_projection_follows_nnapis_definition(functions, bits, items, kind, weighted, seed) -> None:
    rng = np.random.default_rng(seed)
    seeds = rng.uniform(-10, 10, (functions, bits)).astype(np.float32)
    lookup = rng.integers(-10**6, 10**6, (items, 2)).astype(np.int32)
    weights = rng.uniform(-1, 1, items).astype(np.float32) if weighted else None
    size = functions * bits if kind == 2 else functions
    got, = run(Op.LSH_PROJECTION, [(F32, seeds), (I32, lookup), (F32, weights, (items,))], [(I32, (size,), 0.0, 0)],
               constants=[(INT32, kind)])
    assert list(got) == _projection(seeds, list(lookup), weights, kind)


def test_random_multinomial_draws_by_the_exponentiated_logits() -> None:
    # three classes of probability 1/8, 3/8, 1/2 and one of infinite negative logit, never drawn
    logits = np.array([[0.0, np.log(3.0), np.log(4.0), -np.inf]], np.float32)
    samples = 4000
    got, = run(Op.RANDOM_MULTINOMIAL, [(F32, logits)], [(I32, (1, samples), 0.0, 0)],
               constants=[(INT32, samples), (I32, [3, 11])])
    counts = np.bincount(got.reshape(-1), minlength=4)
    assert counts[3] == 0 and counts.sum() == samples
    expected = samples * np.array([1, 3, 4]) / 8
    # Pearson's statistic against chi-squared with 2 degrees of freedom: above 13.8 one time in 1000
    statistic = float(((counts[:3] - expected) ** 2 / expected).sum())
    assert statistic < 13.8, (counts, expected)


def test_random_multinomial_repeats_for_the_same_seeds() -> None:
    logits = np.zeros((2, 5), np.float32)
    first, second = (run(Op.RANDOM_MULTINOMIAL, [(F32, logits)], [(I32, (2, 30), 0.0, 0)],
                         constants=[(INT32, 30), (I32, [5, 9])])[0] for _ in range(2))
    assert first.shape == (2, 30) and ((0 <= first) & (first < 5)).all()
    assert (first == second).all()


@pytest.mark.parametrize("op, inputs, outputs, feature", [
    (Op.EMBEDDING_LOOKUP, [(F32, (2,)), (F32, (3, 2))], [(F32, (2, 2), 0.0, 0)], "lookups of type TENSOR_FLOAT32"),
    (Op.EMBEDDING_LOOKUP, [(I32, (2,)), (F32, (3,))], [(F32, (2,), 0.0, 0)], "values of rank 1"),
    (Op.EMBEDDING_LOOKUP, [(I32, (2,)), (QU8, (3, 2), 0.5, 1)], [(QU8, (2, 2), 0.25, 1)], "scale and zeroPoint"),
    (Op.HASHTABLE_LOOKUP, [(I32, (2,)), (I32, (3,)), (F32, (3, 2))], [(F32, (2, 2), 0.0, 0), (I32, (2,), 0.0, 0)],
     "hits of type TENSOR_INT32"),
    (Op.HASHTABLE_LOOKUP, [(I32, (2,)), (I32, (3,)), (F16, (3, 2))], [(F16, (2, 2), 0.0, 0), (QU8, (2,), 1.0, 0)],
     "values of type TENSOR_FLOAT16"),
    (Op.LSH_PROJECTION, [(F32, (2, 33)), (I32, (3, 2)), (F32, (3,)), (INT32, ())], [(I32, (2,), 0.0, 0)],
     "33 bits per function"),
    (Op.LSH_PROJECTION, [(F32, (2, 2, 1)), (I32, (3, 2)), (F32, (3,)), (INT32, ())], [(I32, (2,), 0.0, 0)],
     "hash of rank 3"),
    (Op.LSH_PROJECTION, [(F32, (2, 2)), (I32, (3, 2)), (F16, (3,)), (INT32, ())], [(I32, (2,), 0.0, 0)],
     "weight of type TENSOR_FLOAT16"),
    (Op.RANDOM_MULTINOMIAL, [(F32, (2, 3)), (INT32, ()), (I32, (3,))], [(I32, (2, 4), 0.0, 0)], "seeds of shape [3]"),
    (Op.RANDOM_MULTINOMIAL, [(F32, (2, 3)), (INT32, ()), (I32, (2,))], [(F32, (2, 4), 0.0, 0)],
     "output of type TENSOR_FLOAT32"),
])
def test_refusals_name_the_operand_and_the_feature(op, inputs, outputs, feature) -> None:
    b = ModelBuilder()
    indexes = [b.input(t, dims, *quant) for t, dims, *quant in inputs]
    b.operation_outputs(op, indexes, outputs)
    with pytest.raises(DriverError) as refused:
        ReferenceDevice().prepare_model(b.build())
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT and feature in str(refused.value)
