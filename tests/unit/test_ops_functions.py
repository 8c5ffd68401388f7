"""The reference's activations, element-wise functions, comparisons, logical operations and SELECT
against formulas written out here (loops over elements, math's functions, Python's comparisons),
not the reference's kernels; and their validation against NeuralNetworks.h's operand rules."""

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
QU8, QS8, BOOL8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_BOOL8
Op = OperationType
RANGE = {QU8: (0, 255), QS8: (-128, 127)}


def execute(op, tensors, out_type, out_quant=(0.0, 0), scalars=(), out_dims=()):
    """One operation: ``tensors`` [(type, value, (scale, zeroPoint))] as model inputs, then
    ``scalars`` [(type, value)] as constants; the output's value."""
    b = ModelBuilder()
    inputs = [b.input(t, np.shape(v), *q) for t, v, q in tensors]
    inputs += [b.constant(t, v) for t, v in scalars]
    b.operation(op, inputs, out_type, out_dims, *out_quant)
    model = b.build()
    prepared = ReferenceDevice().prepare_model(model)
    request, _, out = pack_request(model, [np.asarray(v, numpy_dtype(t)) for t, v, _ in tensors], output_capacity=[1 << 14])
    dims = prepared.execute(request).output_shapes[0].dimensions
    return np.frombuffer(out.read(), numpy_dtype(out_type), count=math.prod(dims)).reshape(dims)


def refusal(op, operands, outputs) -> DriverError:
    """The error preparing a model of ``op`` gives: ``operands`` [(type, dims, scale, zeroPoint)]
    as inputs (scalars as constants), ``outputs`` likewise."""
    b = ModelBuilder()
    inputs = []
    for t, dims, scale, zp in operands:
        inputs.append(b.constant(t, 1.0) if t in (OperandType.FLOAT32, OperandType.FLOAT16, OperandType.INT32)
                      else b.input(t, dims, scale, zp))
    for t, dims, scale, zp in outputs:
        b.operation(op, inputs, t, dims, scale, zp)
    with pytest.raises(DriverError) as refused:
        ReferenceDevice().prepare_model(b.build())
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    return refused.value


def requantized(real: float, scale: float, zp: int, out_type) -> int:
    """Round half away from zero, then saturate: written per element."""
    scaled = real / scale
    q = math.floor(abs(scaled) + 0.5) * (1 if scaled >= 0 else -1) + zp
    low, high = RANGE[out_type]
    return min(max(q, low), high)


finite = st.floats(-10, 10, width=32)
shapes = st.sampled_from([(1,), (3,), (2, 3), (2, 1, 3), (1, 2, 2, 2)])


def _elements(shape, data, elements=finite):
    count = math.prod(shape)
    return np.asarray(data.draw(st.lists(elements, min_size=count, max_size=count)), np.float64).reshape(shape)


FLOAT_FUNCTIONS = {
    Op.LOGISTIC: lambda x: 1 / (1 + math.exp(-x)),
    Op.TANH: math.tanh,
    Op.HARD_SWISH: lambda x: x * min(max(x + 3, 0), 6) / 6,
    Op.EXP: math.exp,
    Op.SIN: math.sin,
    Op.FLOOR: math.floor,
    Op.ABS: abs,
    Op.NEG: lambda x: -x,
    Op.LOG: lambda x: math.log(x) if x > 0 else None,
    Op.SQRT: lambda x: math.sqrt(x) if x >= 0 else None,
    Op.RSQRT: lambda x: 1 / math.sqrt(x) if x > 0 else None,
}


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(sorted(FLOAT_FUNCTIONS)), out_type=st.sampled_from([F32, F16]), shape=shapes, data=st.data())
def test_float_functions_round_the_exact_value_once(op, out_type, shape, data) -> None:
    x = _elements(shape, data).astype(numpy_dtype(out_type))
    got = execute(op, [(out_type, x, (0.0, 0))], out_type)
    assert got.shape == shape
    for value, result in zip(x.reshape(-1).tolist(), got.reshape(-1).tolist()):
        want = FLOAT_FUNCTIONS[op](value)
        if want is None:  # outside the domain: IEEE's NaN (or an infinity at 0)
            assert math.isnan(result) or math.isinf(result)
        else:
            assert result == float(np.asarray(want, np.float64).astype(numpy_dtype(out_type))), (op, value)


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from([Op.LOGISTIC, Op.TANH, Op.HARD_SWISH]), in_type=st.sampled_from([QU8, QS8]),
       scale=st.sampled_from([0.03125, 0.05, 0.1, 0.5]), data=st.data())
def test_quantized_activations_requantize_with_nnapi_output_quantization(op, in_type, scale, data) -> None:
    low, high = RANGE[in_type]
    zp = data.draw(st.integers(low, high), label="zero point")
    q = np.arange(low, high + 1)  # every stored value
    if op == Op.LOGISTIC:
        out_quant = (1 / 256, 0 if in_type == QU8 else -128)
    elif op == Op.TANH:
        out_quant = (1 / 128, 128 if in_type == QU8 else 0)
    else:
        out_quant = (data.draw(st.sampled_from([0.02, 0.1, 0.25])), data.draw(st.integers(low, high)))
    got = execute(op, [(in_type, q, (scale, zp))], in_type, out_quant)
    want = [requantized(FLOAT_FUNCTIONS[op]((v - zp) * scale), *out_quant, in_type) for v in q.tolist()]
    assert got.tolist() == want


def test_logistic_and_tanh_refuse_another_output_quantization() -> None:
    error = refusal(Op.LOGISTIC, [(QU8, (4,), 0.5, 128)], [(QU8, (4,), 0.5, 128)])
    assert "output 0" in str(error) and "1/256" not in str(error) and "0.00390625" in str(error)
    error = refusal(Op.TANH, [(QS8, (4,), 0.5, 0)], [(QS8, (4,), 1 / 128, 128)])
    assert "zeroPoint 128" in str(error)


def test_elu_float32_and_float16_with_their_alpha_scalars() -> None:
    x = np.array([-3.0, -0.5, -1e-4, 0.0, 0.25, 7.0])
    for tensor, scalar in ((F32, OperandType.FLOAT32), (F16, OperandType.FLOAT16)):
        got = execute(Op.ELU, [(tensor, x, (0.0, 0))], tensor, scalars=[(scalar, 1.5)])
        want = [1.5 * (math.exp(v) - 1) if v < 0 else v for v in x.astype(numpy_dtype(tensor)).astype(float).tolist()]
        np.testing.assert_allclose(got.astype(float), want, rtol=np.finfo(numpy_dtype(tensor)).eps)
    error = refusal(Op.ELU, [(F16, (6,), 0.0, 0), (OperandType.FLOAT32, (), 0.0, 0)], [(F16, (6,), 0.0, 0)])
    assert "input 1" in str(error) and "alpha" in str(error)


def test_prelu_broadcasts_alpha_and_requantizes() -> None:
    x = np.array([[-2.0, -1.0, 0.0], [1.0, -4.0, 3.0]])
    alpha = np.array([0.5, 0.25, 2.0])
    got = execute(Op.PRELU, [(F32, x, (0.0, 0)), (F32, alpha, (0.0, 0))], F32)
    want = [[v if v >= 0 else a * v for v, a in zip(row, alpha.tolist())] for row in x.tolist()]
    assert got.tolist() == want
    qx, qa = np.array([[0, 100, 128], [200, 37, 255]]), np.array([[130], [120]])
    got = execute(Op.PRELU, [(QU8, qx, (0.1, 128)), (QU8, qa, (0.05, 128))], QU8, (0.2, 120))
    want = [[requantized((v - 128) * 0.1 if v >= 128 else (a - 128) * 0.05 * (v - 128) * 0.1, 0.2, 120, QU8) for v in row]
            for row, a in zip(qx.tolist(), qa.reshape(-1).tolist())]
    assert got.tolist() == want


def test_abs_and_neg_on_int32_wrap_around() -> None:
    x = np.array([-2**31, -5, 0, 7, 2**31 - 1], np.int32)
    assert execute(Op.ABS, [(I32, x, (0.0, 0))], I32).tolist() == [-2**31, 5, 0, 7, 2**31 - 1]
    assert execute(Op.NEG, [(I32, x, (0.0, 0))], I32).tolist() == [-2**31, 5, 0, -7, -2**31 + 1]


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from([Op.MAXIMUM, Op.MINIMUM]), data=st.data())
def test_maximum_minimum_every_type_with_broadcasting(op, data) -> None:
    pick = max if op == Op.MAXIMUM else min
    a = _elements((2, 3), data)
    b = _elements((3,), data)
    got = execute(op, [(F32, a, (0.0, 0)), (F32, b, (0.0, 0))], F32)
    rows = a.astype(np.float32).astype(float).tolist()
    assert got.tolist() == [[float(np.float32(pick(x, y))) for x, y in zip(row, b.tolist())] for row in rows]
    ia, ib = a.astype(np.int32) * 1000, b.astype(np.int32)
    assert execute(op, [(I32, ia, (0.0, 0)), (I32, ib, (0.0, 0))], I32).tolist() == \
        [[pick(x, y) for x, y in zip(row, ib.tolist())] for row in ia.tolist()]
    qa = (a * 10).astype(np.int64) % 200 + 20
    qb = (b * 10).astype(np.int64) % 200 + 20
    got = execute(op, [(QU8, qa, (0.1, 100)), (QU8, qb, (0.25, 90)), ], QU8, (0.5, 70))
    assert got.tolist() == [[requantized(pick((x - 100) * 0.1, (y - 90) * 0.25), 0.5, 70, QU8) for x, y in zip(row, qb.tolist())]
                            for row in qa.tolist()]


def test_pow_broadcasts_the_exponent() -> None:
    base = np.array([[0.5, 2.0, 9.0], [4.0, 1.5, 0.0]])
    exponent = np.array([2.0, -1.0, 0.5])
    got = execute(Op.POW, [(F32, base, (0.0, 0)), (F32, exponent, (0.0, 0))], F32)
    want = [[math.pow(x, y) if x or y >= 0 else math.inf for x, y in zip(row, exponent.tolist())] for row in base.tolist()]
    assert got.tolist() == [[float(np.float32(v)) for v in row] for row in want]


COMPARE = {Op.EQUAL: lambda x, y: x == y, Op.NOT_EQUAL: lambda x, y: x != y, Op.GREATER: lambda x, y: x > y,
           Op.GREATER_EQUAL: lambda x, y: x >= y, Op.LESS: lambda x, y: x < y, Op.LESS_EQUAL: lambda x, y: x <= y}


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(sorted(COMPARE)), type=st.sampled_from([F32, F16, I32, QU8, QS8, BOOL8]), data=st.data())
def test_comparisons_broadcast_and_compare_real_values(op, type, data) -> None:
    if type in RANGE:
        low, high = RANGE[type]
        a = np.array(data.draw(st.lists(st.integers(low, high), min_size=6, max_size=6))).reshape(2, 3)
        b = np.array(data.draw(st.lists(st.integers(low, high), min_size=2, max_size=2))).reshape(2, 1)
        qa, qb = (0.1, data.draw(st.integers(low, high))), (0.05, data.draw(st.integers(low, high)))
        real_a = [[(v - qa[1]) * 0.1 for v in row] for row in a.tolist()]
        real_b = [[(v - qb[1]) * 0.05 for v in row] for row in b.tolist()]
    elif type == BOOL8:
        a = np.array(data.draw(st.lists(st.integers(0, 1), min_size=6, max_size=6))).reshape(2, 3)
        b = np.array(data.draw(st.lists(st.integers(0, 1), min_size=2, max_size=2))).reshape(2, 1)
        qa = qb = (0.0, 0)
        real_a, real_b = a.tolist(), b.tolist()
    else:
        a = np.round(_elements((2, 3), data)).astype(numpy_dtype(type))  # whole numbers: ties happen
        b = np.round(_elements((2, 1), data)).astype(numpy_dtype(type))
        qa = qb = (0.0, 0)
        real_a, real_b = a.tolist(), b.tolist()
    got = execute(op, [(type, a, qa), (type, b, qb)], BOOL8)
    # exact rationals for the quantized values: (q - zp) * scale in tenths and twentieths compared as Fractions
    want = [[int(COMPARE[op](round(x * 20), round(y * 20)) if type in RANGE else COMPARE[op](x, y)) for x in row_a]
            for row_a, (y,) in zip(real_a, real_b)]
    assert got.tolist() == want


def test_logical_operations_broadcast() -> None:
    a = np.array([[0, 1], [1, 1], [0, 0]], np.uint8)
    b = np.array([1, 0], np.uint8)
    assert execute(Op.LOGICAL_AND, [(BOOL8, a, (0.0, 0)), (BOOL8, b, (0.0, 0))], BOOL8).tolist() == \
        [[int(bool(x) and bool(y)) for x, y in zip(row, b.tolist())] for row in a.tolist()]
    assert execute(Op.LOGICAL_OR, [(BOOL8, a, (0.0, 0)), (BOOL8, b, (0.0, 0))], BOOL8).tolist() == \
        [[int(bool(x) or bool(y)) for x, y in zip(row, b.tolist())] for row in a.tolist()]
    assert execute(Op.LOGICAL_NOT, [(BOOL8, a, (0.0, 0))], BOOL8).tolist() == [[1 - v for v in row] for row in a.tolist()]


def test_select_picks_input_1_where_true_and_requantizes() -> None:
    condition = np.array([1, 0, 1, 0, 0], np.uint8)
    x, y = np.array([1.5, -2.0, 3.0, 4.0, 5.0]), np.array([10.0, 20.0, 30.0, 40.0, -50.0])
    got = execute(Op.SELECT, [(BOOL8, condition, (0.0, 0)), (F32, x, (0.0, 0)), (F32, y, (0.0, 0))], F32)
    assert got.tolist() == [a if c else b for c, a, b in zip(condition.tolist(), x.tolist(), y.tolist())]
    qx, qy = np.array([0, 50, 129, 200, 255]), np.array([255, 127, 3, 100, 0])
    got = execute(Op.SELECT, [(BOOL8, condition, (0.0, 0)), (QU8, qx, (1.5, 129)), (QU8, qy, (0.5, 127))], QU8, (1.0, 128))
    want = [requantized((a - 129) * 1.5 if c else (b - 127) * 0.5, 1.0, 128, QU8)
            for c, a, b in zip(condition.tolist(), qx.tolist(), qy.tolist())]
    assert got.tolist() == want


@pytest.mark.parametrize("op, operands, outputs, names", [
    (Op.EXP, [(I32, (3,), 0.0, 0)], [(I32, (3,), 0.0, 0)], ("input 0", "TENSOR_INT32")),
    (Op.ABS, [(F32, (3,), 0.0, 0)], [(F16, (3,), 0.0, 0)], ("output 0", "differs")),
    (Op.FLOOR, [(F32, (1, 1, 1, 1, 2), 0.0, 0)], [(F32, (1, 1, 1, 1, 2), 0.0, 0)], ("input 0", "rank 5")),
    (Op.LOGISTIC, [(F32, (1, 1, 1, 1, 2), 0.0, 0)], [(F32, (1, 1, 1, 1, 2), 0.0, 0)], ("input 0", "rank 5")),
    (Op.MAXIMUM, [(F32, (2, 3), 0.0, 0), (F32, (2,), 0.0, 0)], [(F32, (2, 3), 0.0, 0)], ("input 1", "broadcast")),
    (Op.MAXIMUM, [(F32, (3,), 0.0, 0), (I32, (3,), 0.0, 0)], [(F32, (3,), 0.0, 0)], ("input 1", "TENSOR_INT32")),
    (Op.POW, [(QU8, (3,), 0.5, 0), (QU8, (3,), 0.5, 0)], [(QU8, (3,), 0.5, 0)], ("input 0", "TENSOR_QUANT8_ASYMM")),
    (Op.LESS, [(F32, (3,), 0.0, 0), (F32, (3,), 0.0, 0)], [(F32, (3,), 0.0, 0)], ("output 0", "TENSOR_BOOL8")),
    (Op.LOGICAL_AND, [(F32, (3,), 0.0, 0), (F32, (3,), 0.0, 0)], [(BOOL8, (3,), 0.0, 0)], ("input 0", "TENSOR_FLOAT32")),
    (Op.SELECT, [(F32, (3,), 0.0, 0), (F32, (3,), 0.0, 0), (F32, (3,), 0.0, 0)], [(F32, (3,), 0.0, 0)], ("input 0", "condition")),
    (Op.SELECT, [(BOOL8, (3,), 0.0, 0), (F32, (2,), 0.0, 0), (F32, (3,), 0.0, 0)], [(F32, (3,), 0.0, 0)], ("input 1", "shape")),
    (Op.PRELU, [(F32, (2, 3), 0.0, 0), (F16, (3,), 0.0, 0)], [(F32, (2, 3), 0.0, 0)], ("input 1", "TENSOR_FLOAT16")),
    (Op.HARD_SWISH, [(I32, (3,), 0.0, 0)], [(I32, (3,), 0.0, 0)], ("input 0", "TENSOR_INT32")),
])
def test_refusals_name_the_operand_and_the_feature(op, operands, outputs, names) -> None:
    message = str(refusal(op, operands, outputs))
    assert all(name in message for name in names), message


def test_rank_five_where_nnapi_allows_any_rank() -> None:
    condition = np.ones((2, 1, 2, 1, 2), np.uint8)
    x = np.arange(8.0).reshape(condition.shape)
    got = execute(Op.SELECT, [(BOOL8, condition, (0.0, 0)), (F32, x, (0.0, 0)), (F32, -x, (0.0, 0))], F32)
    assert got.tolist() == x.tolist()


def test_quantize_rounds_half_away_and_saturates() -> None:
    x = np.array([-10.0, -0.25, -0.15, 0.05, 0.15, 0.35, 12.75, 100.0])
    for out_type, zp in ((QU8, 3), (QS8, -7)):
        got = execute(Op.QUANTIZE, [(F32, x, (0.0, 0))], out_type, (0.1, zp))
        assert got.tolist() == [requantized(v, 0.1, zp, out_type) for v in x.astype(np.float32).astype(float).tolist()]


def test_dequantize_each_quantized_type() -> None:
    q = np.array([0, 7, 128, 255])
    assert execute(Op.DEQUANTIZE, [(QU8, q, (0.5, 128))], F32).tolist() == [(v - 128) * 0.5 for v in q.tolist()]
    s = np.array([-128, -1, 0, 127])
    assert execute(Op.DEQUANTIZE, [(QS8, s, (0.25, -3))], F16).tolist() == [(v + 3) * 0.25 for v in s.tolist()]
    assert execute(Op.DEQUANTIZE, [(OperandType.TENSOR_QUANT8_SYMM, s, (0.25, 0))], F32).tolist() == \
        [v * 0.25 for v in s.tolist()]


def test_cast_converts_stored_values_truncating_and_saturating() -> None:
    x = np.array([-300.5, -1.75, -0.5, 0.5, 2.99, 255.5, 3e9])
    assert execute(Op.CAST, [(F32, x, (0.0, 0))], QU8, (4.0, 100)).tolist() == \
        [min(max(int(v), 0), 255) for v in x.astype(np.float32).astype(float).tolist()]
    assert execute(Op.CAST, [(F32, x, (0.0, 0))], I32).tolist() == \
        [min(max(int(v), -2**31), 2**31 - 1) for v in x.astype(np.float32).astype(float).tolist()]
    q = np.array([0, 7, 255])
    assert execute(Op.CAST, [(QU8, q, (4.0, 100))], F16).tolist() == [0.0, 7.0, 255.0]  # as stored, not dequantized
    i = np.array([-2**31, -5, 70000])
    assert execute(Op.CAST, [(I32, i, (0.0, 0))], QU8, (1.0, 0)).tolist() == [0, 0, 255]


@pytest.mark.parametrize("op, operands, outputs, names", [
    (Op.QUANTIZE, [(F32, (3,), 0.0, 0)], [(I32, (3,), 0.0, 0)], ("output 0", "TENSOR_QUANT8_ASYMM")),
    (Op.DEQUANTIZE, [(F32, (3,), 0.0, 0)], [(F32, (3,), 0.0, 0)], ("input 0", "TENSOR_FLOAT32")),
    (Op.CAST, [(BOOL8, (3,), 0.0, 0)], [(F32, (3,), 0.0, 0)], ("input 0", "TENSOR_BOOL8")),
    (Op.CAST, [(QS8, (3,), 0.5, 0)], [(QS8, (3,), 0.25, 0)], ("output 0", "scale")),
])
def test_conversion_refusals(op, operands, outputs, names) -> None:
    message = str(refusal(op, operands, outputs))
    assert all(name in message for name in names), message


def _softmax_rows(rows, beta):
    out = []
    for row in rows:
        exps = [math.exp(beta * (v - max(row))) for v in row]
        out.append([e / sum(exps) for e in exps])
    return out


def test_softmax_along_an_axis_float_and_quantized() -> None:
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]])
    got = execute(Op.SOFTMAX, [(F32, x, (0.0, 0))], F32, scalars=[(OperandType.FLOAT32, 0.5), (OperandType.INT32, 0)])
    columns = _softmax_rows(x.T.tolist(), 0.5)
    np.testing.assert_allclose(got, np.array(columns).T, rtol=1e-6)
    q = np.array([[0, 10, 200, 255]])
    got = execute(Op.SOFTMAX, [(QU8, q, (0.1, 128))], QU8, (1 / 256, 0), scalars=[(OperandType.FLOAT32, 1.0)])
    real = _softmax_rows([[(v - 128) * 0.1 for v in q[0].tolist()]], 1.0)
    assert got.tolist() == [[requantized(v, 1 / 256, 0, QU8) for v in real[0]]]
    error = refusal(Op.SOFTMAX, [(QS8, (1, 4), 0.5, 0), (OperandType.FLOAT32, (), 0.0, 0)], [(QS8, (1, 4), 1 / 256, 0)])
    assert "output 0" in str(error) and "zeroPoint -128" in str(error)


def test_log_softmax_is_the_log_of_softmax() -> None:
    x = np.array([[0.0, -6.0, 2.0, 4.0], [3.0, -2.0, 10.0, 1.0]]).reshape(1, 1, 1, 2, 4)
    got = execute(Op.LOG_SOFTMAX, [(F32, x, (0.0, 0))], F32, scalars=[(OperandType.FLOAT32, 2.0), (OperandType.INT32, 4)])
    want = [[math.log(p) for p in row] for row in _softmax_rows(x.reshape(2, 4).tolist(), 2.0)]
    np.testing.assert_allclose(got.reshape(2, 4), want, rtol=1e-6, atol=1e-6)
