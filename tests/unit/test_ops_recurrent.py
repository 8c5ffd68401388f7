"""The reference's LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM against an LSTM
step written out here unit by unit (Python loops and math's functions, NNAPI's gate equations), not
the reference's cell: gates i, f, c, o, CIFG, peephole, projection, clipping, layer normalization,
both layouts, the backward direction and the auxiliary input; and the validation refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.hal import DriverError, ErrorStatus, OperandType, OperationType, numpy_dtype
from harness.judging.builders import ModelBuilder, pack_request
from reference_driver import ReferenceDevice

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
INT32, FLOAT32, FLOAT16, BOOL = OperandType.INT32, OperandType.FLOAT32, OperandType.FLOAT16, OperandType.BOOL
Op = OperationType
GATES = "ifco"


def sigmoid(v: float) -> float:
    return 1 / (1 + math.exp(-v))


ACTIVATION = {0: lambda v: v, 1: lambda v: max(v, 0.0), 3: lambda v: min(max(v, 0.0), 6.0), 4: math.tanh, 6: sigmoid}


def make_weights(rng, n_in, units, n_out, *, cifg, peephole, projection, layer_norm, aux_in=0):
    """One direction's parameters, keyed by role; None for an omitted operand."""
    def draw(*shape):
        return rng.uniform(-0.6, 0.6, shape).astype(np.float32)
    p = {}
    for g in GATES:
        omitted = cifg and g == "i"
        p["x" + g] = None if omitted else draw(units, n_in)
        p["h" + g] = None if omitted else draw(units, n_out)
        p["b" + g] = None if omitted else draw(units)
        p["peep" + g] = draw(units) if peephole and g != "c" and not omitted else None
        p["ln" + g] = draw(units) + 1 if layer_norm and not omitted else None
        p["aux" + g] = draw(units, aux_in) if aux_in and not omitted else None
    p["proj"] = draw(n_out, units) if projection else None
    p["proj_bias"] = draw(n_out) if projection else None
    return p


def weight_operands(p):
    """The 17 weight operands in NNAPI's order."""
    return ([p["x" + g] for g in GATES] + [p["h" + g] for g in GATES] + [p["peep" + g] for g in "ifo"]
            + [p["b" + g] for g in GATES] + [p["proj"], p["proj_bias"]])


def loop_step(p, x, h, c, activation, cell_clip, proj_clip, aux=None):
    """NNAPI's LSTM step, batch by batch and unit by unit."""
    act = ACTIVATION[activation]
    units = len(p["xf"])
    new_h, new_c = [], []
    for b in range(len(x)):
        def gate(g, cell_state):
            z = [sum(p["x" + g][u][k] * x[b][k] for k in range(len(x[b])))
                 + sum(p["h" + g][u][k] * h[b][k] for k in range(len(h[b]))) for u in range(units)]
            if aux is not None and p["aux" + g] is not None:
                z = [z[u] + sum(p["aux" + g][u][k] * aux[b][k] for k in range(len(aux[b]))) for u in range(units)]
            if p["peep" + g] is not None:
                z = [z[u] + p["peep" + g][u] * cell_state[u] for u in range(units)]
            if p["ln" + g] is not None:
                mean = sum(z) / units
                variance = sum((v - mean) ** 2 for v in z) / units
                z = [(v - mean) / math.sqrt(variance + 1e-8) * p["ln" + g][u] for u, v in enumerate(z)]
            return [z[u] + p["b" + g][u] for u in range(units)]
        f = [sigmoid(v) for v in gate("f", c[b])]
        i = [1 - v for v in f] if p["xi"] is None else [sigmoid(v) for v in gate("i", c[b])]
        g = [act(v) for v in gate("c", c[b])]
        state = [f[u] * c[b][u] + i[u] * g[u] for u in range(units)]
        if cell_clip > 0:
            state = [min(max(v, -cell_clip), cell_clip) for v in state]
        o = [sigmoid(v) for v in gate("o", state)]
        m = [o[u] * act(state[u]) for u in range(units)]
        if p["proj"] is not None:
            m = [sum(p["proj"][r][u] * m[u] for u in range(units)) + p["proj_bias"][r] for r in range(len(p["proj"]))]
            if proj_clip > 0:
                m = [min(max(v, -proj_clip), proj_clip) for v in m]
        new_h.append(m)
        new_c.append(state)
    return new_h, new_c


def loop_sequence(p, xs, h, c, activation, cell_clip, proj_clip, aux=None, reverse=False):
    """Time-major steps; each output at its own step, also backwards."""
    outputs = [None] * len(xs)
    for t in (reversed(range(len(xs))) if reverse else range(len(xs))):
        h, c = loop_step(p, xs[t], h, c, activation, cell_clip, proj_clip, None if aux is None else aux[t])
        outputs[t] = h
    return outputs, h, c


def execute(op, operands, outputs, dtype=F32):
    """``op`` on ``operands`` (an array or None: a model input, None given no value; (type, value): a
    constant scalar); each output's value, shaped as the execution reports."""
    b = ModelBuilder()
    indexes, given = [], []
    for operand in operands:
        if isinstance(operand, tuple):
            indexes.append(b.constant(*operand))
            continue
        indexes.append(b.input(dtype, (0,) if operand is None else np.shape(operand)))
        given.append(operand)
    b.operation_outputs(op, indexes, [(dtype, (0,) * rank, 0.0, 0) for rank in outputs])
    model = b.build()
    prepared = ReferenceDevice().prepare_model(model)
    request, _, out = pack_request(model, [None if v is None else np.asarray(v, numpy_dtype(dtype)) for v in given],
                                   output_capacity=[1 << 12] * len(outputs))
    shapes = prepared.execute(request).output_shapes
    data = out.read()
    return [np.frombuffer(data, numpy_dtype(dtype), count=math.prod(s.dimensions), offset=request.outputs[n].location.offset)
            .reshape(s.dimensions).astype(np.float64) for n, s in enumerate(shapes)]


def clips(cell_clip, proj_clip, dtype=F32):
    scalar = FLOAT16 if dtype == F16 else FLOAT32
    return [(scalar, cell_clip), (scalar, proj_clip)]


def layer_norm_operands(p):
    return [p["ln" + g] for g in GATES]


features = dict(cifg=st.booleans(), peephole=st.booleans(), projection=st.booleans(), layer_norm=st.booleans())


@settings(max_examples=12, deadline=None)
@given(**features, activation=st.sampled_from([0, 1, 3, 4, 6]), cell_clip=st.sampled_from([0.0, 0.3]),
       proj_clip=st.sampled_from([0.0, 0.2]), seed=st.integers(0, 2**16))
def test_lstm_step_follows_the_gate_equations(cifg, peephole, projection, layer_norm, activation, cell_clip, proj_clip,
                                              seed) -> None:
    rng = np.random.default_rng(seed)
    batch, n_in, units = 2, 3, 4
    n_out = 3 if projection else units
    p = make_weights(rng, n_in, units, n_out, cifg=cifg, peephole=peephole, projection=projection,
                     layer_norm=layer_norm)
    x, h, c = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((batch, n_in), (batch, n_out), (batch, units)))
    operands = [x, *weight_operands(p), h, c, (INT32, activation), *clips(cell_clip, proj_clip)]
    if layer_norm:
        operands += layer_norm_operands(p)
    scratch, h_out, c_out, output = execute(Op.LSTM, operands, [2, 2, 2, 2])
    want_h, want_c = loop_step(p, x.tolist(), h.tolist(), c.tolist(), activation, cell_clip, proj_clip)
    np.testing.assert_allclose(h_out, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(output, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c_out, want_c, rtol=1e-5, atol=1e-6)
    assert scratch.shape == (batch, units * (3 if cifg else 4))


def test_lstm_in_float16_rounds_the_same_step() -> None:
    rng = np.random.default_rng(3)
    p = make_weights(rng, 2, 3, 3, cifg=False, peephole=True, projection=False, layer_norm=False)
    p = {k: None if v is None else v.astype(np.float16) for k, v in p.items()}
    x, h, c = (rng.uniform(-1, 1, (1, n)).astype(np.float16) for n in (2, 3, 3))
    operands = [x, *weight_operands(p), h, c, (INT32, 4), *clips(0.0, 0.0, F16)]
    _, h_out, c_out, _ = execute(Op.LSTM, operands, [2, 2, 2, 2], F16)
    want_h, want_c = loop_step(p, x.tolist(), h.tolist(), c.tolist(), 4, 0.0, 0.0)
    np.testing.assert_allclose(h_out, want_h, atol=2e-3)
    np.testing.assert_allclose(c_out, want_c, atol=2e-3)


@settings(max_examples=6, deadline=None)
@given(**features, time_major=st.booleans(), states=st.booleans(), seed=st.integers(0, 2**16))
def test_unidirectional_sequence_runs_the_step_over_time(cifg, peephole, projection, layer_norm, time_major, states,
                                                         seed) -> None:
    rng = np.random.default_rng(seed)
    steps, batch, n_in, units = 3, 2, 2, 3
    n_out = 2 if projection else units
    p = make_weights(rng, n_in, units, n_out, cifg=cifg, peephole=peephole, projection=projection,
                     layer_norm=layer_norm)
    xs = rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    h, c = rng.uniform(-1, 1, (batch, n_out)).astype(np.float32), rng.uniform(-1, 1, (batch, units)).astype(np.float32)
    laid = xs if time_major else xs.transpose(1, 0, 2)
    operands = [laid, *weight_operands(p), h, c, (INT32, 4), *clips(0.0, 0.0), (BOOL, time_major),
                *layer_norm_operands(p)]
    got = execute(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, operands, [3, 2, 2] if states else [3])
    want, want_h, want_c = loop_sequence(p, xs.tolist(), h.tolist(), c.tolist(), 4, 0.0, 0.0)
    want_laid = np.array(want) if time_major else np.array(want).transpose(1, 0, 2)
    np.testing.assert_allclose(got[0], want_laid, rtol=1e-5, atol=1e-6)
    assert len(got) == (3 if states else 1)
    if states:
        np.testing.assert_allclose(got[1], want_h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[2], want_c, rtol=1e-5, atol=1e-6)


def bidirectional_operands(xs, fw, bw, states, aux=None, fw_aux=None, bw_aux=None, merge=False, time_major=True):
    none4 = [None] * 4
    return [xs, *weight_operands(fw), *weight_operands(bw), *states, aux,
            *([fw_aux["aux" + g] for g in GATES] if fw_aux else none4),
            *([bw_aux["aux" + g] for g in GATES] if bw_aux else none4),
            (INT32, 4), *clips(0.0, 0.0), (BOOL, merge), (BOOL, time_major), *none4, *none4]


@pytest.mark.parametrize("merge, state_outputs, time_major", [(False, False, True), (True, False, False),
                                                              (False, True, False), (True, True, True)])
def test_bidirectional_runs_the_backward_cell_from_the_last_step(merge, state_outputs, time_major) -> None:
    rng = np.random.default_rng(7)
    steps, batch, n_in, units = 3, 2, 2, 3
    fw = make_weights(rng, n_in, units, units, cifg=False, peephole=True, projection=False, layer_norm=False)
    bw = make_weights(rng, n_in, 2, 2, cifg=True, peephole=False, projection=False, layer_norm=False)
    xs = rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    states = [rng.uniform(-1, 1, (batch, n)).astype(np.float32) for n in (units, units, 2, 2)]
    laid = xs if time_major else xs.transpose(1, 0, 2)
    ranks = ([3] if merge else [3, 3]) + ([2] * 4 if state_outputs else [])
    got = execute(Op.BIDIRECTIONAL_SEQUENCE_LSTM, bidirectional_operands(laid, fw, bw, states, merge=merge,
                                                                          time_major=time_major), ranks)
    fw_out, fw_h, fw_c = loop_sequence(fw, xs.tolist(), states[0].tolist(), states[1].tolist(), 4, 0.0, 0.0)
    bw_out, bw_h, bw_c = loop_sequence(bw, xs.tolist(), states[2].tolist(), states[3].tolist(), 4, 0.0, 0.0,
                                       reverse=True)
    sequences = [np.concatenate([fw_out, bw_out], axis=2)] if merge else [np.array(fw_out), np.array(bw_out)]
    want = [s if time_major else s.transpose(1, 0, 2) for s in sequences]
    if state_outputs:
        want += [fw_h, fw_c, bw_h, bw_c]
    assert len(got) == len(want)
    for got_one, want_one in zip(got, want):
        np.testing.assert_allclose(got_one, want_one, rtol=1e-5, atol=1e-6)


def test_aux_input_with_weights_feeds_both_cells_and_without_them_replaces_the_backward_input() -> None:
    rng = np.random.default_rng(11)
    steps, batch, n_in, n_aux, units = 2, 1, 2, 3, 2
    fw = make_weights(rng, n_in, units, units, cifg=False, peephole=False, projection=False, layer_norm=False,
                      aux_in=n_aux)
    bw = make_weights(rng, n_in, units, units, cifg=False, peephole=False, projection=False, layer_norm=False,
                      aux_in=n_aux)
    xs = rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    aux = rng.uniform(-1, 1, (steps, batch, n_aux)).astype(np.float32)
    states = [np.zeros((batch, units), np.float32)] * 4
    zeros = states[0].tolist()
    crossed = execute(Op.BIDIRECTIONAL_SEQUENCE_LSTM, bidirectional_operands(xs, fw, bw, states, aux, fw, bw), [3, 3])
    fw_out, _, _ = loop_sequence(fw, xs.tolist(), zeros, zeros, 4, 0.0, 0.0, aux.tolist())
    bw_out, _, _ = loop_sequence(bw, xs.tolist(), zeros, zeros, 4, 0.0, 0.0, aux.tolist(), reverse=True)
    np.testing.assert_allclose(crossed[0], fw_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(crossed[1], bw_out, rtol=1e-5, atol=1e-6)
    # parallel linking: the backward cell reads the aux input through its input weights
    bw = make_weights(rng, n_aux, units, units, cifg=False, peephole=False, projection=False, layer_norm=False)
    parallel = execute(Op.BIDIRECTIONAL_SEQUENCE_LSTM, bidirectional_operands(xs, fw, bw, states, aux), [3, 3])
    fw_out, _, _ = loop_sequence(fw, xs.tolist(), zeros, zeros, 4, 0.0, 0.0)
    bw_out, _, _ = loop_sequence(bw, aux.tolist(), zeros, zeros, 4, 0.0, 0.0, reverse=True)
    np.testing.assert_allclose(parallel[0], fw_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(parallel[1], bw_out, rtol=1e-5, atol=1e-6)


def lstm_model(*, dtype=F32, clip_type=FLOAT32, input_count=23, output_type=None, weight_rank=2):
    b = ModelBuilder()
    tensor = [b.input(dtype, (1, 2))]
    tensor += [b.input(dtype, (3, 2) if weight_rank == 2 else (6,)) for _ in range(4)]
    tensor += [b.input(dtype, (3, 3)) for _ in range(4)] + [b.input(dtype, (0,)) for _ in range(3)]
    tensor += [b.input(dtype, (3,)) for _ in range(4)] + [b.input(dtype, (0, 0)), b.input(dtype, (0,))]
    tensor += [b.input(dtype, (1, 3)), b.input(dtype, (1, 3))]
    scalars = [b.constant(INT32, 4), b.constant(clip_type, 0.0), b.constant(clip_type, 0.0)]
    extra = [b.input(dtype, (3,)) for _ in range(input_count - 23)]
    out = output_type or dtype
    b.operation_outputs(Op.LSTM, tensor + scalars + extra, [(out, (1, 12), 0.0, 0)] + [(out, (1, 3), 0.0, 0)] * 3)
    return b.build()


@pytest.mark.parametrize("model, feature", [
    (dict(input_count=24), "24 inputs"),
    (dict(dtype=I32), "input of type TENSOR_INT32"),
    (dict(clip_type=FLOAT16), "cell clip of type FLOAT16"),
    (dict(dtype=F16), "cell clip of type FLOAT32"),
    (dict(output_type=F16), "type TENSOR_FLOAT16 differs from the input's"),
    (dict(weight_rank=1), "input-to-input weights of rank 1"),
])
def test_refusals_name_the_operand_and_the_feature(model, feature) -> None:
    with pytest.raises(DriverError) as refused:
        ReferenceDevice().prepare_model(lstm_model(**model))
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT and feature in str(refused.value)


def test_sequence_operations_refuse_a_missing_layout_flag_and_odd_output_counts() -> None:
    for op, count, outputs in ((Op.UNIDIRECTIONAL_SEQUENCE_LSTM, 28, 2), (Op.BIDIRECTIONAL_SEQUENCE_LSTM, 61, 3)):
        b = ModelBuilder()
        inputs = [b.input(F32, (2, 1, 2))] + [b.input(F32, (0,)) for _ in range(count - 1)]
        b.operation_outputs(op, inputs, [(F32, (), 0.0, 0)] * outputs)
        with pytest.raises(DriverError) as refused:
            ReferenceDevice().prepare_model(b.build())
        assert refused.value.status == ErrorStatus.INVALID_ARGUMENT and f"{outputs} outputs" in str(refused.value)


def test_inconsistent_omissions_and_negative_clips_fail_the_execution() -> None:
    rng = np.random.default_rng(5)
    p = make_weights(rng, 2, 3, 3, cifg=False, peephole=False, projection=False, layer_norm=False)
    x, h, c = (np.zeros((1, n), np.float32) for n in (2, 3, 3))
    half_cifg = dict(p, hi=None)  # input-to-input weights given, recurrent-to-input omitted
    half_peephole = dict(p, peepf=np.ones(3, np.float32))  # a forget gate peephole alone
    for weights, clip, reason in ((half_cifg, 0.0, "input gate weights given in part"),
                                  (half_peephole, 0.0, "peephole weights given in part"),
                                  (p, -1.0, "cell clip -1.0")):
        with pytest.raises(DriverError) as failed:
            execute(Op.LSTM, [x, *weight_operands(weights), h, c, (INT32, 4), *clips(clip, 0.0)], [2, 2, 2, 2])
        assert failed.value.status == ErrorStatus.GENERAL_FAILURE and reason in str(failed.value)
