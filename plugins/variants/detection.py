"""A correct driver that transforms boxes and aligns regions in float32 (CHOICE-7).

AXIS_ALIGNED_BBOX_TRANSFORM computes each box's centre, size, exponentials and clipped corners in
float32, each step rounded; ROI_ALIGN interpolates its samples and sums each bin's samples in
float32 before dividing by their count; TENSOR_FLOAT16 data computes so too and rounds to float16
at the end.  Everything else is the reference's.  Its boxes are some ulps of their terms from the
exact ones: what the judge's relative bound for the deciding operations, and its bound on
ROI_ALIGN's weighted sums, must allow.
"""

from __future__ import annotations

import numpy as np

from harness.api.hal import OperationType
from reference_driver import ReferenceDevice
from reference_driver.ops import KERNELS, Kernel, detection, regions

Op = OperationType
F32 = np.float32
_FLOATS = (detection.F32, detection.F16)


def _bbox_transform_in_float32(values, ins, out_op, out):
    checked = KERNELS[Op.AXIS_ALIGNED_BBOX_TRANSFORM].run(values, ins, out_op, None)  # the reference's errors and shape
    if ins[0].type not in _FLOATS:
        return checked
    rois, deltas = np.asarray(values[0], F32), np.asarray(values[1], F32)
    info = np.asarray(values[3], F32)[np.asarray(values[2]).astype(np.int64)]
    classes = deltas.shape[1] // 4
    with np.errstate(over="ignore"):
        moved = detection.transform_boxes(rois[:, None, :], deltas.reshape(-1, classes, 4), info[:, None, 0],
                                          info[:, None, 1])
    return np.asarray(moved, F32).reshape(checked.shape).astype(checked.dtype)


def _roi_align_in_float32(values, ins, out_op, out):
    checked = KERNELS[Op.ROI_ALIGN].run(values, ins, out_op, None)
    if ins[0].type not in _FLOATS:
        return checked
    nchw = bool(np.asarray(values[9]).reshape(()))
    x = np.asarray(values[0], F32)
    x = x.transpose(0, 2, 3, 1) if nchw else x
    _, height, width, depth = x.shape
    rois, batches = np.asarray(values[1], F32), np.asarray(values[2]).astype(np.int64)
    out_h, out_w = int(np.asarray(values[3]).reshape(())), int(np.asarray(values[4]).reshape(()))
    h_scale, w_scale = (F32(1) / F32(np.asarray(v, F32).reshape(())) for v in values[5:7])
    h_sampling, w_sampling = int(np.asarray(values[7]).reshape(())), int(np.asarray(values[8]).reshape(()))
    result = np.zeros((rois.shape[0], out_h, out_w, depth), F32)
    for r, (roi, batch) in enumerate(zip(rois, batches)):
        x1, y1, x2, y2 = roi[0] * w_scale, roi[1] * h_scale, roi[2] * w_scale, roi[3] * h_scale
        step_w, step_h = max(x2 - x1, F32(1)) / F32(out_w), max(y2 - y1, F32(1)) / F32(out_h)
        grid_w = w_sampling if w_sampling > 0 else int(np.ceil(step_w))
        grid_h = h_sampling if h_sampling > 0 else int(np.ceil(step_h))
        for i in range(out_h):
            for j in range(out_w):
                total = np.zeros(depth, F32)
                for a in range(grid_h):
                    for b in range(grid_w):
                        y = y1 + step_h * F32(i) + step_h / F32(grid_h) * F32(a + 0.5)
                        xx = x1 + step_w * F32(j) + step_w / F32(grid_w) * F32(b + 0.5)
                        (y_lo,), (y_hi,), (fy,) = regions.bilinear_weights(np.asarray([y]), height)
                        (x_lo,), (x_hi,), (fx,) = regions.bilinear_weights(np.asarray([xx]), width)
                        fy, fx = F32(fy), F32(fx)
                        plane = x[batch]
                        total += ((F32(1) - fy) * ((F32(1) - fx) * plane[y_lo, x_lo] + fx * plane[y_lo, x_hi])
                                  + fy * ((F32(1) - fx) * plane[y_hi, x_lo] + fx * plane[y_hi, x_hi]))
                result[r, i, j] = total / F32(grid_h * grid_w)
    result = result.transpose(0, 3, 1, 2) if nchw else result
    return np.ascontiguousarray(result).astype(checked.dtype)


def detection_in_float32() -> ReferenceDevice:
    """CHOICE-7: AXIS_ALIGNED_BBOX_TRANSFORM and ROI_ALIGN on float data computed in float32, each
    step rounded (TENSOR_FLOAT16 rounded at the end)."""
    device = ReferenceDevice()
    device.kernels[Op.AXIS_ALIGNED_BBOX_TRANSFORM] = Kernel(KERNELS[Op.AXIS_ALIGNED_BBOX_TRANSFORM].validate,
                                                            _bbox_transform_in_float32)
    device.kernels[Op.ROI_ALIGN] = Kernel(KERNELS[Op.ROI_ALIGN].validate, _roi_align_in_float32)
    return device
