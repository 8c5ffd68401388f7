"""The region operations (NeuralNetworks.h, HAL 1.3): ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT.

ROI_ALIGN and ROI_POOLING cut each roi (x1, y1, x2, y2 in the image, divided by the height and
width ratios to reach the feature map) from the batch its batch index names, into an output of
the given height and width, NHWC or NCHW by the layout flag.  ROI_ALIGN averages, per output
element, a grid of bilinear samples at the centres of equal sub-bins (the grid's size given, or
ceil of the bin's size when 0); a sample at or past the last row or column takes that row or
column.  ROI_POOLING rounds the roi to whole elements, counts its ends inclusive, and takes the
maximum of each bin [floor(start), ceil(end)); an empty bin gives zero (the zeroPoint when
quantized).  HEATMAP_MAX_KEYPOINT finds each keypoint's maximum on its square heatmap, refines it
with a quadratic fit of its 3 x 3 neighbourhood (mirrored at the edges; the offset scaled to at
most 1.5), and maps the refined position into the box.

Quantized data computes on real values and stores with round(x / scale + zeroPoint); rois and
keypoints as TENSOR_QUANT16_ASYMM have scale 0.125 and zeroPoint 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType, is_quantized_type

from ._numeric import KernelError, Refusal, first, round_half_away, scalar
from .detection import (BOOL, F16, F32, FLOAT16, FLOAT32, INT32, QS8, QU8, QU16, TI32, signature,
                        box_output, box_quantization, check_signature, ranks, real, store)


def _layout_in(x: np.ndarray, nchw: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if nchw else x


def _layout_out(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2) if nchw else x)


def _rois(values: Sequence[np.ndarray], ins: Sequence[Operand], data: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The rois' real values [n, 4] and batch indices, checked against the (NHWC) data they cut."""
    rois, batches = real(values[1], ins[1]), np.asarray(values[2]).astype(np.int64)
    if rois.ndim != 2 or rois.shape[1] != 4 or batches.shape != (rois.shape[0],):
        raise KernelError(f"{name}: rois of shape {rois.shape} and batch indices of shape {batches.shape} "
                          "(NNAPI: [n, 4] and [n])")
    if np.any((batches < 0) | (batches >= data.shape[0])):
        raise KernelError(f"{name}: a batch index outside [0, {data.shape[0]})")
    return rois, batches


def _check_extent(rois: np.ndarray, h_scale: float, w_scale: float, height: int, width: int, name: str) -> None:
    """NNAPI: a roi inside the feature map, x1 <= x2 and y1 <= y2."""
    if (np.any(rois < 0) or np.any(rois[:, [0, 2]] * w_scale > width) or np.any(rois[:, [1, 3]] * h_scale > height)
            or np.any(rois[:, 0] > rois[:, 2]) or np.any(rois[:, 1] > rois[:, 3])):
        raise KernelError(f"{name}: a roi outside the {height} x {width} feature map or with x2 < x1 or y2 < y1")


def _output_size(values: Sequence[np.ndarray], name: str) -> tuple[int, int]:
    out_h, out_w = scalar(values[3]), scalar(values[4])
    if out_h < 1 or out_w < 1:
        raise KernelError(f"{name}: output size {out_h} x {out_w} (NNAPI: at least 1)")
    return out_h, out_w


def _ratios(values: Sequence[np.ndarray], name: str) -> tuple[float, float]:
    h_ratio, w_ratio = (float(np.asarray(v, np.float64).reshape(())) for v in values[5:7])
    if not (h_ratio > 0 and w_ratio > 0):
        raise KernelError(f"{name}: height and width ratios {h_ratio}, {w_ratio} (NNAPI: above 0)")
    return h_ratio, w_ratio


# --------------------------------------------------------------------------- ROI_ALIGN and ROI_POOLING

_COMMON_ROLES = ("input", "rois", "batch indices", "output height", "output width", "height ratio", "width ratio")
_ALIGN_ROLES = ((*_COMMON_ROLES, "height sampling ratio", "width sampling ratio", "layout"), ("output",))
_POOL_ROLES = ((*_COMMON_ROLES, "layout"), ("output",))


def _roi_signatures(sampling: bool) -> dict[OperandType, tuple]:
    extra = (INT32, INT32) if sampling else ()
    return {
        F32: signature((F32, F32, TI32, INT32, INT32, FLOAT32, FLOAT32, *extra, BOOL), (F32,)),
        F16: signature((F16, F16, TI32, INT32, INT32, FLOAT16, FLOAT16, *extra, BOOL), (F16,)),
        **{q: signature((q, QU16, TI32, INT32, INT32, FLOAT32, FLOAT32, *extra, BOOL), (q,)) for q in (QU8, QS8)},
    }


_ALIGN_SIGNATURES, _POOL_SIGNATURES = _roi_signatures(True), _roi_signatures(False)


def validate_roi_align(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return check_signature(ins, outs, _ALIGN_ROLES, _ALIGN_SIGNATURES, "ROI_ALIGN") or first((
        box_quantization(ins, (1,), ("rois",)), ranks(ins, {0: 4, 1: 2, 2: 1}, _ALIGN_ROLES[0]),
        ranks(outs, {0: 4}, _ALIGN_ROLES[1], output=True)))


def validate_roi_pooling(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    out = outs[0] if outs else None
    return check_signature(ins, outs, _POOL_ROLES, _POOL_SIGNATURES, "ROI_POOLING") or first((
        box_quantization(ins, (1,), ("rois",)), ranks(ins, {0: 4, 1: 2, 2: 1}, _POOL_ROLES[0]),
        ranks(outs, {0: 4}, _POOL_ROLES[1], output=True),
        # the output elements are input elements: NNAPI gives the output the input's quantization
        Refusal("output scale and zeroPoint differ from the input's (NNAPI: the same)", 0, True)
        if out is not None and is_quantized_type(ins[0].type)
        and (out.scale, out.zero_point) != (ins[0].scale, ins[0].zero_point) else None))


def bilinear_weights(points: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For sample positions (at least 0) on an axis of ``size``: the lower and upper neighbours and the
    upper one's weight; a position at or past the last element takes the last with weight 0."""
    low = np.floor(points).astype(np.int64)
    frac = points - low
    past = low >= size - 1
    low = np.where(past, size - 1, low)
    return low, np.where(past, size - 1, low + 1), np.where(past, 0.0, frac)


def run_roi_align(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                  out: np.ndarray | None) -> np.ndarray:
    name = "ROI_ALIGN"
    nchw = bool(np.asarray(values[9]).reshape(()))
    x = real(values[0], ins[0])
    if x.ndim != 4:
        raise KernelError(f"{name}: input of rank {x.ndim} (NNAPI: 4)")
    x = _layout_in(x, nchw)
    _, height, width, depth = x.shape
    rois, batches = _rois(values, ins, x, name)
    out_h, out_w = _output_size(values, name)
    h_ratio, w_ratio = _ratios(values, name)
    h_sampling, w_sampling = scalar(values[7]), scalar(values[8])
    if h_sampling < 0 or w_sampling < 0:
        raise KernelError(f"{name}: sampling ratios {h_sampling}, {w_sampling} (NNAPI: 0 or more)")
    h_scale, w_scale = 1.0 / h_ratio, 1.0 / w_ratio
    _check_extent(rois, h_scale, w_scale, height, width, name)
    result = np.zeros((rois.shape[0], out_h, out_w, depth))
    for r, (roi, batch) in enumerate(zip(rois, batches)):
        x1, y1, x2, y2 = roi[0] * w_scale, roi[1] * h_scale, roi[2] * w_scale, roi[3] * h_scale
        step_w, step_h = max(x2 - x1, 1.0) / out_w, max(y2 - y1, 1.0) / out_h
        grid_w = w_sampling if w_sampling > 0 else int(np.ceil(step_w))
        grid_h = h_sampling if h_sampling > 0 else int(np.ceil(step_h))
        # sample centres: [out_h, grid_h] rows, [out_w, grid_w] columns
        ys = y1 + step_h * np.arange(out_h)[:, None] + step_h / grid_h * (np.arange(grid_h)[None, :] + 0.5)
        xs = x1 + step_w * np.arange(out_w)[:, None] + step_w / grid_w * (np.arange(grid_w)[None, :] + 0.5)
        y_lo, y_hi, fy = bilinear_weights(ys.reshape(-1), height)
        x_lo, x_hi, fx = bilinear_weights(xs.reshape(-1), width)
        plane = x[batch]
        rows_lo, rows_hi = plane[y_lo], plane[y_hi]  # [sample rows, width, depth]
        fy, fx = fy[:, None, None], fx[None, :, None]
        samples = ((1 - fy) * ((1 - fx) * rows_lo[:, x_lo] + fx * rows_lo[:, x_hi])
                   + fy * ((1 - fx) * rows_hi[:, x_lo] + fx * rows_hi[:, x_hi]))  # [rows, columns, depth]
        result[r] = samples.reshape(out_h, grid_h, out_w, grid_w, depth).mean(axis=(1, 3))
    return _layout_out(store(result, out_op), nchw)


def run_roi_pooling(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                    out: np.ndarray | None) -> np.ndarray:
    name = "ROI_POOLING"
    nchw = bool(np.asarray(values[7]).reshape(()))
    x = np.asarray(values[0])
    if x.ndim != 4:
        raise KernelError(f"{name}: input of rank {x.ndim} (NNAPI: 4)")
    x = _layout_in(x, nchw)
    _, height, width, depth = x.shape
    rois, batches = _rois(values, ins, x, name)
    out_h, out_w = _output_size(values, name)
    h_ratio, w_ratio = _ratios(values, name)
    h_scale, w_scale = 1.0 / h_ratio, 1.0 / w_ratio
    _check_extent(rois, h_scale, w_scale, height, width, name)
    empty = ins[0].zero_point if is_quantized_type(ins[0].type) else 0
    result = np.full((rois.shape[0], out_h, out_w, depth), empty, dtype=x.dtype)
    for r, (roi, batch) in enumerate(zip(rois, batches)):
        x1, y1, x2, y2 = (int(v) for v in round_half_away(roi * [w_scale, h_scale, w_scale, h_scale]))
        step_w, step_h = max(x2 - x1 + 1, 1) / out_w, max(y2 - y1 + 1, 1) / out_h
        for i in range(out_h):
            top = min(int(np.floor(step_h * i + y1)), height)
            bottom = min(int(np.ceil(step_h * (i + 1) + y1)), height)
            for j in range(out_w):
                left = min(int(np.floor(step_w * j + x1)), width)
                right = min(int(np.ceil(step_w * (j + 1) + x1)), width)
                if top < bottom and left < right:
                    result[r, i, j] = x[batch, top:bottom, left:right].max(axis=(0, 1))
    return _layout_out(result, nchw)


# --------------------------------------------------------------------------- HEATMAP_MAX_KEYPOINT

_HEATMAP_ROLES = (("heatmap", "boxes", "layout"), ("output scores", "output keypoints"))
_HEATMAP_SIGNATURES = {
    F32: signature((F32, F32, BOOL), (F32, F32)),
    F16: signature((F16, F16, BOOL), (F16, F16)),
    **{q: signature((q, QU16, BOOL), (q, QU16)) for q in (QU8, QS8)},
}
#: NNAPI's CPU implementation: the tolerances under which the fit's Hessian counts as singular (no refinement).
SINGULAR_TOLERANCE = {F16: 1e-3}
DEFAULT_SINGULAR_TOLERANCE = 1e-5
#: the largest refinement, in heatmap elements, along either axis
MAX_OFFSET = 1.5


def validate_heatmap_max_keypoint(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return check_signature(ins, outs, _HEATMAP_ROLES, _HEATMAP_SIGNATURES, "HEATMAP_MAX_KEYPOINT") or first((
        box_quantization(ins, (1,), ("boxes",)), box_quantization(outs, (1,), ("output keypoints",), output=True),
        ranks(ins, {0: 4, 1: 2}, _HEATMAP_ROLES[0]), ranks(outs, {0: 2, 1: 3}, _HEATMAP_ROLES[1], output=True)))


def refine(grid: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """The quadratic fit of 3 x 3 grids [..., 3, 3] (rows y, columns x) around their centres: the offset
    (dx, dy) [..., 2] of the fitted maximum and the fitted value there; no offset (and the centre's value)
    where the Hessian is singular within ``tolerance``."""
    g = lambda r, c: grid[..., r, c]  # noqa: E731 - the fit reads like its formula
    b = np.stack([-(g(1, 2) - g(1, 0)) / 2, -(g(2, 1) - g(0, 1)) / 2], axis=-1)
    a00, a11 = g(1, 0) - 2 * g(1, 1) + g(1, 2), g(0, 1) - 2 * g(1, 1) + g(2, 1)
    a01 = (g(2, 2) - g(2, 0) - g(0, 2) + g(0, 0)) / 4
    det = a00 * a11 - a01 * a01
    solvable = ~(np.abs(det) < tolerance + tolerance * (a00 * a11))
    safe = np.where(solvable, det, 1.0)
    delta = np.stack([(a11 * b[..., 0] - a01 * b[..., 1]) / safe, (a00 * b[..., 1] - a01 * b[..., 0]) / safe], axis=-1)
    largest = np.abs(delta).max(axis=-1, keepdims=True)
    delta = np.where(largest > MAX_OFFSET, delta * (MAX_OFFSET / np.where(largest > 0, largest, 1.0)), delta)
    delta = np.where(solvable[..., None], delta, 0.0)
    dx, dy = delta[..., 0], delta[..., 1]
    value = g(1, 1) - b[..., 0] * dx - b[..., 1] * dy + ((a00 * dx + a01 * dy) * dx + (a01 * dx + a11 * dy) * dy) / 2
    return delta, value


def run_heatmap_max_keypoint(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                             out: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    name = "HEATMAP_MAX_KEYPOINT"
    nchw = bool(np.asarray(values[2]).reshape(()))
    heatmap, boxes = real(values[0], ins[0]), real(values[1], ins[1])
    if heatmap.ndim != 4:
        raise KernelError(f"{name}: heatmap of rank {heatmap.ndim} (NNAPI: 4)")
    heatmap = _layout_in(heatmap, nchw)  # [boxes, size, size, keypoints]
    count, size, size_w, keypoints = heatmap.shape
    if size != size_w or size < 2 or boxes.shape != (count, 4):
        raise KernelError(f"{name}: heatmap {heatmap.shape} (NHWC) and boxes {boxes.shape} (NNAPI: a square heatmap "
                          "of side at least 2, one box [4] per heatmap)")
    if np.any(boxes[:, 0] > boxes[:, 2]) or np.any(boxes[:, 1] > boxes[:, 3]):
        raise KernelError(f"{name}: a box with x2 < x1 or y2 < y1")
    flat = heatmap.reshape(count, size * size, keypoints)
    top = np.argmax(flat, axis=1)  # [boxes, keypoints], the first of equal maxima
    row, col = top // size, top % size
    offsets = np.arange(-1, 2)

    def mirror(i: np.ndarray) -> np.ndarray:
        return np.where(i < 0, 1, np.where(i >= size, size - 2, i))
    rows = mirror(row[..., None] + offsets)[..., :, None]  # [boxes, keypoints, 3, 1]
    cols = mirror(col[..., None] + offsets)[..., None, :]  # [boxes, keypoints, 1, 3]
    n_idx = np.arange(count)[:, None, None, None]
    k_idx = np.arange(keypoints)[None, :, None, None]
    grid = heatmap[n_idx, rows, cols, k_idx]
    delta, score = refine(grid, SINGULAR_TOLERANCE.get(ins[0].type, DEFAULT_SINGULAR_TOLERANCE))
    width, height = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    kx = (col + delta[..., 0] + 0.5) / size * width[:, None] + boxes[:, 0, None]
    ky = (row + delta[..., 1] + 0.5) / size * height[:, None] + boxes[:, 1, None]
    return store(score, out_op), store(np.stack([kx, ky], axis=-1), box_output(ins[0]))


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.ROI_ALIGN: (validate_roi_align, run_roi_align),
    OperationType.ROI_POOLING: (validate_roi_pooling, run_roi_pooling),
    OperationType.HEATMAP_MAX_KEYPOINT: (validate_heatmap_max_keypoint, run_heatmap_max_keypoint),
}
