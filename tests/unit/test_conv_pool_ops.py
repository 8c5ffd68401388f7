"""DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D and the pools against direct loops.

Each expected value is computed here by a plain loop over output (or input) pixels, written from
NeuralNetworks.h's formulas, never with the reference's kernels; the models run through the
reference device (validation, execution), so the signatures' parsing is checked too.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.hal import DriverError, ErrorStatus, OperandType, OperationType, SymmPerChannelQuantParams, numpy_dtype
from harness.judging.builders import ModelBuilder, pack_request
from reference_driver import ReferenceDevice

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
QU8, QS8, PC = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
DEPTHWISE, GROUPED, TRANSPOSE = OperationType.DEPTHWISE_CONV_2D, OperationType.GROUPED_CONV_2D, OperationType.TRANSPOSE_CONV_2D
AVG, MAX, L2 = OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D, OperationType.L2_POOL_2D


@dataclass(frozen=True)
class T:
    """A tensor operand: a model input unless ``constant``."""

    type: OperandType
    value: np.ndarray
    scale: float = 0.0
    zero_point: int = 0
    channel: SymmPerChannelQuantParams | None = None
    constant: bool = False


def model_of(op, args, out_type, out_scale=0.0, out_zp=0):
    b = ModelBuilder()
    indexes, feeds = [], []
    for a in args:
        if isinstance(a, bool):
            indexes.append(b.constant(OperandType.BOOL, a))
        elif isinstance(a, int):
            indexes.append(b.scalar(a))
        elif a.constant:
            indexes.append(b.constant(a.type, a.value, a.scale, a.zero_point, channel_quant=a.channel))
        else:
            indexes.append(b.input(a.type, a.value.shape, a.scale, a.zero_point, channel_quant=a.channel))
            feeds.append(a.value)
    b.operation(op, indexes, out_type, (), out_scale, out_zp)
    return b.build(), feeds


def run(op, args, out_type, out_scale=0.0, out_zp=0):
    model, feeds = model_of(op, args, out_type, out_scale, out_zp)
    prepared = ReferenceDevice().prepare_model(model)
    request, _, out = pack_request(model, feeds, output_capacity=[1 << 16])
    result = prepared.execute(request)
    dims = result.output_shapes[0].dimensions
    return np.frombuffer(out.read(), numpy_dtype(out_type), count=math.prod(dims)).reshape(dims)


def refusal(op, args, out_type, out_scale=0.0, out_zp=0) -> str:
    model, _ = model_of(op, args, out_type, out_scale, out_zp)
    with pytest.raises(DriverError) as caught:
        ReferenceDevice().prepare_model(model)
    assert caught.value.status == ErrorStatus.INVALID_ARGUMENT
    return caught.value.message


def execution_failure(op, args, out_type, out_scale=0.0, out_zp=0) -> str:
    model, feeds = model_of(op, args, out_type, out_scale, out_zp)
    prepared = ReferenceDevice().prepare_model(model)
    request, _, _ = pack_request(model, feeds, output_capacity=[1 << 16])
    with pytest.raises(DriverError) as caught:
        prepared.execute(request)
    assert caught.value.status == ErrorStatus.GENERAL_FAILURE
    return caught.value.message


def act(x, code):
    return {0: x, 1: max(x, 0.0), 2: min(max(x, -1.0), 1.0), 3: min(max(x, 0.0), 6.0)}[code]


def requant(real, scale, zp, low, high):
    q = math.copysign(math.floor(abs(real / scale) + 0.5), real / scale) + zp
    return min(max(q, low), high)


def same_padding(size, stride, kernel, dilation=1):
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


# --------------------------------------------------------------------------- direct formulas


def depthwise_direct(x, f, bias, pads, strides, multiplier, dilation=(1, 1), activation=0):
    """x NHWC, f [1, kh, kw, c*m]; pads (left, right, top, bottom); strides and dilation (w, h)."""
    n, h, w, c = x.shape
    _, kh, kw, d = f.shape
    left, right, top, bottom = pads
    oh = (h + top + bottom - ((kh - 1) * dilation[1] + 1)) // strides[1] + 1
    ow = (w + left + right - ((kw - 1) * dilation[0] + 1)) // strides[0] + 1
    out = np.zeros((n, oh, ow, d))
    for b, y, xx, ch, q in itertools.product(range(n), range(oh), range(ow), range(c), range(multiplier)):
        k = ch * multiplier + q
        total = float(bias[k])
        for i, j in itertools.product(range(kh), range(kw)):
            iy, ix = y * strides[1] + i * dilation[1] - top, xx * strides[0] + j * dilation[0] - left
            if 0 <= iy < h and 0 <= ix < w:
                total += float(x[b, iy, ix, ch]) * float(f[0, i, j, k])
        out[b, y, xx, k] = act(total, activation)
    return out


def grouped_direct(x, f, bias, pads, strides, groups, activation=0):
    n, h, w, c = x.shape
    d, kh, kw, cg = f.shape
    left, right, top, bottom = pads
    oh, ow = (h + top + bottom - kh) // strides[1] + 1, (w + left + right - kw) // strides[0] + 1
    out = np.zeros((n, oh, ow, d))
    per_group = d // groups
    for b, y, xx, k in itertools.product(range(n), range(oh), range(ow), range(d)):
        group = k // per_group
        total = float(bias[k])
        for i, j, ch in itertools.product(range(kh), range(kw), range(cg)):
            iy, ix = y * strides[1] + i - top, xx * strides[0] + j - left
            if 0 <= iy < h and 0 <= ix < w:
                total += float(x[b, iy, ix, group * cg + ch]) * float(f[k, i, j, ch])
        out[b, y, xx, k] = act(total, activation)
    return out


def transpose_direct(x, f, bias, pads, strides, activation=0):
    """Scatter: each input pixel adds its products at (y*sh + i - top, x*sw + j - left)."""
    n, h, w, c = x.shape
    d, kh, kw, _ = f.shape
    left, right, top, bottom = pads
    oh, ow = (h - 1) * strides[1] + kh - top - bottom, (w - 1) * strides[0] + kw - left - right
    out = np.zeros((n, oh, ow, d))
    for b, y, xx, i, j, k in itertools.product(range(n), range(h), range(w), range(kh), range(kw), range(d)):
        oy, ox = y * strides[1] + i - top, xx * strides[0] + j - left
        if 0 <= oy < oh and 0 <= ox < ow:
            out[b, oy, ox, k] += sum(float(x[b, y, xx, ch]) * float(f[k, i, j, ch]) for ch in range(c))
    out += bias
    return np.vectorize(lambda v: act(v, activation))(out) if out.size else out


def pool_direct(x, kind, pads, strides, filt, activation=0):
    n, h, w, c = x.shape
    left, right, top, bottom = pads
    fw, fh = filt
    oh, ow = (h + top + bottom - fh) // strides[1] + 1, (w + left + right - fw) // strides[0] + 1
    out = np.zeros((n, oh, ow, c))
    for b, y, xx, ch in itertools.product(range(n), range(oh), range(ow), range(c)):
        inside = [float(x[b, iy, ix, ch]) for iy in range(y * strides[1] - top, y * strides[1] - top + fh)
                  for ix in range(xx * strides[0] - left, xx * strides[0] - left + fw) if 0 <= iy < h and 0 <= ix < w]
        value = {"avg": sum(inside) / len(inside), "max": max(inside),
                 "l2": math.sqrt(sum(v * v for v in inside) / len(inside))}[kind]
        out[b, y, xx, ch] = act(value, activation)
    return out


def nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


# --------------------------------------------------------------------------- DEPTHWISE_CONV_2D


@settings(max_examples=40, deadline=None)
@given(data=st.data(), layout=st.sampled_from([None, False, True]), multiplier=st.integers(1, 3),
       activation=st.integers(0, 3))
def test_depthwise_float32_explicit_matches_the_direct_loop(data, layout, multiplier, activation) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    c, h, w = (data.draw(st.integers(1, 4), label=name) for name in ("depth", "height", "width"))
    dilated = layout is not None and data.draw(st.booleans(), label="dilation inputs")
    dilation = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))) if dilated else (1, 1)
    kh = data.draw(st.integers(1, (h - 1) // dilation[1] + 1), label="kernel h")
    kw = data.draw(st.integers(1, (w - 1) // dilation[0] + 1), label="kernel w")
    span_h, span_w = (kh - 1) * dilation[1] + 1, (kw - 1) * dilation[0] + 1
    pads = tuple(data.draw(st.integers(0, span - 1)) for span in (span_w, span_w, span_h, span_h))
    strides = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    x = rng.uniform(-4, 4, (2, h, w, c)).astype(np.float32)
    f = rng.uniform(-2, 2, (1, kh, kw, c * multiplier)).astype(np.float32)
    bias = rng.uniform(-2, 2, c * multiplier).astype(np.float32)
    tail = ([] if layout is None else [bool(layout)]) + (list(dilation) if dilated else [])
    given_x = nchw(x) if layout else x
    got = run(DEPTHWISE, [T(F32, given_x), T(F32, f, constant=True), T(F32, bias, constant=True), *pads, *strides,
                          multiplier, activation, *tail], F32)
    expected = depthwise_direct(x, f, bias, pads, strides, multiplier, dilation, activation)
    np.testing.assert_allclose(got, nchw(expected) if layout else expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("type", [QU8, QS8])
@pytest.mark.parametrize("layout", [False, True])
def test_depthwise_per_channel_implicit_same(type, layout) -> None:
    """Filter scales along dimension 3, a bias of scale 0 (input scale x each channel's), SAME padding."""
    rng = np.random.default_rng(7)
    low, high = (0, 255) if type == QU8 else (-128, 127)
    x = rng.integers(low, high, (1, 5, 4, 2), endpoint=True).astype(numpy_dtype(type))
    f = rng.integers(-127, 127, (1, 3, 2, 4), endpoint=True).astype(np.int8)
    scales = (0.02, 0.05, 0.1, 0.25)
    bias = rng.integers(-500, 500, 4).astype(np.int32)
    in_scale, in_zp, out_scale, out_zp = 0.5, (3 if type == QU8 else -2), 1.0, (120 if type == QU8 else 5)
    channel = SymmPerChannelQuantParams(scales, 3)
    given_x = nchw(x) if layout else x
    got = run(DEPTHWISE, [T(type, given_x, in_scale, in_zp), T(PC, f, channel=channel, constant=True),
                          T(I32, bias, constant=True), 1, 2, 1, 2, 0, layout], type, out_scale, out_zp)
    real_x = (x.astype(np.float64) - in_zp) * in_scale
    real_f = f * np.asarray(scales)
    real_bias = bias * in_scale * np.asarray(scales)
    pads = (*same_padding(4, 2, 2), *same_padding(5, 1, 3))
    real = depthwise_direct(real_x, real_f, real_bias, pads, (2, 1), 2)
    expected = np.vectorize(lambda v: requant(v, out_scale, out_zp, low, high))(real)
    np.testing.assert_array_equal(got, nchw(expected) if layout else expected)


def test_depthwise_eleven_inputs_are_read_by_the_type_of_input_8() -> None:
    """Eleven inputs: a padding scheme with layout and dilation when input 8 is BOOL, explicit
    padding (no layout) when it is INT32."""
    x = np.arange(1, 26, dtype=np.float32).reshape(1, 5, 5, 1)
    f = np.ones((1, 2, 2, 1), np.float32)
    b = np.zeros(1, np.float32)
    tensors = [T(F32, x), T(F32, f, constant=True), T(F32, b, constant=True)]
    implicit = run(DEPTHWISE, [*tensors, 2, 1, 1, 1, 0, False, 2, 2], F32)  # VALID, dilation 2
    np.testing.assert_array_equal(implicit, depthwise_direct(x, f, b, (0, 0, 0, 0), (1, 1), 1, (2, 2)))
    explicit = run(DEPTHWISE, [*tensors, 1, 0, 1, 0, 2, 2, 1, 0], F32)
    np.testing.assert_array_equal(explicit, depthwise_direct(x, f, b, (1, 0, 1, 0), (2, 2), 1))


def test_depthwise_float16() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (1, 4, 4, 3)).astype(np.float16)
    f = rng.uniform(-1, 1, (1, 2, 2, 6)).astype(np.float16)
    b = rng.uniform(-1, 1, 6).astype(np.float16)
    got = run(DEPTHWISE, [T(F16, x), T(F16, f), T(F16, b), 0, 1, 0, 1, 1, 1, 2, 0], F16)
    expected = depthwise_direct(x.astype(np.float64), f.astype(np.float64), b.astype(np.float64), (0, 1, 0, 1), (1, 1), 2)
    np.testing.assert_array_equal(got, expected.astype(np.float16))


# --------------------------------------------------------------------------- GROUPED_CONV_2D


@settings(max_examples=30, deadline=None)
@given(data=st.data(), layout=st.booleans(), groups=st.integers(1, 3), activation=st.integers(0, 3),
       implicit=st.booleans())
def test_grouped_float32_matches_the_direct_loop(data, layout, groups, activation, implicit) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    cg, dg, h, w = (data.draw(st.integers(1, 3), label=name) for name in ("depth group", "out per group", "h", "w"))
    kh, kw = data.draw(st.integers(1, h), label="kh"), data.draw(st.integers(1, w), label="kw")
    strides = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    x = rng.uniform(-4, 4, (2, h, w, groups * cg)).astype(np.float32)
    f = rng.uniform(-2, 2, (groups * dg, kh, kw, cg)).astype(np.float32)
    bias = rng.uniform(-2, 2, groups * dg).astype(np.float32)
    if implicit:
        pads = (*same_padding(w, strides[0], kw), *same_padding(h, strides[1], kh))
        padding = [1]
    else:
        pads = tuple(data.draw(st.integers(0, k - 1)) for k in (kw, kw, kh, kh))
        padding = list(pads)
    got = run(GROUPED, [T(F32, nchw(x) if layout else x), T(F32, f), T(F32, bias), *padding, *strides, groups,
                        activation, layout], F32)
    expected = grouped_direct(x, f, bias, pads, strides, groups, activation)
    np.testing.assert_allclose(got, nchw(expected) if layout else expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("per_channel", [False, True])
def test_grouped_quantized(per_channel) -> None:
    rng = np.random.default_rng(11)
    x = rng.integers(0, 255, (1, 3, 3, 4), endpoint=True).astype(np.uint8)
    f = rng.integers(0 if not per_channel else -127, 255 if not per_channel else 127, (6, 2, 2, 2), endpoint=True)
    in_scale, in_zp = 0.25, 128
    if per_channel:
        scales = (0.02, 0.05, 0.1, 0.02, 0.05, 0.1)
        filt = T(PC, f.astype(np.int8), channel=SymmPerChannelQuantParams(scales, 0), constant=True)
        real_f = f * np.asarray(scales)[:, None, None, None]
        bias_scale, bias_scales = 0.0, in_scale * np.asarray(scales)
    else:
        filt = T(QU8, f.astype(np.uint8), 0.05, 100, constant=True)
        real_f = (f - 100) * 0.05
        bias_scale = bias_scales = in_scale * 0.05
    bias = rng.integers(-300, 300, 6).astype(np.int32)
    got = run(GROUPED, [T(QU8, x, in_scale, in_zp), filt, T(I32, bias, bias_scale, constant=True), 0, 1, 1, 0, 1, 1,
                        2, 1, False], QU8, 0.5, 100)
    real = grouped_direct((x.astype(np.float64) - in_zp) * in_scale, real_f, bias * bias_scales, (0, 1, 1, 0), (1, 1), 2, 1)
    np.testing.assert_array_equal(got, np.vectorize(lambda v: requant(v, 0.5, 100, 0, 255))(real))


# --------------------------------------------------------------------------- TRANSPOSE_CONV_2D


@settings(max_examples=30, deadline=None)
@given(data=st.data(), layout=st.booleans(), activation=st.integers(0, 3))
def test_transpose_float32_explicit_matches_the_direct_loop(data, layout, activation) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    c, d, h, w, kh, kw = (data.draw(st.integers(1, 3), label=name) for name in ("c", "d", "h", "w", "kh", "kw"))
    strides = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    pads = tuple(data.draw(st.integers(0, k - 1)) for k in (kw, kw, kh, kh))
    x = rng.uniform(-4, 4, (2, h, w, c)).astype(np.float32)
    f = rng.uniform(-2, 2, (d, kh, kw, c)).astype(np.float32)
    bias = rng.uniform(-2, 2, d).astype(np.float32)
    args = [T(F32, nchw(x) if layout else x), T(F32, f), T(F32, bias), *pads, *strides, activation, layout]
    if min((h - 1) * strides[1] + kh - pads[2] - pads[3], (w - 1) * strides[0] + kw - pads[0] - pads[1]) < 1:
        assert "gives no output" in execution_failure(TRANSPOSE, args, F32)
        return
    expected = transpose_direct(x, f, bias, pads, strides, activation)
    got = run(TRANSPOSE, [T(F32, nchw(x) if layout else x), T(F32, f), T(F32, bias), *pads, *strides, activation, layout], F32)
    np.testing.assert_allclose(got, nchw(expected) if layout else expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("in_size", "out_size", "stride", "kernel"), [(3, 6, 2, 3), (3, 5, 2, 3), (2, 4, 2, 1),
                                                                         (4, 4, 1, 3), (2, 6, 3, 4)])
def test_transpose_same_padding_from_the_output_shape(in_size, out_size, stride, kernel) -> None:
    """SAME: the total (in - 1) x stride + filter - out padding, its odd pixel at the tail, and a
    negative tail (a filter shorter than the stride) leaving the last outputs to the bias."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-4, 4, (1, in_size, in_size, 2)).astype(np.float32)
    f = rng.uniform(-2, 2, (3, kernel, kernel, 2)).astype(np.float32)
    bias = rng.uniform(-2, 2, 3).astype(np.float32)
    total = (in_size - 1) * stride + kernel - out_size
    head = max(total, 0) // 2
    pads = (head, total - head, head, total - head)
    shape = T(I32, np.array([1, out_size, out_size, 3], np.int32), constant=True)
    got = run(TRANSPOSE, [T(F32, x), T(F32, f), T(F32, bias), shape, 1, stride, stride, 0, False], F32)
    assert got.shape == (1, out_size, out_size, 3)
    np.testing.assert_allclose(got, transpose_direct(x, f, bias, pads, (stride, stride)), rtol=1e-5, atol=1e-5)


def test_transpose_valid_ignores_the_output_shape_and_explicit_tail_may_be_negative() -> None:
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2, 1)
    f = np.ones((1, 2, 2, 1), np.float32)
    b = np.zeros(1, np.float32)
    shape = T(I32, np.array([1, 9, 9, 1], np.int32))  # a request input, and VALID does not read it
    valid = run(TRANSPOSE, [T(F32, x), T(F32, f), T(F32, b), shape, 2, 2, 2, 0, False], F32)
    np.testing.assert_array_equal(valid, transpose_direct(x, f, b, (0, 0, 0, 0), (2, 2)))
    negative = run(TRANSPOSE, [T(F32, x), T(F32, f), T(F32, b), 0, -1, 1, -2, 2, 2, 0, False], F32)
    assert negative.shape == (1, 5, 5, 1)
    np.testing.assert_array_equal(negative, transpose_direct(x, f, b, (0, -1, 1, -2), (2, 2)))


def test_transpose_per_channel_signed() -> None:
    rng = np.random.default_rng(9)
    x = rng.integers(-128, 127, (1, 2, 3, 2), endpoint=True).astype(np.int8)
    f = rng.integers(-127, 127, (3, 2, 2, 2), endpoint=True).astype(np.int8)
    scales = (0.1, 0.05, 0.25)
    bias = rng.integers(-200, 200, 3).astype(np.int32)
    got = run(TRANSPOSE, [T(QS8, x, 0.5, -3), T(PC, f, channel=SymmPerChannelQuantParams(scales, 0), constant=True),
                          T(I32, bias, constant=True), 0, 0, 1, 1, 2, 1, 0, True], QS8, 2.0, 4)
    # NCHW: the input is read as [1, 2 channels, 3 rows, 2 columns]
    x_nhwc = x.transpose(0, 2, 3, 1)
    real = transpose_direct((x_nhwc.astype(np.float64) + 3) * 0.5, f * np.asarray(scales)[:, None, None, None],
                            bias * 0.5 * np.asarray(scales), (0, 0, 1, 1), (2, 1))
    expected = np.vectorize(lambda v: requant(v, 2.0, 4, -128, 127))(real)
    np.testing.assert_array_equal(got, nchw(expected))


# --------------------------------------------------------------------------- pools


@settings(max_examples=40, deadline=None)
@given(data=st.data(), kind=st.sampled_from(["avg", "max", "l2"]), layout=st.sampled_from([None, False, True]),
       implicit=st.booleans(), activation=st.integers(0, 3))
def test_float_pools_match_the_direct_loop(data, kind, layout, implicit, activation) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    c, h, w = (data.draw(st.integers(1, 4), label=name) for name in ("c", "h", "w"))
    fh, fw = data.draw(st.integers(1, h), label="fh"), data.draw(st.integers(1, w), label="fw")
    strides = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    x = rng.uniform(-8, 8, (2, h, w, c)).astype(np.float32)
    if implicit:
        scheme = data.draw(st.sampled_from([1, 2]))
        pads = (*same_padding(w, strides[0], fw), *same_padding(h, strides[1], fh)) if scheme == 1 else (0, 0, 0, 0)
        padding = [scheme]
    else:
        pads = tuple(data.draw(st.integers(0, k - 1)) for k in (fw, fw, fh, fh))
        padding = list(pads)
    op = {"avg": AVG, "max": MAX, "l2": L2}[kind]
    tail = [] if layout is None else [bool(layout)]
    got = run(op, [T(F32, nchw(x) if layout else x), *padding, *strides, fw, fh, activation, *tail], F32)
    expected = pool_direct(x, kind, pads, strides, (fw, fh), activation)
    np.testing.assert_allclose(got, nchw(expected) if layout else expected, rtol=1e-5, atol=1e-5)


def test_quantized_average_rounds_as_nnapi() -> None:
    """TENSOR_QUANT8_ASYMM: the stored values' mean rounded half up; TENSOR_QUANT8_ASYMM_SIGNED: half away
    from zero; the padding not counted."""
    unsigned = np.array([1, 2, 4, 5, 7, 7], np.uint8).reshape(1, 1, 6, 1)
    got = run(AVG, [T(QU8, unsigned, 0.5, 10), 0, 0, 0, 0, 2, 1, 2, 1, 0], QU8, 0.5, 10)
    assert got.reshape(-1).tolist() == [2, 5, 7]  # 1.5 -> 2, 4.5 -> 5, 7 -> 7 (half up even below the zero point)
    signed = np.array([-1, -2, 3, 4, -7, -7], np.int8).reshape(1, 1, 6, 1)
    got = run(AVG, [T(QS8, signed, 0.5, 0), 0, 0, 0, 0, 2, 1, 2, 1, 0], QS8, 0.5, 0)
    assert got.reshape(-1).tolist() == [-2, 4, -7]  # -1.5 -> -2, 3.5 -> 4
    padded = np.array([10, 20, 31], np.uint8).reshape(1, 1, 3, 1)
    got = run(AVG, [T(QU8, padded, 1.0, 0), 1, 1, 0, 0, 1, 1, 3, 1, 0], QU8, 1.0, 0)
    assert got.reshape(-1).tolist() == [15, 20, 26]  # (10+20)/2, (10+20+31)/3 = 20.33, (20+31)/2 = 25.5


def test_quantized_max_and_average_clamp_in_stored_units() -> None:
    x = np.array([0, 100, 200, 250], np.uint8).reshape(1, 2, 2, 1)
    # scale 0.1, zeroPoint 100: RELU6 caps at 100 + 60 = 160, RELU at 100
    assert run(MAX, [T(QU8, x, 0.1, 100), 1, 1, 1, 1, 1, 3], QU8, 0.1, 100).reshape(-1).tolist() == [100, 100, 160, 160]
    assert run(MAX, [T(QU8, x, 0.1, 100), 1, 1, 1, 2, 2, 1], QU8, 0.1, 100).reshape(-1).tolist() == [250, 250, 250, 250]
    # RELU1: [100 - 10, 100 + 10]
    assert run(AVG, [T(QU8, x, 0.1, 100), 2, 1, 1, 1, 1, 2], QU8, 0.1, 100).reshape(-1).tolist() == [90, 100, 110, 110]


# --------------------------------------------------------------------------- validation and execution errors


def test_refusals_name_the_operand_and_the_feature() -> None:
    zeros = np.zeros((1, 3, 3, 2), np.float32)
    f, b = np.zeros((1, 2, 2, 2), np.float32), np.zeros(2, np.float32)
    tensors = [T(F32, zeros), T(F32, f), T(F32, b)]
    assert "input 8 of type INT32" in refusal(DEPTHWISE, [*tensors, 1, 1, 1, 1, 0, 1], F32)  # 9: a layout flag at 8
    assert "10 inputs" in refusal(DEPTHWISE, [*tensors, 1, 1, 1, 1, 0, False, 1], F32)
    assert "layout flag" in refusal(DEPTHWISE, [*tensors, 0, 0, 0, 0, 1, 1, 1, 0, 1], F32)
    wrong_dim = SymmPerChannelQuantParams((0.1, 0.1), 0)
    q = [T(QU8, zeros.astype(np.uint8), 0.5, 0), T(PC, np.zeros((2, 2, 2, 2), np.int8), channel=wrong_dim),
         T(I32, b.astype(np.int32))]
    assert "channel dimension 0 (NNAPI: 3)" in refusal(DEPTHWISE, [*q, 1, 1, 1, 1, 0], QU8, 1.0, 0)
    grouped = [T(F32, zeros), T(F32, np.zeros((2, 2, 2, 1), np.float32)), T(F32, b)]
    assert "8 inputs" in refusal(GROUPED, [*grouped, 1, 1, 1, 2, 0], F32)  # the layout flag is not optional
    assert "layout flag" in refusal(GROUPED, [*grouped, 1, 1, 1, 2, 0, 0], F32)
    transpose = [T(F32, zeros), T(F32, np.zeros((2, 2, 2, 2), np.float32)), T(F32, b)]
    assert "output shape" in refusal(TRANSPOSE, [*transpose, 1, 1, 1, 1, 0, False], F32)  # INT32, not TENSOR_INT32
    assert "L2_POOL_2D" in refusal(L2, [T(QU8, zeros.astype(np.uint8), 0.5, 0), 1, 1, 1, 1, 1, 0], QU8, 0.5, 0)
    assert "scale and zeroPoint" in refusal(MAX, [T(QU8, zeros.astype(np.uint8), 0.5, 0), 1, 1, 1, 1, 1, 0], QU8, 0.25, 0)
    assert "rank 3" in refusal(AVG, [T(F32, np.zeros((3, 3, 2), np.float32)), 1, 1, 1, 1, 1, 0], F32)
    assert "bias" in refusal(DEPTHWISE, [T(QU8, zeros.astype(np.uint8), 0.5, 0), T(QU8, f.astype(np.uint8), 0.5, 0),
                                         T(I32, b.astype(np.int32), 0.5), 1, 1, 1, 1, 0], QU8, 1.0, 0)


def test_run_time_errors_as_nnapi_cpu() -> None:
    zeros = np.zeros((1, 3, 3, 2), np.float32)
    b = np.zeros(4, np.float32)
    # depth_out 4 is not depth_in 2 x multiplier 1
    assert "multiplier" in execution_failure(DEPTHWISE, [T(F32, zeros), T(F32, np.zeros((1, 2, 2, 4), np.float32)),
                                                         T(F32, b), 1, 1, 1, 1, 0], F32)
    # padding as wide as the filter
    assert "padding" in execution_failure(DEPTHWISE, [T(F32, zeros), T(F32, np.zeros((1, 2, 2, 4), np.float32)),
                                                      T(F32, b), 2, 0, 0, 0, 1, 1, 2, 0], F32)
    assert "groups" in execution_failure(GROUPED, [T(F32, zeros), T(F32, np.zeros((4, 1, 1, 2), np.float32)),
                                                   T(F32, b), 1, 1, 1, 2, 0, False], F32)
    assert "padding" in execution_failure(AVG, [T(F32, zeros), 2, 0, 0, 0, 1, 1, 2, 2, 0], F32)
    assert "filter width" in execution_failure(MAX, [T(F32, zeros), 1, 1, 1, 0, 2, 0], F32)


def test_conv_2d_pointwise_filter_with_padding_and_strides() -> None:
    """A 1x1 filter reads the padded input's pixels at the strides (CONV_2D's and GROUPED_CONV_2D's
    matrix product of a pointwise filter skips the gathering only without padding or strides)."""
    from harness.plugins.variants.drivers import conv_padding_past_the_filter

    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6, 1)
    f, b = np.full((1, 1, 1, 1), 2, np.float32), np.zeros(1, np.float32)
    strided = run(OperationType.CONV_2D, [T(F32, x), T(F32, f), T(F32, b), 0, 0, 0, 0, 2, 1, 0], F32)
    assert strided.reshape(-1).tolist() == [2, 6, 10]
    grouped = run(GROUPED, [T(F32, x), T(F32, f), T(F32, b), 0, 0, 0, 0, 3, 1, 1, 0, False], F32)
    assert grouped.reshape(-1).tolist() == [2, 8]
    # padding as wide as the filter (CHOICE-8: NNAPI's CPU implementation refuses it, a driver may run it):
    # with a stride of 2 the output's one row is the top padding's, 0, though it is as tall as the input
    model, feeds = model_of(OperationType.CONV_2D, [T(F32, x), T(F32, f), T(F32, b), 0, 0, 1, 0, 1, 2, 0], F32)
    prepared = conv_padding_past_the_filter().prepare_model(model)
    request, _, out = pack_request(model, feeds, output_capacity=[1 << 10])
    dims = prepared.execute(request).output_shapes[0].dimensions
    assert tuple(dims) == (1, 1, 6, 1)
    assert np.frombuffer(out.read(), np.float32, count=6).tolist() == [0] * 6


# --------------------------------------------------------------------------- RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR

BILINEAR, NEAREST = OperationType.RESIZE_BILINEAR, OperationType.RESIZE_NEAREST_NEIGHBOR


def _resize_scale(size, out, align):
    f32 = np.float32
    return f32(size - 1) / f32(out - 1) if align and out > 1 else f32(size) / f32(out)


def nearest_direct(x, out_h, out_w, align=False, half=False):
    """TFLite's loop as NNAPI's CPU runs it (positions in float32), one pixel at a time."""
    n, h, w, c = x.shape
    f32 = np.float32
    out = np.zeros((n, out_h, out_w, c), x.dtype)
    for y, xx in itertools.product(range(out_h), range(out_w)):
        picks = []
        for i, size, scale in ((y, h, _resize_scale(h, out_h, align)), (xx, w, _resize_scale(w, out_w, align))):
            position = (f32(i) + f32(0.5)) * scale if half else f32(i) * scale
            index = min(int(math.floor(position + 0.5)) if align else int(math.floor(position)), size - 1)
            picks.append(max(index, 0) if half else index)
        out[:, y, xx] = x[:, picks[0], picks[1]]
    return out


def bilinear_direct(x, out_h, out_w, align=False, half=False):
    n, h, w, c = x.shape
    f32 = np.float32
    out = np.zeros((n, out_h, out_w, c))
    for y, xx in itertools.product(range(out_h), range(out_w)):
        axes = []
        for i, size, scale in ((y, h, _resize_scale(h, out_h, align)), (xx, w, _resize_scale(w, out_w, align))):
            position = (f32(i) + f32(0.5)) * scale - f32(0.5) if half else f32(i) * scale
            low = max(int(math.floor(position)), 0)
            axes.append((low, min(int(math.ceil(position)), size - 1), float(position - f32(low))))
        (y0, y1, dy), (x0, x1, dx) = axes
        out[:, y, xx] = (x[:, y0, x0] * (1 - dy) * (1 - dx) + x[:, y1, x0] * dy * (1 - dx)
                         + x[:, y0, x1] * (1 - dy) * dx + x[:, y1, x1] * dy * dx)
    return out


@settings(max_examples=40, deadline=None)
@given(data=st.data(), bilinear=st.booleans(), layout=st.booleans(), flags=st.sampled_from([(), (False,), (True,),
                                                                                           (False, False), (True, False),
                                                                                           (False, True)]))
def test_float_resizes_match_the_direct_loop(data, bilinear, layout, flags) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    h, w = data.draw(st.integers(1, 5), label="h"), data.draw(st.integers(1, 5), label="w")
    out_h, out_w = data.draw(st.integers(1, 9), label="out h"), data.draw(st.integers(1, 9), label="out w")
    x = rng.uniform(-8, 8, (2, h, w, 3)).astype(np.float32)
    align, half = (list(flags) + [False, False])[:2]
    op = BILINEAR if bilinear else NEAREST
    got = run(op, [T(F32, nchw(x) if layout else x), out_w, out_h, layout, *flags], F32)
    expected = bilinear_direct(x, out_h, out_w, align, half) if bilinear else nearest_direct(x, out_h, out_w, align, half)
    np.testing.assert_allclose(got, nchw(expected) if layout else expected, rtol=1e-5, atol=1e-5)


def test_resize_by_scale_and_quantized() -> None:
    x = np.arange(12, dtype=np.uint8).reshape(1, 2, 3, 2) * 20
    b = ModelBuilder()
    i = b.input(QU8, x.shape, 0.5, 7)
    sw, sh = b.constant(OperandType.FLOAT32, 1.5), b.constant(OperandType.FLOAT32, 2.0)
    b.operation(NEAREST, [i, sw, sh, b.constant(OperandType.BOOL, False)], QU8, (), 0.5, 7)
    model = b.build()
    request, _, out = pack_request(model, [x], output_capacity=[1 << 10])
    dims = ReferenceDevice().prepare_model(model).execute(request).output_shapes[0].dimensions
    assert tuple(dims) == (1, 4, 4, 2)  # floor(2 x 2.0), floor(3 x 1.5)
    got = np.frombuffer(out.read(), np.uint8, count=32).reshape(dims)
    np.testing.assert_array_equal(got, nearest_direct(x, 4, 4))
    # bilinear, quantized: positions 0, 0.5, 1, 1.5 (the last clamped): stored 0, 1.5, 3, 3; 1.5 is -5.5 steps
    # from the zero point 7, rounded half away from zero to -6, so 1
    q = np.array([0, 3], np.uint8).reshape(1, 1, 2, 1)
    got = run(BILINEAR, [T(QU8, q, 0.5, 7), 4, 1], QU8, 0.5, 7)
    assert got.reshape(-1).tolist() == [0, 1, 3, 3]


def test_resize_refusals() -> None:
    x = np.zeros((1, 2, 2, 1), np.float32)
    assert "3 inputs" in refusal(NEAREST, [T(F32, x), 2, 2], F32)  # the layout flag is not optional here
    half_scale = T(OperandType.FLOAT16, np.float16(2.0), constant=True)
    assert "width scale of type FLOAT16" in refusal(BILINEAR, [T(F32, x), half_scale, half_scale], F32)
    assert "output height of type INT32" in refusal(BILINEAR, [T(F32, x), T(OperandType.FLOAT32, np.float32(2), constant=True),
                                                               2], F32)
    assert "scale and zeroPoint" in refusal(BILINEAR, [T(QU8, x.astype(np.uint8), 0.5, 0), 2, 2], QU8, 0.25, 0)
    assert "not both" in execution_failure(BILINEAR, [T(F32, x), 2, 2, False, True, True], F32)
