"""The reference's RNN, SVDF and sequence RNNs against loops written out here from NeuralNetworks.h's
definitions (element by element, not the reference's kernels), through whole executions: state
outputs, both time layouts, merged outputs, the auxiliary input's two linkings, operands given no
value; and validation of NNAPI's operand rules."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.hal import DriverError, ErrorStatus, Operand, OperandLifeTime, OperandType, OperationType, is_scalar_type, numpy_dtype
from harness.judging.builders import ModelBuilder, run_outputs
from reference_driver import ReferenceDevice

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
INT32, BOOL = OperandType.INT32, OperandType.BOOL
Op = OperationType
NONE, RELU, RELU1, RELU6 = range(4)


def execute(op, operands, outputs):
    """``op`` on ``operands`` [(type, value)]: tensors are model inputs (None: given no value by the
    request), scalars constants; ``outputs`` [type] of unknown shape.  Each output as reported."""
    b = ModelBuilder()
    indexes, feeds = [], []
    for kind, value in operands:
        if is_scalar_type(kind):
            indexes.append(b.constant(kind, value))
            continue
        indexes.append(b.input(kind, (0,) if value is None else np.shape(value)))
        feeds.append(None if value is None else np.asarray(value, numpy_dtype(kind)))
    b.operation_outputs(op, indexes, [(kind, (), 0.0, 0) for kind in outputs])
    return [value.astype(np.float64) for value in run_outputs(ReferenceDevice(), b.build(), feeds)]


def act(value, code):
    return [value, max(value, 0.0), min(max(value, -1.0), 1.0), min(max(value, 0.0), 6.0)][code]


def rnn_step(x, weights, recurrent, bias, hidden, code, aux=None, aux_weights=None):
    """NNAPI's RNN: h[b][u] = act(Σi x[b][i]·W[u][i] + Σj h_prev[b][j]·R[u][j] + bias[u] (+ Σk aux[b][k]·A[u][k]))."""
    batches, units = len(x), len(weights)
    out = np.zeros((batches, units))
    for b in range(batches):
        for u in range(units):
            total = bias[u] + sum(x[b][i] * weights[u][i] for i in range(len(x[b])))
            total += sum(hidden[b][j] * recurrent[u][j] for j in range(units))
            if aux is not None:
                total += sum(aux[b][k] * aux_weights[u][k] for k in range(len(aux[b])))
            out[b][u] = act(total, code)
    return out


def arrays(rng, *shapes):
    return [rng.uniform(-1, 1, shape).astype(np.float32) for shape in shapes]


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), batches=st.integers(1, 3), size=st.integers(1, 4), units=st.integers(1, 4),
       code=st.sampled_from([NONE, RELU, RELU1, RELU6]))
def test_rnn_gives_the_new_hidden_state_as_both_outputs(seed, batches, size, units, code) -> None:
    x, w, r, bias, h = arrays(np.random.default_rng(seed), (batches, size), (units, size), (units, units), (units,),
                              (batches, units))
    state, output = execute(Op.RNN, [(F32, x), (F32, w), (F32, r), (F32, bias), (F32, h), (INT32, code)], [F32, F32])
    want = rnn_step(x, w, r, bias, h, code)
    np.testing.assert_allclose(output, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(state, want, rtol=1e-5, atol=1e-5)


def test_rnn_in_float16_rounds_the_float_result() -> None:
    x, w, r, bias, h = arrays(np.random.default_rng(1), (2, 3), (4, 3), (4, 4), (4,), (2, 4))
    args = [(F16, v.astype(np.float16)) for v in (x, w, r, bias, h)]
    _, output = execute(Op.RNN, [*args, (INT32, RELU)], [F16, F16])
    want = rnn_step(*(v.astype(np.float16).astype(np.float64) for v in (x, w, r, bias, h)), RELU)
    np.testing.assert_allclose(output, want, rtol=2e-3, atol=2e-3)


def svdf_step(x, features, times, bias, state, rank, code):
    """NNAPI's SVDF: per batch and filter a window of memory_size activations, oldest first."""
    batches, filters, memory = len(x), len(features), len(times[0])
    units = filters // rank
    window = [[[state[b][f * memory + m] for m in range(memory - 1)]
               + [sum(features[f][i] * x[b][i] for i in range(len(x[b])))] for f in range(filters)]
              for b in range(batches)]
    out = np.zeros((batches, units))
    for b in range(batches):
        for u in range(units):
            total = bias[u] if bias is not None else 0.0
            for f in range(u * rank, (u + 1) * rank):
                total += sum(times[f][m] * window[b][f][m] for m in range(memory))
            out[b][u] = act(total, code)
    state_out = np.zeros((batches, filters * memory))
    for b in range(batches):
        for f in range(filters):
            for m in range(memory - 1):
                state_out[b][f * memory + m] = window[b][f][m + 1]
    return state_out, out


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), batches=st.integers(1, 2), size=st.integers(1, 3), units=st.integers(1, 3),
       rank=st.integers(1, 2), memory=st.integers(1, 4), with_bias=st.booleans(), code=st.sampled_from([NONE, RELU]))
def test_svdf_filters_its_window_and_shifts_the_state(seed, batches, size, units, rank, memory, with_bias, code) -> None:
    filters = units * rank
    x, features, times, bias, state = arrays(np.random.default_rng(seed), (batches, size), (filters, size),
                                             (filters, memory), (units,), (batches, filters * memory))
    got_state, got = execute(Op.SVDF, [(F32, x), (F32, features), (F32, times), (F32, bias if with_bias else None),
                                       (F32, state), (INT32, rank), (INT32, code)], [F32, F32])
    want_state, want = svdf_step(x, features, times, bias if with_bias else None, state, rank, code)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_state, want_state, rtol=1e-5, atol=1e-5)


def run_sequence(xs, weights, recurrent, bias, hidden, code, reverse=False, aux=None, aux_weights=None):
    """The RNN step over time ([time][batch][…]); the outputs per step and the last hidden state."""
    outputs = [None] * len(xs)
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for t in order:
        hidden = outputs[t] = rnn_step(xs[t], weights, recurrent, bias, hidden, code,
                                       None if aux is None else aux[t], aux_weights)
    return np.array(outputs), hidden


@pytest.mark.parametrize("time_major", [0, 1])
@pytest.mark.parametrize("with_state", [False, True])
def test_unidirectional_rnn_runs_over_time_in_either_layout(time_major, with_state) -> None:
    steps, batches, size, units = 3, 2, 3, 4
    x, w, r, bias, h = arrays(np.random.default_rng(7), (steps, batches, size), (units, size), (units, units),
                              (units,), (batches, units))
    laid = x if time_major else x.transpose(1, 0, 2)
    got = execute(Op.UNIDIRECTIONAL_SEQUENCE_RNN, [(F32, laid), (F32, w), (F32, r), (F32, bias), (F32, h),
                                                   (INT32, RELU6), (INT32, time_major)], [F32] * (1 + with_state))
    outputs, last = run_sequence(x, w, r, bias, h, RELU6)
    np.testing.assert_allclose(got[0], outputs if time_major else outputs.transpose(1, 0, 2), rtol=1e-5, atol=1e-5)
    if with_state:
        np.testing.assert_allclose(got[1], last, rtol=1e-5, atol=1e-5)


def bidirectional_operands(rng, steps, batches, size, units, aux_size, linking):
    x, aux = arrays(rng, (steps, batches, size), (steps, batches, aux_size))
    bw_size = aux_size if linking == "parallel" else size
    fw = arrays(rng, (units, size), (units, units), (units,), (batches, units))
    bw = arrays(rng, (units + 1, bw_size), (units + 1, units + 1), (units + 1,), (batches, units + 1))
    aux_weights = arrays(rng, (units, aux_size), (units + 1, aux_size)) if linking == "cross" else [None, None]
    return x, fw, bw, (aux if linking else None), aux_weights


@pytest.mark.parametrize("linking", [None, "cross", "parallel"])
@pytest.mark.parametrize("time_major, merge, with_state", [(True, False, False), (False, True, True),
                                                            (True, True, False), (False, False, True)])
def test_bidirectional_rnn_runs_both_directions(linking, time_major, merge, with_state) -> None:
    steps, batches, size, units, aux_size = 3, 2, 2, 2, 3
    x, fw, bw, aux, (fw_aux, bw_aux) = bidirectional_operands(np.random.default_rng(3), steps, batches, size, units,
                                                              aux_size, linking)
    lay = (lambda a: a) if time_major else (lambda a: None if a is None else a.transpose(1, 0, 2))
    operands = [(F32, lay(x)), *((F32, v) for v in fw), *((F32, v) for v in bw), (F32, lay(aux)), (F32, fw_aux),
                (F32, bw_aux), (INT32, RELU), (BOOL, time_major), (BOOL, merge)]
    count = (1 if merge else 2) + (2 if with_state else 0)
    got = execute(Op.BIDIRECTIONAL_SEQUENCE_RNN, operands, [F32] * count)
    cross = aux if linking == "cross" else None
    fw_out, fw_last = run_sequence(x, *fw, RELU, aux=cross, aux_weights=fw_aux)
    bw_out, bw_last = run_sequence(aux if linking == "parallel" else x, *bw, RELU, reverse=True, aux=cross,
                                   aux_weights=bw_aux)
    want = [np.concatenate((fw_out, bw_out), axis=2)] if merge else [fw_out, bw_out]
    want = [lay(w) for w in want] + ([fw_last, bw_last] if with_state else [])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_bidirectional_rnn_fails_outputs_that_do_not_match_merge_outputs() -> None:
    x, fw, bw, _, _ = bidirectional_operands(np.random.default_rng(5), 2, 1, 2, 2, 2, None)
    operands = [(F32, x), *((F32, v) for v in fw), *((F32, v) for v in bw), (F32, None), (F32, None), (F32, None),
                (INT32, NONE), (BOOL, True), (BOOL, True)]
    with pytest.raises(DriverError) as failed:
        execute(Op.BIDIRECTIONAL_SEQUENCE_RNN, operands, [F32, F32])  # merged: 1 output, or 3 with the states
    assert failed.value.status == ErrorStatus.GENERAL_FAILURE


def refusal(op, operands, outputs):
    """prepare_model's refusal of ``op`` on constant ``operands`` [(type, value)] (None: no value)."""
    b = ModelBuilder()
    indexes = []
    for kind, value in operands:
        if value is None:
            b.operands.append(Operand(kind, (), 0.0, 0, OperandLifeTime.NO_VALUE))
            indexes.append(len(b.operands) - 1)
        else:
            indexes.append(b.constant(kind, value))
    b.operation_outputs(op, indexes, [(kind, dims, 0.0, 0) for kind, dims in outputs])
    with pytest.raises(DriverError) as refused:
        ReferenceDevice().prepare_model(b.build())
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    return str(refused.value)


RNN_CELL = [np.zeros((1, 2)), np.zeros((3, 2)), np.zeros((3, 3)), np.zeros(3), np.zeros((1, 3))]


@pytest.mark.parametrize("op, operands, outputs, feature", [
    (Op.RNN, [(I32, RNN_CELL[0]), *((F32, v) for v in RNN_CELL[1:]), (INT32, 0)], [(F32, ()), (F32, ())],
     "input of type TENSOR_INT32"),
    (Op.RNN, [*((F32, v) for v in RNN_CELL), (INT32, 0)], [(F16, ()), (F32, ())], "type TENSOR_FLOAT16 differs"),
    (Op.RNN, [*((F32, v) for v in RNN_CELL[:3]), (F32, np.zeros((1, 3))), (F32, RNN_CELL[4]), (INT32, 0)],
     [(F32, ()), (F32, ())], "rank 2 (NNAPI: 1)"),
    (Op.RNN, [*((F32, v) for v in RNN_CELL[:3]), (F32, None), (F32, RNN_CELL[4]), (INT32, 0)],
     [(F32, ()), (F32, ())], "bias given no value (NNAPI: required)"),
    (Op.SVDF, [(F32, np.zeros((1, 2))), (F32, None), (F32, np.zeros((3, 2))), (F32, None), (F32, np.zeros((1, 6))),
               (INT32, 1), (INT32, 0)], [(F32, ()), (F32, ())], "weights_feature given no value"),
    (Op.SVDF, [*((F32, v) for v in (np.zeros((1, 2)), np.zeros((3, 2)), np.zeros((3, 2)), np.zeros(3), np.zeros((1, 6)))),
               (OperandType.FLOAT32, 1.0), (INT32, 0)], [(F32, ()), (F32, ())], "rank of type FLOAT32"),
    (Op.UNIDIRECTIONAL_SEQUENCE_RNN, [(F32, np.zeros((1, 1, 2))), *((F32, v) for v in RNN_CELL[1:]), (INT32, 0),
                                      (BOOL, True)], [(F32, ())], "time-major flag of type BOOL"),
    (Op.UNIDIRECTIONAL_SEQUENCE_RNN, [*((F32, v) for v in RNN_CELL), (INT32, 0), (INT32, 1)], [(F32, ())],
     "rank 2 (NNAPI: 3)"),
    (Op.BIDIRECTIONAL_SEQUENCE_RNN, [(F32, np.zeros((1, 1, 2))), *((F32, v) for v in RNN_CELL[1:] * 2),
                                     (F32, np.zeros((1, 1, 2))), (F32, np.zeros((3, 2))), (F32, None), (INT32, 0),
                                     (BOOL, True), (BOOL, False)], [(F32, ()), (F32, ())],
     "one auxiliary weights tensor given without the other"),
    (Op.BIDIRECTIONAL_SEQUENCE_RNN, [(F32, np.zeros((1, 1, 2))), *((F32, v) for v in RNN_CELL[1:] * 2),
                                     (F32, None), (F32, np.zeros((3, 2))), (F32, np.zeros((3, 2))), (INT32, 0),
                                     (BOOL, True), (BOOL, False)], [(F32, ()), (F32, ())],
     "auxiliary weights without an auxiliary input"),
    (Op.BIDIRECTIONAL_SEQUENCE_RNN, [(F32, np.zeros((1, 1, 2))), *((F32, v) for v in RNN_CELL[1:] * 2),
                                     (F32, None), (F32, None), (F32, None), (INT32, 0), (INT32, 1), (BOOL, False)],
     [(F32, ()), (F32, ())], "time-major flag of type INT32"),
])
def test_refusals_name_the_operand_and_the_feature(op, operands, outputs, feature) -> None:
    assert feature in refusal(op, operands, outputs)
