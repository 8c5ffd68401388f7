"""The reference's shape and layout operations against index formulas written out here (loops over
output elements, NNAPI's definitions), not the reference's kernels; several outputs (SPLIT,
TOPK_V2) through a whole execution, with the output shapes a dynamic model reports; and
validation of NeuralNetworks.h's operand rules."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.hal import DriverError, ErrorStatus, OperandType, OperationType, numpy_dtype
from harness.judging.builders import ModelBuilder, pack_request
from reference_driver import ReferenceDevice
from reference_driver.ops import rearrange, slicing

F32, I32, QU8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_QUANT8_ASYMM
INT32 = OperandType.INT32
Op = OperationType


def execute(op, x, x_type, params, outputs, quant=(0.0, 0)):
    """``op`` on model input ``x`` and constant ``params`` [(type, value)], its ``outputs``
    [(type, dims)] declared as given (0: unknown); each output's value, shaped as reported."""
    b = ModelBuilder()
    inputs = [b.input(x_type, np.shape(x), *quant), *(b.constant(t, v) for t, v in params)]
    b.operation_outputs(op, inputs, [(t, dims, *(quant if t != I32 else (0.0, 0))) for t, dims in outputs])
    model = b.build()
    prepared = ReferenceDevice().prepare_model(model)
    capacity = 1 << 12
    request, _, out = pack_request(model, [np.asarray(x, numpy_dtype(x_type))], output_capacity=[capacity] * len(outputs))
    shapes = prepared.execute(request).output_shapes
    data = out.read()
    results = []
    for number, ((t, _), shape) in enumerate(zip(outputs, shapes)):
        offset = request.outputs[number].location.offset
        results.append(np.frombuffer(data, numpy_dtype(t), count=math.prod(shape.dimensions), offset=offset)
                       .reshape(shape.dimensions))
    return results


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 2), h=st.integers(1, 4), w=st.integers(1, 4), c=st.integers(1, 2), bh=st.integers(1, 3),
       bw=st.integers(1, 3), top=st.integers(0, 2), left=st.integers(0, 2))
def test_space_to_batch_places_each_element_by_nnapi_formula(n, h, w, c, bh, bw, top, left) -> None:
    bottom, right = (-(h + top)) % bh, (-(w + left)) % bw
    x = np.arange(1, n * h * w * c + 1, dtype=np.float32).reshape(n, h, w, c)
    got, = execute(Op.SPACE_TO_BATCH_ND, x, F32, [(I32, [bh, bw]), (I32, [[top, bottom], [left, right]])], [(F32, ())])
    out_h, out_w = (h + top + bottom) // bh, (w + left + right) // bw
    assert got.shape == (n * bh * bw, out_h, out_w, c)
    for ob, oy, ox, ch in itertools.product(*map(range, got.shape)):
        b, offset = ob % n, ob // n  # output batch = (block row x bw + block column) x n + input batch
        y, xx = oy * bh + offset // bw - top, ox * bw + offset % bw - left
        want = x[b, y, xx, ch] if 0 <= y < h and 0 <= xx < w else 0
        assert got[ob, oy, ox, ch] == want


@settings(max_examples=20, deadline=None)
@given(h=st.integers(1, 3), w=st.integers(1, 3), c=st.integers(1, 2), b=st.integers(1, 3), nchw=st.booleans())
def test_depth_to_space_inverts_space_to_depth_in_either_layout(h, w, c, b, nchw) -> None:
    x = np.arange(h * b * w * b * c, dtype=np.float32).reshape(1, h * b, w * b, c)
    laid = x.transpose(0, 3, 1, 2) if nchw else x
    depth, = execute(Op.SPACE_TO_DEPTH, laid, F32, [(INT32, b), (OperandType.BOOL, nchw)], [(F32, ())])
    nhwc = depth.transpose(0, 2, 3, 1) if nchw else depth
    for y, xx, d in itertools.product(range(h), range(w), range(b * b * c)):
        # output depth d = (block row x b + block column) x c + channel
        assert nhwc[0, y, xx, d] == x[0, y * b + d // (b * c), xx * b + d // c % b, d % c]
    back, = execute(Op.DEPTH_TO_SPACE, depth, F32, [(INT32, b), (OperandType.BOOL, nchw)], [(F32, ())])
    np.testing.assert_array_equal(back, laid)


def test_strided_slice_masks_negative_strides_and_shrinking() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    # axis 0 shrunk at -1; axis 1 from its end backwards (begin mask, stride -1); axis 2 from 1 to the end (end mask)
    got, = execute(Op.STRIDED_SLICE, x, F32, [(I32, [-1, 0, 1]), (I32, [2, -5, 0]), (I32, [1, -1, 2]), (INT32, 0b010),
                                              (INT32, 0b100), (INT32, 0b001)], [(F32, ())])
    want = [[x[1, row, col] for col in range(1, 4, 2)] for row in (2, 1, 0)]
    np.testing.assert_array_equal(got, np.array(want, np.float32))


def test_split_gives_each_output_its_part_and_reports_each_shape() -> None:
    x = np.arange(12, dtype=np.int32).reshape(2, 6)
    parts = execute(Op.SPLIT, x, I32, [(INT32, -1), (INT32, 3)], [(I32, (0, 0)), (I32, (2, 0)), (I32, ())])
    assert [p.shape for p in parts] == [(2, 2)] * 3
    for number, part in enumerate(parts):
        assert part.tolist() == [[row[2 * number], row[2 * number + 1]] for row in x.tolist()]


def test_topk_gives_values_and_indices_largest_first() -> None:
    x = np.array([[3, 9, 1, 7], [5, 2, 8, 4]], np.uint8)
    values, indices = execute(Op.TOPK_V2, x, QU8, [(INT32, 2)], [(QU8, ()), (I32, ())], quant=(0.5, 3))
    for row, got_values, got_indices in zip(x.tolist(), values.tolist(), indices.tolist()):
        ranked = sorted(range(len(row)), key=lambda i: -row[i])[:2]
        assert got_indices == ranked and got_values == [row[i] for i in ranked]


def test_pad_fills_a_quantized_tensor_with_its_zero_point() -> None:
    x = np.array([[1, 2]], np.uint8)
    got, = execute(Op.PAD, x, QU8, [(I32, [[1, 0], [0, 1]])], [(QU8, ())], quant=(0.5, 7))
    assert got.tolist() == [[7, 7, 7], [1, 2, 7]]


def test_omitted_permutation_reverses_the_axes() -> None:
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    got = rearrange.run_transpose([x, np.empty(0, np.int32)], [], None, None)  # type: ignore[arg-type]
    assert got.shape == (3, 2, 1) and all(got[k, j, 0] == x[0, j, k] for j in range(2) for k in range(3))


def test_squeezing_every_axis_leaves_one_element_of_rank_one() -> None:
    assert slicing.run_squeeze([np.zeros((1, 1, 1), np.float32)], [], None, None).shape == (1,)  # type: ignore[arg-type]


@pytest.mark.parametrize("op, params, outputs, feature", [
    (Op.TOPK_V2, [(INT32, 1)], [(F32, ()), (F32, ())], "indices of type TENSOR_FLOAT32"),
    (Op.SPACE_TO_DEPTH, [(INT32, 2)], [(I32, ())], "input of type TENSOR_INT32"),
    (Op.SPLIT, [(INT32, 0), (INT32, 2)], [(F32, ()), (I32, ())], "type TENSOR_INT32 differs from the input's"),
])
def test_refusals_name_the_operand_and_the_feature(op, params, outputs, feature) -> None:
    b = ModelBuilder()
    x_type = I32 if op == Op.SPACE_TO_DEPTH else F32
    inputs = [b.input(x_type, (1, 2, 2, 4)), *(b.constant(t, v) for t, v in params)]
    b.operation_outputs(op, inputs, [(t, dims, 0.0, 0) for t, dims in outputs])
    with pytest.raises(DriverError) as refused:
        ReferenceDevice().prepare_model(b.build())
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT and feature in str(refused.value)


def test_a_request_may_omit_only_an_optional_input() -> None:
    b = ModelBuilder()
    x, perm = b.input(F32, (2, 3)), b.input(I32, (0,))
    b.operation(Op.TRANSPOSE, [x, perm], F32, (3, 2))
    model = b.build()
    prepared = ReferenceDevice().prepare_model(model)
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    request, _, out = pack_request(model, [value, None])  # the permutation omitted: the axes reversed
    assert prepared.execute(request).output_shapes[0].dimensions == (3, 2)
    assert np.frombuffer(out.read(), np.float32, count=6).reshape(3, 2).tolist() == value.T.tolist()
    request, _, _ = pack_request(model, [None, np.array([1, 0], np.int32)])  # the data input is required
    with pytest.raises(DriverError) as refused:
        prepared.execute(request)
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT and refused.value.rule == "REQ-1"
