"""The reference's quantized LSTMs against the real-valued LSTM step written out here (float64 loops
over batches and units, from NeuralNetworks.h's definitions and the operands' quantization): the
fixed-point results stay within a few steps of it.  The fixed-point logistic and tanh against
math's, over every int16 input; and validation of NNAPI's operand rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.hal import DriverError, ErrorStatus, Operand, OperandLifeTime, OperandType, OperationType, numpy_dtype
from harness.judging.builders import ModelBuilder, run_outputs
from reference_driver import ReferenceDevice
from reference_driver.ops import quantized_lstm

QU8, QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
QSYMM8, QSYMM16, TI32 = OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_INT32
INT32, FLOAT32 = OperandType.INT32, OperandType.FLOAT32
Op = OperationType


def sigmoid(v):
    return 1 / (1 + math.exp(-v))


def nearest(v):
    """NNAPI's rounding to an integer: halves away from zero."""
    return math.copysign(math.floor(abs(v) + 0.5), v)


@pytest.mark.parametrize("integer_bits", range(7))
def test_fixed_point_logistic_and_tanh_follow_the_real_functions(integer_bits) -> None:
    raw = np.arange(-32768, 32768, dtype=np.int64)
    unit = 2.0 ** (15 - integer_bits)
    got_logistic = quantized_lstm.logistic(raw, integer_bits) / 32768
    got_tanh = quantized_lstm.tanh(raw, integer_bits) / 32768
    real = raw / unit
    assert np.max(np.abs(got_logistic - 1 / (1 + np.exp(-real)))) < 2.5e-4  # a few steps of 2^-15
    assert np.max(np.abs(got_tanh - np.tanh(real))) < 4e-4
    # tanh is odd and σ(x) + σ(-x) = 1, exactly in the fixed point (past the raw minimum, whose negation wraps)
    inside = raw[1:]
    assert (quantized_lstm.tanh(inside, integer_bits) == -quantized_lstm.tanh(-inside, integer_bits)).all()
    pairs = quantized_lstm.logistic(inside, integer_bits) + quantized_lstm.logistic(-inside, integer_bits)
    assert (pairs[inside != 0] == 32767).all()


def execute(op, operands, outputs):
    """``op`` on ``operands`` [(type, value, scale, zeroPoint)]: tensors model inputs (None: given no
    value), scalars constants; ``outputs`` [(type, scale, zeroPoint)].  Each output's stored integers."""
    b = ModelBuilder()
    indexes, feeds = [], []
    for kind, value, scale, zero in operands:
        if kind in (INT32, FLOAT32):
            indexes.append(b.constant(kind, value))
            continue
        indexes.append(b.input(kind, (0,) if value is None else np.shape(value), scale, zero))
        feeds.append(None if value is None else np.asarray(value, numpy_dtype(kind)))
    b.operation_outputs(op, indexes, [(kind, (), scale, zero) for kind, scale, zero in outputs])
    return [value.astype(np.int64) for value in run_outputs(ReferenceDevice(), b.build(), feeds, capacity=1 << 12)]


# --------------------------------------------------------------------------- QUANTIZED_16BIT_LSTM


def lstm_16bit_real(x, prev_out, prev_state, weights, recurrent, biases, w_scale, w_zero):
    """NNAPI's QUANTIZED_16BIT_LSTM on real values: gates i, f, c, o, each the sum over the row
    [input | previous output] against the gate's columns [recurrent | input-to], plus its bias."""
    batches, size = len(x), len(x[0])
    units = len(prev_out[0])
    state, output = np.zeros((batches, units)), np.zeros((batches, units))
    for b in range(batches):
        row = [(v - 128) / 128 for v in list(x[b]) + list(prev_out[b])]
        for u in range(units):
            pre = []
            for g in range(4):
                columns = list(recurrent[g][u]) + list(weights[g][u])
                pre.append(sum(row[k] * (columns[k] - w_zero) * w_scale for k in range(size + units))
                           + biases[g][u] * w_scale / 128)
            i, f, c, o = sigmoid(pre[0]), sigmoid(pre[1]), math.tanh(pre[2]), sigmoid(pre[3])
            state[b][u] = f * prev_state[b][u] / 2048 + i * c
            output[b][u] = o * math.tanh(state[b][u])
    return state, output


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), batches=st.integers(1, 2), size=st.integers(1, 3), units=st.integers(1, 4))
def test_quantized_16bit_lstm_follows_the_real_lstm(seed, batches, size, units) -> None:
    rng = np.random.default_rng(seed)
    w_scale, w_zero = 0.004, 100
    x, prev_out = rng.integers(64, 192, (batches, size)), rng.integers(64, 192, (batches, units))
    prev_state = rng.integers(-2000, 2000, (batches, units))
    weights = [rng.integers(0, 256, (units, size)) for _ in range(4)]
    recurrent = [rng.integers(0, 256, (units, units)) for _ in range(4)]
    biases = [rng.integers(-40000, 40000, units) for _ in range(4)]
    operands = [(QU8, x, 1 / 128, 128), *((QU8, w, w_scale, w_zero) for w in weights + recurrent),
                *((TI32, bias, w_scale / 128, 0) for bias in biases), (QSYMM16, prev_state, 2 ** -11, 0),
                (QU8, prev_out, 1 / 128, 128)]
    state, output = execute(Op.QUANTIZED_16BIT_LSTM, operands, [(QSYMM16, 2 ** -11, 0), (QU8, 1 / 128, 128)])
    want_state, want_output = lstm_16bit_real(x, prev_out, prev_state, weights, recurrent, biases, w_scale, w_zero)
    assert np.max(np.abs(state - want_state * 2048)) <= 4
    assert np.max(np.abs(output - (want_output * 128 + 128))) <= 1


# --------------------------------------------------------------------------- QUANTIZED_LSTM


SCALES = {"input": 1 / 128, "weights": 1 / 64, "cell": 2.0 ** -11, "output": 1 / 128, "hidden": 1 / 128,
          "norm": 1 / 4096, "intermediate": 1 / 4096, "projection": 1 / 64}


def qlstm_real(x, prev_out, prev_cell, weights, recurrent, biases, norms, projection, cifg):
    """NNAPI's QUANTIZED_LSTM on real values, with layer normalization: each gate's sum (at its
    intermediate scale) normalised over the units (mean 0, deviation 1), times its weight, plus its
    bias (scale: the weight's / 1024)."""
    s = SCALES
    batches, units = len(x), len(prev_cell[0])
    cell, output = np.zeros((batches, units)), np.zeros((batches, len(prev_out[0])))
    for b in range(batches):
        pre = {}
        for g in ([1, 2, 3] if cifg else [0, 1, 2, 3]):
            # the input's and the previous output's products, each held at the intermediate scale
            step = s["intermediate"]
            sums = [nearest(sum(x[b][k] * s["input"] * weights[g][u][k] * s["weights"] for k in range(len(x[b]))) / step)
                    * step + nearest(sum(prev_out[b][k] * s["output"] * recurrent[g][u][k] * s["weights"]
                                         for k in range(len(prev_out[b]))) / step) * step
                    for u in range(units)]
            mean = sum(sums) / units
            deviation = math.sqrt(sum((v - mean) ** 2 for v in sums) / units)
            pre[g] = [(sums[u] - mean) / deviation * norms[g][u] * s["norm"] + biases[g][u] * s["norm"] / 1024
                      for u in range(units)]
        hidden = []
        for u in range(units):
            f, c, o = sigmoid(pre[1][u]), math.tanh(pre[2][u]), sigmoid(pre[3][u])
            i = 1 - f if cifg else sigmoid(pre[0][u])
            cell[b][u] = f * prev_cell[b][u] * s["cell"] + i * c
            hidden.append(o * math.tanh(cell[b][u]))
        for j in range(len(prev_out[b])):
            output[b][j] = sum(nearest(hidden[u] / s["hidden"]) * s["hidden"] * projection[j][u] * s["projection"]
                               for u in range(units))
    return cell, output


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16), batches=st.integers(1, 2), size=st.integers(1, 4), cifg=st.booleans())
def test_quantized_lstm_follows_the_real_lstm_with_layer_normalization(seed, batches, size, cifg) -> None:
    rng = np.random.default_rng(seed)
    units, outputs, s = 4, 3, SCALES
    x, prev_out = rng.integers(-100, 100, (batches, size)), rng.integers(-100, 100, (batches, outputs))
    prev_cell = rng.integers(-1000, 1000, (batches, units))
    weights = [rng.integers(-127, 128, (units, size)) for _ in range(4)]
    recurrent = [rng.integers(-127, 128, (units, outputs)) for _ in range(4)]
    biases = [rng.integers(-1 << 20, 1 << 20, units) for _ in range(4)]
    norms = [rng.integers(1000, 8000, units) for _ in range(4)]
    projection = rng.integers(-127, 128, (outputs, units))
    maybe = (lambda value: None if cifg else value)
    operands = [(QS8, x, s["input"], 0), (QSYMM8, maybe(weights[0]), s["weights"], 0),
                *((QSYMM8, w, s["weights"], 0) for w in weights[1:]), (QSYMM8, maybe(recurrent[0]), s["weights"], 0),
                *((QSYMM8, w, s["weights"], 0) for w in recurrent[1:]), *((QSYMM16, None, 1.0, 0),) * 3,
                (TI32, maybe(biases[0]), 0.0, 0), *((TI32, bias, 0.0, 0) for bias in biases[1:]),
                (QSYMM8, projection, s["projection"], 0), (TI32, np.zeros(outputs, np.int32), 0.0, 0),
                (QS8, prev_out, s["output"], 0), (QSYMM16, prev_cell, s["cell"], 0),
                (QSYMM16, maybe(norms[0]), s["norm"], 0), *((QSYMM16, n, s["norm"], 0) for n in norms[1:]),
                (FLOAT32, 0.0, 0, 0), (FLOAT32, 0.0, 0, 0), *((FLOAT32, s["intermediate"], 0, 0),) * 4,
                (INT32, 0, 0, 0), (FLOAT32, s["hidden"], 0, 0)]
    out_state, cell, output = execute(Op.QUANTIZED_LSTM, operands, [(QS8, s["output"], 0), (QSYMM16, s["cell"], 0),
                                                                    (QS8, s["output"], 0)])
    want_cell, want_output = qlstm_real(x, prev_out, prev_cell, weights, recurrent, biases, norms, projection, cifg)
    assert np.max(np.abs(cell - want_cell / s["cell"])) <= 8
    # each hidden value may be one of its 8-bit steps off, which moves output j by |projection[j][u]|
    # times the ratio of scales (up to 2 of its steps per unit), plus the output's own rounding
    step_moves = np.abs(projection) * s["hidden"] * s["projection"] / s["output"]
    bound = step_moves.sum(axis=1) + 1
    assert np.all(np.abs(output - np.clip(want_output / s["output"], -128, 127)) <= bound)
    assert out_state.tolist() == output.tolist()


# --------------------------------------------------------------------------- validation


def refusal(op, operands, outputs):
    """prepare_model's refusal of ``op`` on constant ``operands`` [(type, value, scale, zeroPoint)]
    (None: no value), ``outputs`` [(type, scale, zeroPoint)]."""
    b = ModelBuilder()
    indexes = []
    for kind, value, scale, zero in operands:
        if value is None:
            b.operands.append(Operand(kind, (), scale, zero, OperandLifeTime.NO_VALUE))
            indexes.append(len(b.operands) - 1)
        else:
            indexes.append(b.constant(kind, value, scale, zero))
    b.operation_outputs(op, indexes, [(kind, (), scale, zero) for kind, scale, zero in outputs])
    with pytest.raises(DriverError) as refused:
        ReferenceDevice().prepare_model(b.build())
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    return str(refused.value)


def sixteen_bit(**changes):
    operands = [(QU8, np.full((1, 2), 128), 1 / 128, 128), *((QU8, np.full((2, 2), 100), 0.004, 100),) * 4,
                *((QU8, np.full((2, 2), 100), 0.004, 100),) * 4, *((TI32, np.zeros(2), 0.004 / 128, 0),) * 4,
                (QSYMM16, np.zeros((1, 2)), 2 ** -11, 0), (QU8, np.full((1, 2), 128), 1 / 128, 128)]
    for position, operand in changes.items():
        operands[int(position[1:])] = operand
    return operands


SIXTEEN_OUTPUTS = [(QSYMM16, 2 ** -11, 0), (QU8, 1 / 128, 128)]


@pytest.mark.parametrize("operands, outputs, feature", [
    (sixteen_bit(i0=(QS8, np.zeros((1, 2)), 1 / 128, 0)), SIXTEEN_OUTPUTS, "input of type TENSOR_QUANT8_ASYMM_SIGNED"),
    (sixteen_bit(i0=(QU8, np.zeros((1, 2)), 1 / 64, 128)), SIXTEEN_OUTPUTS, "input of scale 0.015625"),
    (sixteen_bit(i6=(QU8, np.zeros((2, 2)), 0.004, 90)), SIXTEEN_OUTPUTS, "all as input-to-input's"),
    (sixteen_bit(i10=(TI32, np.zeros(2), 0.004, 0)), SIXTEEN_OUTPUTS, "bias of scale 0.004"),
    (sixteen_bit(i13=(QSYMM16, np.zeros((1, 2)), 2 ** -10, 0)), SIXTEEN_OUTPUTS, "previous cell state of scale"),
    (sixteen_bit(i9=(TI32, None, 0.004 / 128, 0)), SIXTEEN_OUTPUTS, "input gate bias given no value"),
    (sixteen_bit(), [(QSYMM16, 2 ** -11, 0), (QU8, 1 / 256, 128)], "output of scale 0.00390625"),
])
def test_16bit_lstm_refusals_name_the_operand_and_the_feature(operands, outputs, feature) -> None:
    assert feature in refusal(Op.QUANTIZED_16BIT_LSTM, operands, outputs)


def qlstm(**changes):
    units, size, outputs = 2, 2, 2
    tensor = {QS8: np.zeros((1, size)), QSYMM8: np.zeros((units, size)), QSYMM16: np.zeros(units),
              TI32: np.zeros(units)}
    operands = []
    for position, (kind, role) in enumerate(quantized_lstm.QLSTM_SIGNATURE):
        if kind in (FLOAT32, INT32):
            value = 0 if kind == INT32 else (0.0 if "clip" in role else 0.01)
            operands.append((kind, value, 0.0, 0))
        elif position in (9, 10, 11, 20, 21, 22, 23, 16, 17):
            operands.append((kind, None, 1.0, 0))
        elif position == 19:
            operands.append((kind, np.zeros((1, units)), 2.0 ** -11, 0))
        elif position == 18:
            operands.append((kind, np.zeros((1, outputs)), 1 / 128, 0))
        else:
            operands.append((kind, tensor[kind], 0.01 if kind != TI32 else 0.0, 0))
    for position, operand in changes.items():
        operands[int(position[1:])] = operand
    return operands


QLSTM_OUTPUTS = [(QS8, 1 / 128, 0), (QSYMM16, 2.0 ** -11, 0), (QS8, 1 / 128, 0)]


@pytest.mark.parametrize("operands, outputs, feature", [
    (qlstm(i0=(QU8, np.zeros((1, 2)), 0.01, 128)), QLSTM_OUTPUTS, "input of type TENSOR_QUANT8_ASYMM"),
    (qlstm(i2=(QSYMM8, None, 0.01, 0)), QLSTM_OUTPUTS, "input-to-forget weights given no value"),
    (qlstm(i5=(QSYMM8, None, 0.01, 0)), QLSTM_OUTPUTS, "recurrent-to-input weights not both given or both omitted"),
    (qlstm(i1=(QSYMM8, None, 0.01, 0), i5=(QSYMM8, None, 0.01, 0)), QLSTM_OUTPUTS, "input gate bias given with CIFG"),
    (qlstm(i20=(QSYMM16, np.zeros(2), 0.01, 0)), QLSTM_OUTPUTS, "layer normalization weights not all given"),
    (qlstm(i17=(TI32, np.zeros(2), 0.0, 0)), QLSTM_OUTPUTS, "projection bias without projection weights"),
    (qlstm(i19=(QSYMM16, np.zeros((1, 2)), 2.0 ** -5, 0)), QLSTM_OUTPUTS, "a power of two, 2^-15 to 2^-9"),
    (qlstm(i31=(INT32, 1, 0.0, 0)), QLSTM_OUTPUTS, "hidden state scale of type INT32"),
    (qlstm(), [(QS8, 1 / 128, 0), (QSYMM16, 2.0 ** -12, 0), (QS8, 1 / 128, 0)], "cell state (NNAPI: the previous"),
])
def test_quantized_lstm_refusals_name_the_operand_and_the_feature(operands, outputs, feature) -> None:
    assert feature in refusal(Op.QUANTIZED_LSTM, operands, outputs)


def test_quantized_lstm_accepts_its_smallest_signature() -> None:
    b = ModelBuilder()
    indexes = []
    for kind, value, scale, zero in qlstm():
        if value is None:
            b.operands.append(Operand(kind, (), scale, zero, OperandLifeTime.NO_VALUE))
            indexes.append(len(b.operands) - 1)
        else:
            indexes.append(b.constant(kind, value, scale, zero))
    b.operation_outputs(Op.QUANTIZED_LSTM, indexes, [(kind, (), scale, zero) for kind, scale, zero in QLSTM_OUTPUTS])
    assert ReferenceDevice().get_supported_operations(b.build()) == [True]
