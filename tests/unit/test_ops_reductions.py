"""The reference's normalizations, reductions, ARGMAX/ARGMIN, CHANNEL_SHUFFLE, FILL and RANK against
formulas written out here element by element (Python loops and math's functions), not the
reference's kernels."""

from __future__ import annotations

import itertools
import math

import numpy as np

from harness.api.hal import OperandType, OperationType, numpy_dtype
from harness.judging.builders import ModelBuilder, pack_request
from reference_driver import ReferenceDevice

F32, I32, QU8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_QUANT8_ASYMM
INT32, FLOAT32, BOOL = OperandType.INT32, OperandType.FLOAT32, OperandType.BOOL
Op = OperationType


def execute(op, tensors, out_type, out_quant=(0.0, 0), scalars=(), out_dims=()):
    """One operation on the reference: ``tensors`` [(type, value, (scale, zeroPoint))] as model
    inputs, then ``scalars`` [(type, value)] as constants; the output's value."""
    b = ModelBuilder()
    inputs = [b.input(t, np.shape(v), *q) for t, v, q in tensors]
    inputs += [b.constant(t, v) for t, v in scalars]
    b.operation(op, inputs, out_type, (0,) * len(out_dims), *out_quant)  # extents left to the operation
    model = b.build()
    prepared = ReferenceDevice().prepare_model(model)
    capacity = 1 << 12 if out_dims else np.dtype(numpy_dtype(out_type)).itemsize  # a scalar's region is its size
    request, _, out = pack_request(model, [np.asarray(v, numpy_dtype(t)) for t, v, _ in tensors], output_capacity=[capacity])
    dims = prepared.execute(request).output_shapes[0].dimensions
    return np.frombuffer(out.read(), numpy_dtype(out_type), count=math.prod(dims)).reshape(dims)


X = np.array([[0.5, -1.5, 2.0, 0.25], [3.0, 0.0, -4.0, 1.0], [0.0, 0.0, 0.0, 0.0]], np.float32)


def test_l2_normalization_along_the_first_axis_and_zeros() -> None:
    got = execute(Op.L2_NORMALIZATION, [(F32, X, (0.0, 0))], F32, scalars=[(INT32, -2)], out_dims=X.shape)
    for j in range(X.shape[1]):
        norm = math.sqrt(sum(float(X[i, j]) ** 2 for i in range(X.shape[0])))
        for i in range(X.shape[0]):
            assert math.isclose(got[i, j], X[i, j] / norm if norm else 0.0, rel_tol=1e-6)
    last = execute(Op.L2_NORMALIZATION, [(F32, X, (0.0, 0))], F32, out_dims=X.shape)
    assert (last[2] == 0).all()  # a slice of zeros stays zeros


def test_quantized_l2_normalization_takes_the_zero_point_away() -> None:
    stored = np.array([[10, 13, 14]], np.uint8)  # zeroPoint 10: real values 0, 3, 4 (x 0.5)
    got = execute(Op.L2_NORMALIZATION, [(QU8, stored, (0.5, 10))], QU8, (1 / 128, 128), out_dims=(1, 3))
    assert got.tolist() == [[128, 128 + round(0.6 * 128), 128 + round(0.8 * 128)]]


def test_local_response_normalization_window_is_cut_at_the_ends() -> None:
    x = np.array([1.0, -2.0, 3.0, 0.5, 1.5], np.float32)
    radius, bias, alpha, beta = 1, 1.0, 0.5, 0.75
    got = execute(Op.LOCAL_RESPONSE_NORMALIZATION, [(F32, x, (0.0, 0))], F32,
                  scalars=[(INT32, radius), (FLOAT32, bias), (FLOAT32, alpha), (FLOAT32, beta)], out_dims=x.shape)
    for d in range(len(x)):
        s = sum(float(x[k]) ** 2 for k in range(max(0, d - radius), min(len(x), d + radius + 1)))
        assert math.isclose(got[d], x[d] / (bias + alpha * s) ** beta, rel_tol=1e-6)


def test_instance_normalization_per_plane_in_nchw() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 2, 2, 4) ** 1.5  # NCHW: 2 channels of 2 x 4
    gamma, beta, epsilon = 2.0, 0.5, 1e-3
    got = execute(Op.INSTANCE_NORMALIZATION, [(F32, x, (0.0, 0))], F32,
                  scalars=[(FLOAT32, gamma), (FLOAT32, beta), (FLOAT32, epsilon), (BOOL, True)], out_dims=x.shape)
    for c in range(2):
        plane = [float(v) for v in x[0, c].reshape(-1)]
        mean = sum(plane) / len(plane)
        variance = sum((v - mean) ** 2 for v in plane) / len(plane)
        for k, v in enumerate(plane):
            assert math.isclose(got[0, c].reshape(-1)[k], (v - mean) * gamma / math.sqrt(variance + epsilon) + beta,
                                rel_tol=1e-5, abs_tol=1e-5)


def test_reductions_with_negative_and_repeated_axes() -> None:
    axes = np.array([-1, 1], np.int32)  # the same axis twice
    total = execute(Op.REDUCE_SUM, [(F32, X, (0.0, 0))], F32, scalars=[(I32, axes), (BOOL, False)], out_dims=(3,))
    assert total.tolist() == [sum(float(v) for v in row) for row in X]
    kept = execute(Op.REDUCE_MIN, [(F32, X, (0.0, 0))], F32, scalars=[(I32, np.array([0], np.int32)), (BOOL, True)],
                   out_dims=(1, 4))
    assert kept.tolist() == [[min(float(X[i, j]) for i in range(3)) for j in range(4)]]
    everything = execute(Op.MEAN, [(F32, X, (0.0, 0))], F32, scalars=[(I32, np.array([0, 1], np.int32)), (INT32, 0)],
                         out_dims=(1,))
    assert math.isclose(everything[0], sum(float(v) for v in X.reshape(-1)) / X.size, rel_tol=1e-6)


def test_quantized_mean_requantizes_to_the_output() -> None:
    stored = np.array([[1, 2, 4, 6]], np.uint8)  # scale 1, zeroPoint 0: mean 3.25
    got = execute(Op.MEAN, [(QU8, stored, (1.0, 0))], QU8, (0.5, 10),
                  scalars=[(I32, np.array([1], np.int32)), (INT32, 1)], out_dims=(1, 1))
    assert got.tolist() == [[10 + math.floor(3.25 / 0.5 + 0.5)]]


def test_argmax_and_argmin_take_the_first_of_ties() -> None:
    x = np.array([[3, 7, 7, 1], [2, 2, 0, 0]], np.int32)
    biggest = execute(Op.ARGMAX, [(I32, x, (0.0, 0))], I32, scalars=[(INT32, -1)], out_dims=(2,))
    smallest = execute(Op.ARGMIN, [(I32, x, (0.0, 0))], I32, scalars=[(INT32, 1)], out_dims=(2,))
    assert biggest.tolist() == [r.index(max(r)) for r in x.tolist()]
    assert smallest.tolist() == [r.index(min(r)) for r in x.tolist()]


def test_channel_shuffle_interleaves_the_groups() -> None:
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    got = execute(Op.CHANNEL_SHUFFLE, [(F32, x, (0.0, 0))], F32, scalars=[(INT32, 3), (INT32, -1)], out_dims=x.shape)
    size = 6 // 3
    for row, (k, g) in itertools.product(range(2), itertools.product(range(size), range(3))):
        assert got[row, k * 3 + g] == x[row, g * size + k]


def test_fill_and_rank() -> None:
    dims = np.array([2, 3], np.int32)
    filled = execute(Op.FILL, [(I32, dims, (0.0, 0))], F32, scalars=[(FLOAT32, 1.25)], out_dims=(2, 3))
    assert filled.tolist() == [[1.25] * 3] * 2
    rank = execute(Op.RANK, [(F32, X, (0.0, 0))], INT32)
    assert rank.reshape(-1).tolist() == [2]
