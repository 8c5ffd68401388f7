"""Numeric tests of each reference operation against an independent computation in the test.

The expected values here are written out with plain loops or direct numpy formulas,
not with the reference's kernels, so a kernel bug cannot hide behind itself.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.judging.builders import ModelBuilder, pack_request
from harness.api.hal import OperandType, OperationType, numpy_dtype
from reference_driver import ReferenceDevice

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
QU8, QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED


def run(op, tensors, scalars, out_type, out_dims=(), out_scale=0.0, out_zp=0, quant=None, device=None):
    """Execute one operation with tensor inputs as model inputs and scalars as constants."""
    b = ModelBuilder()
    quant = quant or [(0.0, 0)] * len(tensors)
    inputs = [b.input(t, v.shape, s, z) for (t, v), (s, z) in zip(tensors, quant)]
    constants = [b.scalar(int(v)) for v in scalars]
    b.operation(op, inputs + constants, out_type, out_dims, out_scale, out_zp)
    model = b.build()
    device = device or ReferenceDevice()
    prepared = device.prepare_model(model)
    capacity = 1 << 16
    request, _, out = pack_request(model, [v for _, v in tensors], output_capacity=[capacity])
    result = prepared.execute(request)
    dims = result.output_shapes[0].dimensions
    count = math.prod(dims)
    return np.frombuffer(out.read(), dtype=numpy_dtype(out_type), count=count).reshape(dims)


def act(x, code):
    return {0: x, 1: np.maximum(x, 0), 2: np.minimum(np.maximum(x, -1), 1), 3: np.minimum(np.maximum(x, 0), 6)}[code]


def requant(real, scale, zp, low, high):
    q = np.sign(real / scale) * np.floor(np.abs(real / scale) + 0.5) + zp
    return np.minimum(np.maximum(q, low), high)


shapes = st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((2, 1, 4), (3, 1)), ((1,), (2, 2)), ((2, 2, 2, 2), (2, 1, 2))])
floats = st.floats(-50, 50, width=32)


@settings(max_examples=40, deadline=None)
@given(
    op=st.sampled_from([(OperationType.ADD, np.add), (OperationType.SUB, np.subtract),
                        (OperationType.MUL, np.multiply), (OperationType.DIV, np.divide)]),
    shape_pair=shapes,
    activation=st.integers(0, 3),
    data=st.data(),
)
def test_float32_binary_ops_with_broadcasting_and_activation(op, shape_pair, activation, data) -> None:
    code, ufunc = op
    a = data.draw(hnp.arrays(np.float32, shape_pair[0], elements=floats), label="a")
    b = data.draw(hnp.arrays(np.float32, shape_pair[1], elements=floats.filter(lambda v: abs(v) > 1e-3)), label="b")
    got = run(code, [(F32, a), (F32, b)], [activation], F32)
    expected = act(ufunc(a.astype(np.float64), b.astype(np.float64)), activation)
    assert got.shape == np.broadcast_shapes(a.shape, b.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_float16_add_and_int32_ops() -> None:
    a = np.float16([0.5, -2.25, 1000])
    b = np.float16([0.25, 1.0, 24])
    assert run(OperationType.ADD, [(F16, a), (F16, b)], [3], F16).tolist() == [0.75, 0, 6]
    x = np.int32([2**31 - 1, -7, 6])
    y = np.int32([1, 3, -4])
    expected_wrap = [-(2**31), -4, 2]
    assert run(OperationType.ADD, [(I32, x), (I32, y)], [0], I32).tolist() == expected_wrap
    assert run(OperationType.MUL, [(I32, x[1:]), (I32, y[1:])], [0], I32).tolist() == [-21, -24]


@pytest.mark.parametrize("out_type, low, high", [(QU8, 0, 255), (QS8, -128, 127)])
@pytest.mark.parametrize("op, fn", [(OperationType.ADD, lambda p, q: p + q), (OperationType.MUL, lambda p, q: p * q),
                                    (OperationType.SUB, lambda p, q: p - q)])
def test_quantized_arithmetic_requantizes_half_away_from_zero(out_type, low, high, op, fn) -> None:
    dtype = np.dtype(numpy_dtype(out_type))
    a = np.arange(low, high + 1, 17).astype(dtype)
    b = a[::-1].copy()
    (sa, za), (sb, zb), (so, zo) = (0.5, 3 if low == 0 else -3), (0.25, 7 if low == 0 else 2), (0.75, 5 if low == 0 else -1)
    got = run(op, [(out_type, a), (out_type, b)], [0], out_type, out_scale=so, out_zp=zo, quant=[(sa, za), (sb, zb)])
    real = fn((a.astype(np.float64) - za) * sa, (b.astype(np.float64) - zb) * sb)
    assert got.tolist() == requant(real, so, zo, low, high).astype(int).tolist()


def test_quantized_rounding_at_exact_halves() -> None:
    a = np.uint8([1, 3, 5])  # real values 0.5, 1.5, 2.5 at scale 0.5, zero point 0
    zero = np.uint8([0, 0, 0])
    got = run(OperationType.ADD, [(QU8, a), (QU8, zero)], [0], QU8, out_scale=1.0, quant=[(0.5, 0), (0.5, 0)])
    assert got.tolist() == [1, 2, 3]  # half away from zero, not to even


@pytest.mark.parametrize("activation", [0, 1, 2, 3])
def test_quantized_add_with_activation(activation) -> None:
    a = np.uint8(range(0, 250, 10))
    got = run(OperationType.ADD, [(QU8, a), (QU8, a)], [activation], QU8, out_scale=0.1, out_zp=128,
              quant=[(0.05, 100), (0.05, 100)])
    real = act(2 * (a.astype(np.float64) - 100) * 0.05, activation)
    assert got.tolist() == requant(real, 0.1, 128, 0, 255).astype(int).tolist()


def test_relu() -> None:
    x = np.float32([-3, -0.0, 0.5, 7])
    assert run(OperationType.RELU, [(F32, x)], [], F32).tolist() == [0, 0, 0.5, 7]
    q = np.uint8([0, 100, 128, 255])
    got = run(OperationType.RELU, [(QU8, q)], [], QU8, out_scale=0.5, out_zp=128, quant=[(0.5, 128)])
    assert got.tolist() == [128, 128, 128, 255]


def test_reshape_with_shape_as_input_and_as_constant() -> None:
    x = np.arange(12, dtype=np.float32)
    got = run(OperationType.RESHAPE, [(F32, x), (I32, np.int32([3, -1]))], [], F32)
    assert got.shape == (3, 4) and got.ravel().tolist() == list(range(12))
    b = ModelBuilder()
    data = b.input(F32, (12,))
    b.operation(OperationType.RESHAPE, [data, b.constant(I32, np.int32([2, 2, 3]))], F32, (2, 2, 3))
    model = b.build()
    request, _, out = pack_request(model, [x])
    ReferenceDevice().prepare_model(model).execute(request)
    assert np.frombuffer(out.read(), np.float32).tolist() == list(range(12))


def test_nnapi_limits_refused_as_nnapi_does() -> None:
    """CHOICE-8: RESHAPE's shape is a 1-D tensor; CONCATENATION takes tensors of rank at most 4."""
    from harness.api.hal import DriverError, ErrorStatus

    x = np.arange(6, dtype=np.float32)
    with pytest.raises(DriverError) as refused:
        run(OperationType.RESHAPE, [(F32, x), (I32, np.int32([[6], [1]]))], [], F32)
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT  # refused at preparation: the operand is 2-D
    rank5 = np.zeros((1, 1, 1, 1, 2), np.float32)
    with pytest.raises(DriverError) as refused:
        run(OperationType.CONCATENATION, [(F32, rank5), (F32, rank5)], [0], F32)
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    rank4 = np.zeros((1, 1, 1, 2), np.float32)
    assert run(OperationType.CONCATENATION, [(F32, rank4), (F32, rank4)], [3], F32).shape == (1, 1, 1, 4)


@pytest.mark.parametrize("op", [OperationType.RELU, OperationType.RELU1, OperationType.RELU6])
def test_quantized_relu_keeps_its_input_quantization(op) -> None:
    """CHOICE-8: NeuralNetworks.h gives a quantized RELU, RELU1 or RELU6 output its input's scale
    and zeroPoint; a model that does not is refused at preparation."""
    from harness.api.hal import DriverError, ErrorStatus

    q = np.uint8([0, 100, 128, 255])
    for out_scale, out_zp in ((0.25, 128), (0.5, 127)):
        with pytest.raises(DriverError) as refused:
            run(op, [(QU8, q)], [], QU8, out_scale=out_scale, out_zp=out_zp, quant=[(0.5, 128)])
        assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    assert run(op, [(QU8, q)], [], QU8, out_scale=0.5, out_zp=128, quant=[(0.5, 128)]).shape == (4,)


def test_quantized_mul_output_scale_above_the_product() -> None:
    """CHOICE-8: NeuralNetworks.h requires output_scale > input1_scale * input2_scale of a quantized MUL."""
    from harness.api.hal import DriverError, ErrorStatus

    a = np.uint8([1, 2, 3])
    for out_scale in (0.25, 0.125):  # equal to the product 0.5 * 0.5, and below it
        with pytest.raises(DriverError) as refused:
            run(OperationType.MUL, [(QU8, a), (QU8, a)], [0], QU8, out_scale=out_scale, quant=[(0.5, 0), (0.5, 0)])
        assert refused.value.status == ErrorStatus.INVALID_ARGUMENT
    got = run(OperationType.MUL, [(QU8, a), (QU8, a)], [0], QU8, out_scale=0.5, quant=[(0.5, 0), (0.5, 0)])
    assert got.tolist() == requant((a.astype(np.float64) * 0.5) ** 2, 0.5, 0, 0, 255).astype(int).tolist()


def test_concatenation_along_each_axis() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(100, 106, dtype=np.float32).reshape(2, 3)
    rows = run(OperationType.CONCATENATION, [(F32, a), (F32, b)], [0], F32)
    assert rows.tolist() == [[0, 1, 2], [3, 4, 5], [100, 101, 102], [103, 104, 105]]
    cols = run(OperationType.CONCATENATION, [(F32, a), (F32, b)], [1], F32)
    assert cols.tolist() == [[0, 1, 2, 100, 101, 102], [3, 4, 5, 103, 104, 105]]


@pytest.mark.parametrize("axis", [-1, -2, 2])
def test_concatenation_axis_from_zero_to_rank(axis) -> None:
    """CHOICE-8: NeuralNetworks.h gives CONCATENATION's axis no negative form, and NNAPI's CPU
    implementation refuses one at execution, as it does an axis past the rank."""
    from harness.api.hal import DriverError, ErrorStatus

    a = np.zeros((2, 3), np.float32)
    with pytest.raises(DriverError) as refused:
        run(OperationType.CONCATENATION, [(F32, a), (F32, a)], [axis], F32)
    assert refused.value.status == ErrorStatus.GENERAL_FAILURE


def test_fully_connected_float_and_quantized() -> None:
    x = np.float32([[1, 2, 3], [-1, 0, 4]])
    w = np.float32([[1, 0, -1], [2, 1, 0.5]])
    bias = np.float32([0.5, -10])
    got = run(OperationType.FULLY_CONNECTED, [(F32, x), (F32, w), (F32, bias)], [1], F32)
    expected = [[max(0, sum(x[r, i] * w[u, i] for i in range(3)) + bias[u]) for u in range(2)] for r in range(2)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    qx, qw, qb = np.uint8([[10, 20, 30]]), np.uint8([[5, 15, 25]]), np.int32([40])
    got = run(OperationType.FULLY_CONNECTED, [(QU8, qx), (QU8, qw), (I32, qb)], [0], QU8, out_scale=1.0, out_zp=0,
              quant=[(0.5, 10), (0.25, 15), (0.125, 0)])
    real = sum((int(qx[0, i]) - 10) * 0.5 * (int(qw[0, i]) - 15) * 0.25 for i in range(3)) + 40 * 0.125
    assert 0 < real < 255  # inside the range, so saturation does not hide a wrong sum
    assert got.tolist() == [[int(requant(np.float64(real), 1.0, 0, 0, 255))]]


def naive_conv(x, f, bias, pads, strides, activation):
    pad_l, pad_r, pad_t, pad_b = pads
    stride_w, stride_h = strides
    n, h, w, c = x.shape
    d, kh, kw, _ = f.shape
    out_h = (h + pad_t + pad_b - kh) // stride_h + 1
    out_w = (w + pad_l + pad_r - kw) // stride_w + 1
    out = np.zeros((n, out_h, out_w, d))
    for b_, y, xx, o in itertools.product(range(n), range(out_h), range(out_w), range(d)):
        total = bias[o]
        for i, j, ch in itertools.product(range(kh), range(kw), range(c)):
            row, col = y * stride_h + i - pad_t, xx * stride_w + j - pad_l
            if 0 <= row < h and 0 <= col < w:
                total += x[b_, row, col, ch] * f[o, i, j, ch]
        out[b_, y, xx, o] = total
    return act(out, activation)


@pytest.mark.parametrize("pads, strides", [((0, 0, 0, 0), (1, 1)), ((1, 1, 1, 1), (1, 1)), ((1, 0, 2, 1), (2, 2)),
                                           ((0, 1, 0, 1), (2, 1))])
def test_conv_2d_nhwc_with_padding_and_stride(pads, strides) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    f = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    got = run(OperationType.CONV_2D, [(F32, x), (F32, f), (F32, bias)], [*pads, *strides, 0], F32)
    np.testing.assert_allclose(got, naive_conv(x, f, bias, pads, strides, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pads", [(2, 0, 0, 0), (0, 2, 0, 0), (0, 0, 3, 0), (0, 0, 0, 3)])
def test_conv_2d_padding_below_the_filter(pads) -> None:
    """CHOICE-8: NNAPI's CPU implementation refuses, at execution, padding on any side as wide as
    the filter or wider (this one is 3 high and 2 wide); a pixel narrower runs."""
    from harness.api.hal import DriverError, ErrorStatus

    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    f = np.ones((1, 3, 2, 1), np.float32)
    bias = np.float32([0.5])
    tensors = [(F32, x), (F32, f), (F32, bias)]
    with pytest.raises(DriverError) as refused:
        run(OperationType.CONV_2D, tensors, [*pads, 1, 1, 0], F32)
    assert refused.value.status == ErrorStatus.GENERAL_FAILURE
    narrower = tuple(max(p - 1, 0) for p in pads)
    got = run(OperationType.CONV_2D, tensors, [*narrower, 1, 1, 0], F32)
    np.testing.assert_allclose(got, naive_conv(x, f, bias, narrower, (1, 1), 0), rtol=1e-6)


def test_conv_2d_quantized() -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(0, 255, (1, 4, 4, 2), dtype=np.uint8)
    f = rng.integers(0, 255, (2, 2, 2, 2), dtype=np.uint8)
    bias = np.int32([100, -200])
    got = run(OperationType.CONV_2D, [(QU8, x), (QU8, f), (I32, bias)], [0, 0, 0, 0, 1, 1, 1], QU8,
              out_scale=0.5, out_zp=20, quant=[(0.1, 128), (0.05, 100), (0.005, 0)])
    real = naive_conv((x.astype(float) - 128) * 0.1, (f.astype(float) - 100) * 0.05, bias * 0.005, (0, 0, 0, 0), (1, 1), 1)
    assert got.tolist() == requant(real, 0.5, 20, 0, 255).astype(int).tolist()
