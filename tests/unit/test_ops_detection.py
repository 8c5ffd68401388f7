"""The reference's detection and region operations against NNAPI's definitions written out here
(IoU from areas, greedy NMS loops for the hard, linear and gaussian kernels, ROI_ALIGN's bilinear
samples and ROI_POOLING's bins as loops over output elements, a heatmap whose quadratic fit is
exact), through whole executions whose outputs of data-dependent size report their shapes (zero
detections included); and validation of NeuralNetworks.h's operand rules."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.hal import DriverError, ErrorStatus, OperandType, OperationType, is_scalar_type, numpy_dtype
from harness.judging.builders import ModelBuilder, pack_request, run_outputs
from reference_driver import ReferenceDevice

T = OperandType
F32, F16, I32, QU8, QS8, QU16 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                                 T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM)
FLOAT32, INT32, BOOL = T.FLOAT32, T.INT32, T.BOOL
Op = OperationType


def execute(op, operands, outputs):
    """``op`` on ``operands`` [(type, value) or (type, value, scale, zeroPoint)] (tensors as model
    inputs, scalars as constants) with ``outputs`` [(type, scale, zeroPoint)] of unknown shape;
    each output's value, shaped as the execution reports it."""
    b = ModelBuilder()
    indexes, values = [], []
    for type_, value, *quant in operands:
        if is_scalar_type(type_):
            indexes.append(b.constant(type_, value))
        else:
            array = np.asarray(value, numpy_dtype(type_))
            indexes.append(b.input(type_, array.shape, *quant))
            values.append(array)
    b.operation_outputs(op, indexes, [(t, (), scale, zp) for t, scale, zp in outputs])
    return run_outputs(ReferenceDevice(), b.build(), values, capacity=1 << 12)


def area_iou(a, b) -> float:
    inter = max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def greedy_nms(scores, boxes, limit, kernel, iou_threshold, sigma, score_threshold):
    """One class: take the highest remaining score, rescore the others by the kernel, drop those under the threshold."""
    live = dict(scores)
    kept = []
    while live and (limit < 0 or len(kept) < limit):
        best = max(live, key=lambda i: live[i])
        kept.append((best, live.pop(best)))
        for i in list(live):
            overlap = area_iou(boxes[best], boxes[i])
            if kernel == 0:
                live[i] *= 1.0 if overlap < iou_threshold else 0.0
            elif kernel == 1:
                live[i] *= 1.0 if overlap < iou_threshold else 1.0 - overlap
            else:
                live[i] *= math.exp(-overlap * overlap / sigma)
            if live[i] < score_threshold:
                del live[i]
    return kept


def random_boxes(rng, count):
    corner = rng.uniform(0, 8, size=(count, 2))
    return np.concatenate([corner, corner + rng.uniform(1, 6, size=(count, 2))], axis=1)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), kernel=st.sampled_from([0, 1, 2]), limit=st.sampled_from([-1, 2, 5]),
       batches=st.sampled_from([[0, 0, 0, 0, 0], [0, 0, 0, 2, 2, 2]]))
def test_box_with_nms_limit_follows_a_greedy_loop_per_class_and_batch(seed, kernel, limit, batches) -> None:
    rng = np.random.default_rng(seed)
    count, classes = len(batches), 3
    scores = rng.permutation(np.linspace(0.05, 0.95, count * classes)).reshape(count, classes).astype(np.float32)
    boxes = random_boxes(rng, count * classes).astype(np.float32)  # the box of (roi, class) at roi * classes + class
    threshold, iou_threshold, sigma, nms_threshold = 0.2, 0.3, 0.5, 0.25
    got = execute(Op.BOX_WITH_NMS_LIMIT, [(F32, scores), (F32, boxes.reshape(count, classes * 4)), (I32, batches),
                                          (FLOAT32, threshold), (INT32, limit), (INT32, kernel), (FLOAT32, iou_threshold),
                                          (FLOAT32, sigma), (FLOAT32, nms_threshold)],
                  [(F32, 0.0, 0), (F32, 0.0, 0), (I32, 0.0, 0), (I32, 0.0, 0)])
    want = []
    for batch in sorted(set(batches)):
        rows = [r for r in range(count) if batches[r] == batch]
        found = []
        for c in range(1, classes):  # class 0 is the background
            candidates = {r * classes + c: float(scores[r, c]) for r in rows if scores[r, c] > threshold}
            box_of = {i: [float(v) for v in boxes[i]] for i in candidates}
            found += greedy_nms(candidates, box_of, limit, kernel, iou_threshold, sigma, nms_threshold)
        found.sort(key=lambda kept: -kept[1])
        found = found if limit < 0 else found[:limit]
        found.sort(key=lambda kept: (kept[0] % classes, -kept[1]))
        want += [(score, boxes[i].tolist(), i % classes, batch) for i, score in found]
    assert [g.shape[0] for g in got] == [len(want)] * 4 and got[1].shape == (len(want), 4)
    np.testing.assert_allclose(got[0], [w[0] for w in want], rtol=1e-5)
    assert got[1].tolist() == [w[1] for w in want]
    assert got[2].tolist() == [w[2] for w in want] and got[3].tolist() == [w[3] for w in want]


def test_iou_of_the_kernel_is_intersection_over_union() -> None:
    # two boxes overlapping by a third of their union suppress each other (hard kernel) at 1/3 and not above
    a, b = [0.0, 0.0, 2.0, 2.0], [1.0, 0.0, 3.0, 2.0]
    assert area_iou(a, b) == pytest.approx(1 / 3)
    for iou_threshold, survivors in ((0.33, 1), (0.34, 2)):
        got = execute(Op.BOX_WITH_NMS_LIMIT, [(F32, [[0.0, 0.9], [0.0, 0.8]]), (F32, [[0, 0, 0, 0, *a], [0, 0, 0, 0, *b]]),
                                              (I32, [0, 0]), (FLOAT32, 0.1), (INT32, -1), (INT32, 0),
                                              (FLOAT32, iou_threshold), (FLOAT32, 1.0), (FLOAT32, 0.1)],
                      [(F32, 0.0, 0), (F32, 0.0, 0), (I32, 0.0, 0), (I32, 0.0, 0)])
        assert got[0].shape == (survivors,)


def test_no_detection_reports_empty_outputs() -> None:
    got = execute(Op.BOX_WITH_NMS_LIMIT, [(QU8, [[10, 20], [30, 40]], 0.01, 0), (QU16, [[0, 0, 8, 8, 0, 0, 16, 16]] * 2, 0.125, 0),
                                          (I32, [0, 1]), (FLOAT32, 0.5), (INT32, -1), (INT32, 0), (FLOAT32, 0.3),
                                          (FLOAT32, 1.0), (FLOAT32, 0.1)],
                  [(QU8, 0.01, 0), (QU16, 0.125, 0), (I32, 0.0, 0), (I32, 0.0, 0)])
    assert [g.shape for g in got] == [(0,), (0, 4), (0,), (0,)]


def test_quantized_scores_are_stored_with_nnapi_rounding() -> None:
    # a gaussian decay of 0.5 on a score of 0.5 (scale 0.1, zeroPoint 3): 0.25 / 0.1 + 3 = 5.5 rounds to 6
    overlap = math.sqrt(math.log(2.0))  # exp(-overlap^2 / 1) = 1/2
    side = 2 * overlap / (1 + overlap)  # a box [0, 2] x [0, 1] against [2 - side, 4 - side] x [0, 1]: IoU = overlap
    rois = [[0, 0, 0, 0, 0, 0, 2, 1], [0, 0, 0, 0, 2 - side, 0, 4 - side, 1]]
    got = execute(Op.BOX_WITH_NMS_LIMIT, [(QU8, [[0, 10], [0, 8]], 0.1, 3), (QU16, np.round(np.asarray(rois) * 8), 0.125, 0),
                                          (I32, [0, 0]), (FLOAT32, 0.0), (INT32, -1), (INT32, 2), (FLOAT32, 0.3),
                                          (FLOAT32, 1.0), (FLOAT32, 0.0)],
                  [(QU8, 0.1, 3), (QU16, 0.125, 0), (I32, 0.0, 0), (I32, 0.0, 0)])
    boxes = np.round(np.asarray(rois) * 8) / 8
    decay = math.exp(-area_iou(boxes[0, 4:], boxes[1, 4:]) ** 2)
    assert got[0].tolist() == [10, int(math.floor(0.5 * decay / 0.1 + 3 + 0.5))]


@pytest.mark.parametrize("nchw", [False, True])
def test_roi_align_averages_bilinear_samples(nchw) -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=(2, 5, 6, 3)).astype(np.float32)
    rois = np.array([[0, 0, 12, 10], [2, 3, 9, 9.5], [11, 9, 12, 10], [1, 1, 1, 1]], np.float32)
    batch = [0, 1, 1, 0]
    out_h, out_w, ratio, grid = 2, 3, 2.0, (2, 0)  # a given grid of 2 rows; 0: ceil of the bin width
    given = x.transpose(0, 3, 1, 2) if nchw else x
    got, = execute(Op.ROI_ALIGN, [(F32, given), (F32, rois), (I32, batch), (INT32, out_h), (INT32, out_w),
                                  (FLOAT32, ratio), (FLOAT32, ratio), (INT32, grid[0]), (INT32, grid[1]), (BOOL, nchw)],
                   [(F32, 0.0, 0)])
    got = got.transpose(0, 2, 3, 1) if nchw else got
    height, width = 5, 6

    def sample(plane, y, x_):
        y0, x0 = int(math.floor(y)), int(math.floor(x_))
        y1, x1, fy, fx = y0 + 1, x0 + 1, y - y0, x_ - x0
        if y0 >= height - 1:
            y0 = y1 = height - 1
            fy = 0.0
        if x0 >= width - 1:
            x0 = x1 = width - 1
            fx = 0.0
        return ((1 - fy) * (1 - fx) * plane[y0, x0] + (1 - fy) * fx * plane[y0, x1]
                + fy * (1 - fx) * plane[y1, x0] + fy * fx * plane[y1, x1])

    for r, roi in enumerate(rois.astype(np.float64) / ratio):
        bin_h, bin_w = max(roi[3] - roi[1], 1.0) / out_h, max(roi[2] - roi[0], 1.0) / out_w
        rows, cols = grid[0] or math.ceil(bin_h), grid[1] or math.ceil(bin_w)
        for i, j in itertools.product(range(out_h), range(out_w)):
            points = [(roi[1] + i * bin_h + (a + 0.5) * bin_h / rows, roi[0] + j * bin_w + (c + 0.5) * bin_w / cols)
                      for a in range(rows) for c in range(cols)]
            want = sum(sample(x[batch[r]].astype(np.float64), y, x_) for y, x_ in points) / len(points)
            np.testing.assert_allclose(got[r, i, j], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nchw", [False, True])
def test_roi_pooling_takes_the_maximum_of_each_bin(nchw) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, size=(2, 6, 7, 2)).astype(np.uint8)
    rois = np.array([[0, 0, 13, 11], [3, 2, 9, 5], [6, 6, 6, 6]], np.float64)
    batch = [1, 0, 1]
    out_h, out_w, ratio = 3, 2, 2.0
    given = x.transpose(0, 3, 1, 2) if nchw else x
    got, = execute(Op.ROI_POOLING, [(QU8, given, 0.5, 10), (QU16, rois * 8, 0.125, 0), (I32, batch), (INT32, out_h),
                                    (INT32, out_w), (FLOAT32, ratio), (FLOAT32, ratio), (BOOL, nchw)], [(QU8, 0.5, 10)])
    got = got.transpose(0, 2, 3, 1) if nchw else got
    for r, roi in enumerate(rois / ratio):
        x1, y1, x2, y2 = (int(math.floor(v + 0.5)) for v in roi)  # round half away from zero (v >= 0)
        bin_h, bin_w = max(y2 - y1 + 1, 1) / out_h, max(x2 - x1 + 1, 1) / out_w
        for i, j in itertools.product(range(out_h), range(out_w)):
            top, bottom = min(math.floor(y1 + i * bin_h), 6), min(math.ceil(y1 + (i + 1) * bin_h), 6)
            left, right = min(math.floor(x1 + j * bin_w), 7), min(math.ceil(x1 + (j + 1) * bin_w), 7)
            cells = [x[batch[r], y, c] for y in range(top, bottom) for c in range(left, right)]
            want = np.max(cells, axis=0) if cells else [10, 10]  # an empty bin: the zeroPoint
            assert got[r, i, j].tolist() == list(want)


@pytest.mark.parametrize("nchw", [False, True])
def test_heatmap_keypoint_fits_a_quadratic_to_the_neighbourhood_of_the_maximum(nchw) -> None:
    size, peaks = 6, [(2.3, 3.6), (0.4, 4.8), (5.0, 0.0), (2.0, 2.9)]  # (x, y) in heatmap elements
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float64)
    maps = np.stack([5.0 - (xs - px) ** 2 - 0.5 * (ys - py) ** 2 + 0.1 * (xs - px) * (ys - py) for px, py in peaks],
                    axis=-1)[None]  # [1, size, size, keypoints]
    maps[0, 2, 2, 3] = 9.0  # a spike: the fit of its neighbourhood goes past 1.5 elements and is scaled back
    box = np.array([[4.0, 2.0, 16.0, 26.0]])
    given = maps.transpose(0, 3, 1, 2) if nchw else maps
    scores, keypoints = execute(Op.HEATMAP_MAX_KEYPOINT, [(F32, given), (F32, box), (BOOL, nchw)], [(F32, 0.0, 0)] * 2)

    def mirror(i):  # a neighbour past an edge reads the element one inside it
        return 1 if i < 0 else size - 2 if i >= size else i

    for k in range(len(peaks)):
        plane = maps[0, :, :, k]
        cy, cx = divmod(int(np.argmax(plane)), size)
        g = [[plane[mirror(cy + dy), mirror(cx + dx)] for dx in (-1, 0, 1)] for dy in (-1, 0, 1)]
        gradient = np.array([(g[1][2] - g[1][0]) / 2, (g[2][1] - g[0][1]) / 2])
        cross = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / 4
        hessian = np.array([[g[1][0] - 2 * g[1][1] + g[1][2], cross], [cross, g[0][1] - 2 * g[1][1] + g[2][1]]])
        step = np.linalg.solve(hessian, -gradient)  # the stationary point of the second-order Taylor expansion
        step = step * min(1.0, 1.5 / np.abs(step).max()) if np.abs(step).max() > 0 else step
        value = g[1][1] + gradient @ step + step @ hessian @ step / 2
        want_x = (cx + step[0] + 0.5) / size * (box[0, 2] - box[0, 0]) + box[0, 0]
        want_y = (cy + step[1] + 0.5) / size * (box[0, 3] - box[0, 1]) + box[0, 1]
        np.testing.assert_allclose(keypoints[0, k], [want_x, want_y], rtol=1e-5)
        np.testing.assert_allclose(scores[0, k], value, rtol=1e-5)
    # inside the map the fit of a quadratic is exact: the first keypoint lands on its peak
    np.testing.assert_allclose(keypoints[0, 0], [(2.3 + 0.5) / size * 12 + 4, (3.6 + 0.5) / size * 24 + 2], rtol=1e-5)


def test_axis_aligned_bbox_transform_moves_scales_and_clips() -> None:
    rois = np.array([[1, 2, 5, 4], [0, 0, 10, 10]], np.float32)
    deltas = np.array([[0.1, -0.2, 0.3, 0.0, -2, 0, 0, 0], [0.5, 0.5, 1.0, -1.0, 0, 0, 0, 0]], np.float32)
    info = np.array([[20, 30], [8, 9]], np.float32)  # height, width
    batch = [1, 0]
    got, = execute(Op.AXIS_ALIGNED_BBOX_TRANSFORM, [(F32, rois), (F32, deltas), (I32, batch), (F32, info)], [(F32, 0.0, 0)])
    for r, c in itertools.product(range(2), range(2)):
        x1, y1, x2, y2 = rois[r].astype(np.float64)
        dx, dy, dw, dh = deltas[r, 4 * c:4 * c + 4].astype(np.float64)
        w, h = (x2 - x1) * math.exp(dw), (y2 - y1) * math.exp(dh)
        cx, cy = (x1 + x2) / 2 + dx * (x2 - x1), (y1 + y2) / 2 + dy * (y2 - y1)
        height, width = info[batch[r]]
        want = [min(max(v, 0), limit) for v, limit in
                ((cx - w / 2, width), (cy - h / 2, height), (cx + w / 2, width), (cy + h / 2, height))]
        np.testing.assert_allclose(got[r, 4 * c:4 * c + 4], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("min_size, kept", [(0.5, 2), (100.0, 0)])
def test_generate_proposals_shifts_anchors_and_reports_what_survives(min_size, kept) -> None:
    # one anchor per position of a 1 x 2 map, zero deltas: the proposals are the anchor shifted by the stride
    scores = np.array([[[[0.9], [0.8]]]], np.float32)  # NHWC [1, 1, 2, 1]
    got = execute(Op.GENERATE_PROPOSALS, [(F32, scores), (F32, np.zeros((1, 1, 2, 4))), (F32, [[0, 0, 4, 4]]),
                                          (F32, [[16, 16]]), (FLOAT32, 8.0), (FLOAT32, 8.0), (INT32, -1), (INT32, -1),
                                          (FLOAT32, 0.5), (FLOAT32, min_size), (BOOL, False)],
                  [(F32, 0.0, 0), (F32, 0.0, 0), (I32, 0.0, 0)])
    assert [g.shape for g in got] == [(kept,), (kept, 4), (kept,)]
    if kept:
        assert got[0].tolist() == pytest.approx([0.9, 0.8]) and got[1].tolist() == [[0, 0, 4, 4], [8, 0, 12, 4]]
        assert got[2].tolist() == [0, 0]


@pytest.mark.parametrize("regular, background", [(True, False), (False, False), (False, True)])
def test_detection_postprocessing_counts_fills_and_labels(regular, background) -> None:
    # anchors far apart (IoU 0): every anchor over the threshold is kept; anchor 1's best class is 2
    anchors = [[1.0, 1.0, 2.0, 2.0], [10.0, 10.0, 2.0, 2.0], [20.0, 20.0, 2.0, 2.0]]  # centre y, centre x, h, w
    scores = [[[0.0, 0.9, 0.1], [0.0, 0.3, 0.7], [0.0, 0.1, 0.05]]]
    limit, per_detection = 3, 2
    got = execute(Op.DETECTION_POSTPROCESSING, [(F32, scores), (F32, np.zeros((1, 3, 4))), (F32, anchors),
                                                (FLOAT32, 10.0), (FLOAT32, 10.0), (FLOAT32, 5.0), (FLOAT32, 5.0),
                                                (BOOL, regular), (INT32, limit), (INT32, per_detection), (INT32, 2),
                                                (FLOAT32, 0.2), (FLOAT32, 0.5), (BOOL, background)],
                  [(F32, 0.0, 0), (F32, 0.0, 0), (I32, 0.0, 0), (I32, 0.0, 0)])
    slots = limit if regular else limit * per_detection
    assert [g.shape for g in got] == [(1, slots), (1, slots, 4), (1, slots), (1,)]
    shift = 0 if background else 1
    if regular:  # per class, then all by score: (anchor 0, class 1), (anchor 1, class 2), (anchor 1, class 1)
        want = [(0.9, 0, 1), (0.7, 1, 2), (0.3, 1, 1)]
    else:  # per anchor over the threshold, its best classes
        want = [(0.9, 0, 1), (0.1, 0, 2), (0.7, 1, 2), (0.3, 1, 1)]
    assert got[3].tolist() == [len(want)]
    np.testing.assert_allclose(got[0][0, :len(want)], [w[0] for w in want], rtol=1e-6)
    boxes = [[y - 1, x - 1, y + 1, x + 1] for y, x, _, _ in anchors]  # (y1, x1, y2, x2) of each anchor
    assert got[1][0, :len(want)].tolist() == [boxes[w[1]] for w in want]
    assert got[2][0, :len(want)].tolist() == [w[2] - shift for w in want]
    assert not got[0][0, len(want):].any() and not got[2][0, len(want):].any()  # unused slots are zero


def _nms_operands(score_type=F32, roi=(F32, 0.0, 0), batches=I32, count=9):
    scale = 0.1 if score_type in (QU8, QS8) else 0.0
    operands = [(score_type, (2, 3), scale, 0), (roi[0], (2, 12), roi[1], roi[2]), (batches, (2,), 0.0, 0),
                (FLOAT32, (), 0.0, 0), (INT32, (), 0.0, 0), (INT32, (), 0.0, 0), (FLOAT32, (), 0.0, 0),
                (FLOAT32, (), 0.0, 0), (FLOAT32, (), 0.0, 0)]
    return operands[:count], [(score_type, (0,), scale, 0), (roi[0], (0, 4), roi[1], roi[2]), (I32, (0,), 0.0, 0),
                              (I32, (0,), 0.0, 0)]


REFUSALS = [
    (Op.BOX_WITH_NMS_LIMIT, *_nms_operands(batches=F32), "input 2", "batch indices of type TENSOR_FLOAT32"),
    (Op.BOX_WITH_NMS_LIMIT, *_nms_operands(QU8, (QU16, 0.25, 0)), "input 1", "rois of scale 0.25"),
    (Op.BOX_WITH_NMS_LIMIT, *_nms_operands(count=6), "BOX_WITH_NMS_LIMIT)", "6 inputs and 4 outputs"),
    (Op.BOX_WITH_NMS_LIMIT, *_nms_operands(T.TENSOR_INT32), "input 0", "scores of type TENSOR_INT32"),
    (Op.DETECTION_POSTPROCESSING, [(QU8, (1, 2, 3), 0.1, 0)] * 3 + [(FLOAT32, (), 0.0, 0)] * 4 + [(BOOL, (), 0.0, 0)]
     + [(INT32, (), 0.0, 0)] * 3 + [(FLOAT32, (), 0.0, 0)] * 2 + [(BOOL, (), 0.0, 0)],
     [(QU8, (1, 1), 0.1, 0), (QU8, (1, 1, 4), 0.1, 0), (I32, (1, 1), 0.0, 0), (I32, (1,), 0.0, 0)],
     "input 0", "class scores of type TENSOR_QUANT8_ASYMM"),
    (Op.ROI_POOLING, [(QU8, (1, 4, 4, 1), 0.5, 0), (QU16, (1, 4), 0.125, 0), (I32, (1,), 0.0, 0), (INT32, (), 0.0, 0),
                      (INT32, (), 0.0, 0), (FLOAT32, (), 0.0, 0), (FLOAT32, (), 0.0, 0), (BOOL, (), 0.0, 0)],
     [(QU8, (1, 2, 2, 1), 0.25, 0)], "output 0", "output scale and zeroPoint differ"),
    (Op.ROI_ALIGN, [(F32, (1, 4, 4), 0.0, 0), (F32, (1, 4), 0.0, 0), (I32, (1,), 0.0, 0), (INT32, (), 0.0, 0),
                    (INT32, (), 0.0, 0), (FLOAT32, (), 0.0, 0), (FLOAT32, (), 0.0, 0), (INT32, (), 0.0, 0),
                    (INT32, (), 0.0, 0), (BOOL, (), 0.0, 0)], [(F32, (1, 2, 2, 1), 0.0, 0)], "input 0", "input of rank 3"),
    (Op.HEATMAP_MAX_KEYPOINT, [(F16, (1, 4, 4, 1), 0.0, 0), (F32, (1, 4), 0.0, 0), (BOOL, (), 0.0, 0)],
     [(F16, (1, 1), 0.0, 0), (F16, (1, 1, 2), 0.0, 0)], "input 1", "boxes of type TENSOR_FLOAT32"),
    (Op.GENERATE_PROPOSALS, [(QU8, (1, 2, 2, 1), 0.1, 0), (QU8, (1, 2, 2, 4), 0.1, 0), (QU16, (1, 4), 0.125, 0),
                             (QU16, (1, 2), 0.125, 0)] + [(FLOAT32, (), 0.0, 0)] * 2 + [(INT32, (), 0.0, 0)] * 2
     + [(FLOAT32, (), 0.0, 0)] * 2 + [(BOOL, (), 0.0, 0)],
     [(QU8, (0,), 0.1, 0), (QU16, (0, 4), 0.125, 0), (I32, (0,), 0.0, 0)], "input 2", "anchors of type TENSOR_QUANT16_ASYMM"),
    (Op.AXIS_ALIGNED_BBOX_TRANSFORM, [(QU16, (1, 4), 0.125, 0), (QU8, (1, 4), 0.1, 0), (I32, (1,), 0.0, 0),
                                      (QU16, (1, 2), 0.125, 0)], [(QU16, (1, 4), 0.5, 0)], "output 0", "output boxes of scale 0.5"),
]


@pytest.mark.parametrize("op, operands, outputs, where, feature", REFUSALS,
                         ids=[f"{c[0].name}: {c[-1]}" for c in REFUSALS])
def test_refusals_name_the_operand_and_the_feature(op, operands, outputs, where, feature) -> None:
    b = ModelBuilder()
    inputs = [b.input(t, dims, scale, zp) for t, dims, scale, zp in operands]
    b.operation_outputs(op, inputs, outputs)
    with pytest.raises(DriverError) as refused:
        ReferenceDevice().prepare_model(b.build())
    message = str(refused.value)
    assert refused.value.status == ErrorStatus.INVALID_ARGUMENT and where in message and feature in message


def test_a_roi_outside_the_feature_map_fails_the_execution() -> None:
    with pytest.raises(DriverError) as failed:
        execute(Op.ROI_ALIGN, [(F32, np.zeros((1, 2, 2, 1))), (F32, [[0, 0, 9, 1]]), (I32, [0]), (INT32, 1), (INT32, 1),
                               (FLOAT32, 1.0), (FLOAT32, 1.0), (INT32, 0), (INT32, 0), (BOOL, False)], [(F32, 0.0, 0)])
    assert failed.value.status == ErrorStatus.GENERAL_FAILURE


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), pre=st.sampled_from([-1, 5]), post=st.sampled_from([-1, 3]), nchw=st.booleans())
def test_generate_proposals_follows_a_loop_over_anchors_and_a_greedy_nms(seed, pre, post, nchw) -> None:
    rng = np.random.default_rng(seed)
    batches, height, width, anchors_count, stride = 2, 2, 3, 2, 4.0
    scores = rng.permutation(np.linspace(0.1, 0.9, batches * height * width * anchors_count)).astype(np.float32)
    scores = scores.reshape(batches, height, width, anchors_count)
    deltas = rng.uniform(-0.3, 0.3, size=(batches, height, width, anchors_count * 4)).astype(np.float32)
    anchors = np.array([[0, 0, 6, 5], [1, 2, 4, 9]], np.float32)
    info = np.array([[10, 12], [7, 9]], np.float32)
    iou_threshold, min_size = 0.4, 1.0
    layout = (lambda a: a.transpose(0, 3, 1, 2)) if nchw else (lambda a: a)
    got = execute(Op.GENERATE_PROPOSALS, [(F32, layout(scores)), (F32, layout(deltas)), (F32, anchors), (F32, info),
                                          (FLOAT32, stride), (FLOAT32, stride), (INT32, pre), (INT32, post),
                                          (FLOAT32, iou_threshold), (FLOAT32, min_size), (BOOL, nchw)],
                  [(F32, 0.0, 0), (F32, 0.0, 0), (I32, 0.0, 0)])
    want = []
    for b in range(batches):
        image_h, image_w = info[b].astype(np.float64)
        proposals = {}
        for h, w, a in itertools.product(range(height), range(width), range(anchors_count)):
            x1, y1, x2, y2 = anchors[a].astype(np.float64) + [w * stride, h * stride, w * stride, h * stride]
            dx, dy, dw, dh = deltas[b, h, w, 4 * a:4 * a + 4].astype(np.float64)
            bw, bh = (x2 - x1) * math.exp(dw), (y2 - y1) * math.exp(dh)
            cx, cy = (x1 + x2) / 2 + dx * (x2 - x1), (y1 + y2) / 2 + dy * (y2 - y1)
            box = [min(max(cx - bw / 2, 0), image_w), min(max(cy - bh / 2, 0), image_h),
                   min(max(cx + bw / 2, 0), image_w), min(max(cy + bh / 2, 0), image_h)]
            proposals[(h, w, a)] = (float(scores[b, h, w, a]), box)
        ranked = sorted(proposals, key=lambda k: -proposals[k][0])
        ranked = ranked[:pre] if pre > 0 else ranked
        live = {k: proposals[k][0] for k in ranked
                if (lambda x1, y1, x2, y2: x2 - x1 > min_size and y2 - y1 > min_size and (x1 + x2) / 2 < image_w
                    and (y1 + y2) / 2 < image_h)(*proposals[k][1])}
        boxes = {k: proposals[k][1] for k in live}
        # hard NMS: the hard kernel with a threshold that drops exactly the zeroed scores
        want += [(score, boxes[k], b) for k, score in greedy_nms(live, boxes, post, 0, iou_threshold, 1.0, 1e-9)]
    assert got[0].shape == (len(want),) and got[1].shape == (len(want), 4) and got[2].shape == (len(want),)
    np.testing.assert_allclose(got[0], [w[0] for w in want], rtol=1e-6)
    np.testing.assert_allclose(got[1], np.reshape([w[1] for w in want], (-1, 4)), rtol=1e-5, atol=1e-5)
    assert got[2].tolist() == [w[2] for w in want]


def test_detection_postprocessing_regular_nms_suppresses_overlaps_within_a_class() -> None:
    # anchors 0 and 1 overlap with IoU 0.6: class 1 keeps only anchor 0; class 2 keeps anchor 1 alone
    anchors = [[2.0, 2.0, 4.0, 4.0], [2.0, 2.5, 4.0, 4.0]]  # centre y, centre x, h, w
    boxes = [[y - h / 2, x - w / 2, y + h / 2, x + w / 2] for y, x, h, w in anchors]
    assert area_iou(boxes[0], boxes[1]) == pytest.approx(3.5 * 4 / (2 * 16 - 3.5 * 4))
    scores = [[[0.0, 0.9, 0.1], [0.0, 0.8, 0.6]]]
    got = execute(Op.DETECTION_POSTPROCESSING, [(F32, scores), (F32, np.zeros((1, 2, 4))), (F32, anchors),
                                                (FLOAT32, 1.0), (FLOAT32, 1.0), (FLOAT32, 1.0), (FLOAT32, 1.0),
                                                (BOOL, True), (INT32, 4), (INT32, 1), (INT32, 4),
                                                (FLOAT32, 0.3), (FLOAT32, 0.5), (BOOL, True)],
                  [(F32, 0.0, 0), (F32, 0.0, 0), (I32, 0.0, 0), (I32, 0.0, 0)])
    assert got[3].tolist() == [2]
    np.testing.assert_allclose(got[0][0, :2], [0.9, 0.6], rtol=1e-6)
    assert got[1][0, :2].tolist() == [boxes[0], boxes[1]] and got[2][0, :2].tolist() == [1, 2]


def test_a_too_short_output_reports_the_shape_the_detections_need() -> None:
    b = ModelBuilder()
    scores, rois, batch = b.input(F32, (3, 2)), b.input(F32, (3, 8)), b.input(I32, (3,))
    params = [b.constant(FLOAT32, 0.1), b.constant(INT32, -1), b.constant(INT32, 0), b.constant(FLOAT32, 0.5),
              b.constant(FLOAT32, 1.0), b.constant(FLOAT32, 0.1)]
    b.operation_outputs(Op.BOX_WITH_NMS_LIMIT, [scores, rois, batch, *params],
                        [(F32, (0,), 0.0, 0), (F32, (0, 0), 0.0, 0), (I32, (0,), 0.0, 0), (I32, (0,), 0.0, 0)])
    model = b.build()
    far_apart = [[0, 0, 0, 0, 10 * i, 0, 10 * i + 5, 5] for i in range(3)]  # three detections of class 1
    values = [np.array([[0, 0.9], [0, 0.8], [0, 0.7]], np.float32), np.array(far_apart, np.float32),
              np.array([0, 0, 0], np.int32)]
    request, _, _ = pack_request(model, values, output_capacity=[3 * 4 - 1, 64, 64, 64])
    with pytest.raises(DriverError) as short:
        ReferenceDevice().prepare_model(model).execute(request)
    assert short.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [s.dimensions for s in short.value.output_shapes] == [(3,), (3, 4), (3,), (3,)]
    assert [s.is_sufficient for s in short.value.output_shapes] == [False, True, True, True]


def test_quantized_keypoint_scores_round_after_adding_the_zero_point() -> None:
    # a flat heatmap has no fit (singular Hessian): the score is the maximum, -0.5, stored with scale 1 and
    # zeroPoint 3 as NNAPI stores it, round(-0.5 + 3) = 3 (rounding before adding the zeroPoint would give 2)
    heatmap = np.full((1, 3, 3, 1), -4, np.int8)  # scale 0.125: -0.5
    scores, keypoints = execute(Op.HEATMAP_MAX_KEYPOINT, [(QS8, heatmap, 0.125, 0), (QU16, [[0, 8, 24, 32]], 0.125, 0),
                                                          (BOOL, False)], [(QS8, 1.0, 3), (QU16, 0.125, 0)])
    assert scores.tolist() == [[3]]
    # the first maximum, element (0, 0): its centre, (0 + 0.5) / 3 of the 3 x 3 box from its corner, in eighths
    x, y = 0 + 3 * (0.5 / 3), 1 + 3 * (0.5 / 3)
    assert keypoints.tolist() == [[[round(x * 8), round(y * 8)]]]
