"""Seeded bugs of the detection and region operations (BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS,
DETECTION_POSTPROCESSING, AXIS_ALIGNED_BBOX_TRANSFORM, ROI_ALIGN, ROI_POOLING and
HEATMAP_MAX_KEYPOINT): each computes one NNAPI rule wrongly, and the models of its family
(`harness.strategies.detection`) catch it as wrong values or wrong output shapes (OPS-1)."""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.api.hal import OperationType, is_quantized_type
from reference_driver.ops import detection, regions

from ._registry import mutant, with_kernels

Op = OperationType


def _replaced(values, position: int, value) -> list:
    """The operation's input values with the one at ``position`` replaced by ``value`` (of its dtype)."""
    changed = list(values)
    changed[position] = np.asarray(value, np.asarray(values[position]).dtype)
    return changed


@mutant("nms-iou-threshold-fixed", "OPS-1",
        "BOX_WITH_NMS_LIMIT suppresses at the common default IoU threshold 0.5 whatever the model's IoU threshold",
        operations=(Op.BOX_WITH_NMS_LIMIT,))
def nms_iou_threshold_fixed():
    def run(values, ins, out_op, out):
        return detection.run_box_with_nms_limit(_replaced(values, 6, 0.5), ins, out_op, out)

    return with_kernels({Op.BOX_WITH_NMS_LIMIT: run})


@mutant("nms-max-detections-ignored", "OPS-1",
        "BOX_WITH_NMS_LIMIT keeps every box that survives NMS, ignoring the maximum number of detections",
        operations=(Op.BOX_WITH_NMS_LIMIT,))
def nms_max_detections_ignored():
    def run(values, ins, out_op, out):
        return detection.run_box_with_nms_limit(_replaced(values, 4, -1), ins, out_op, out)

    return with_kernels({Op.BOX_WITH_NMS_LIMIT: run})


@mutant("nms-score-threshold-ignored", "OPS-1",
        "BOX_WITH_NMS_LIMIT ignores the score threshold: every box of a class but the background enters NMS",
        operations=(Op.BOX_WITH_NMS_LIMIT,))
def nms_score_threshold_ignored():
    def run(values, ins, out_op, out):
        return detection.run_box_with_nms_limit(_replaced(values, 3, -1.0), ins, out_op, out)

    return with_kernels({Op.BOX_WITH_NMS_LIMIT: run})


@mutant("nms-quantized-scores-zero-point-ignored", "OPS-1",
        "BOX_WITH_NMS_LIMIT dequantizes quantized scores as value times scale, leaving out the zero point",
        operations=(Op.BOX_WITH_NMS_LIMIT,))
def nms_quantized_scores_zero_point_ignored():
    def run(values, ins, out_op, out):
        if not is_quantized_type(ins[0].type):
            return detection.run_box_with_nms_limit(values, ins, out_op, out)
        centred = [dataclasses.replace(ins[0], zero_point=0), *ins[1:]]
        return detection.run_box_with_nms_limit(values, centred, out_op, out)

    return with_kernels({Op.BOX_WITH_NMS_LIMIT: run})


@mutant("bbox-transform-from-corner", "OPS-1",
        "AXIS_ALIGNED_BBOX_TRANSFORM moves the top-left corner by (dx, dy) times the size and grows the box from "
        "that corner, not from its centre",
        operations=(Op.AXIS_ALIGNED_BBOX_TRANSFORM,))
def bbox_transform_from_corner():
    def run(values, ins, out_op, out):
        rois, deltas = detection.real(values[0], ins[0]), detection.real(values[1], ins[1])
        info = detection.real(values[3], ins[3])[np.asarray(values[2]).astype(np.int64)]
        d = deltas.reshape(rois.shape[0], -1, 4)
        w, h = (rois[:, 2] - rois[:, 0])[:, None], (rois[:, 3] - rois[:, 1])[:, None]
        x1, y1 = rois[:, 0, None] + d[..., 0] * w, rois[:, 1, None] + d[..., 1] * h
        moved = np.stack([x1, y1, x1 + np.exp(d[..., 2]) * w, y1 + np.exp(d[..., 3]) * h], axis=-1)
        limits = np.stack([info[:, 1], info[:, 0], info[:, 1], info[:, 0]], axis=-1)[:, None, :]
        return detection.store(np.minimum(np.maximum(moved, 0.0), limits).reshape(rois.shape[0], -1), out_op)

    return with_kernels({Op.AXIS_ALIGNED_BBOX_TRANSFORM: run})


@mutant("proposals-min-size-ignored", "OPS-1",
        "GENERATE_PROPOSALS keeps proposals of any size, ignoring the minimum size",
        operations=(Op.GENERATE_PROPOSALS,))
def proposals_min_size_ignored():
    def run(values, ins, out_op, out):
        return detection.run_generate_proposals(_replaced(values, 9, -1.0), ins, out_op, out)

    return with_kernels({Op.GENERATE_PROPOSALS: run})


@mutant("detection-postprocessing-scales-swapped", "OPS-1",
        "DETECTION_POSTPROCESSING reads its box coder's scales as (x, y, width, height), not (y, x, height, width)",
        operations=(Op.DETECTION_POSTPROCESSING,))
def detection_postprocessing_scales_swapped():
    def run(values, ins, out_op, out):
        swapped = [*values[:3], values[4], values[3], values[6], values[5], *values[7:]]
        return detection.run_detection_postprocessing(swapped, ins, out_op, out)

    return with_kernels({Op.DETECTION_POSTPROCESSING: run})


@mutant("detection-postprocessing-background-flag-ignored", "OPS-1",
        "DETECTION_POSTPROCESSING numbers the classes from the first non-background one whatever the "
        "background-in-label flag says",
        operations=(Op.DETECTION_POSTPROCESSING,))
def detection_postprocessing_background_flag_ignored():
    def run(values, ins, out_op, out):
        return detection.run_detection_postprocessing(_replaced(values, 13, False), ins, out_op, out)

    return with_kernels({Op.DETECTION_POSTPROCESSING: run})


@mutant("roi-align-adaptive-sampling-as-one", "OPS-1",
        "ROI_ALIGN takes a sampling ratio of 0 as one sample per bin, not ceil(bin size) (NNAPI's adaptive grid)",
        operations=(Op.ROI_ALIGN,))
def roi_align_adaptive_sampling_as_one():
    def run(values, ins, out_op, out):
        changed = list(values)
        for position in (7, 8):
            changed[position] = np.asarray(max(int(np.asarray(values[position]).reshape(())), 1), np.int32)
        return regions.run_roi_align(changed, ins, out_op, out)

    return with_kernels({Op.ROI_ALIGN: run})


@mutant("roi-align-layout-ignored", "OPS-1",
        "ROI_ALIGN reads and writes NHWC whatever the layout flag says",
        operations=(Op.ROI_ALIGN,))
def roi_align_layout_ignored():
    def run(values, ins, out_op, out):
        nchw = bool(np.asarray(values[9]).reshape(()))
        if not nchw:
            return regions.run_roi_align(values, ins, out_op, out)
        # the NCHW input read as NHWC: the axes' sizes taken in NHWC order, the elements in memory order
        x = np.asarray(values[0])
        n, c, h, w = x.shape
        as_nhwc = np.ascontiguousarray(x).reshape(n, h, w, c)
        result = regions.run_roi_align(_replaced([as_nhwc, *values[1:]], 9, False), ins, out_op, out)
        return np.ascontiguousarray(result).reshape(result.shape[0], c, *result.shape[1:3])

    return with_kernels({Op.ROI_ALIGN: run})


@mutant("roi-pooling-corners-truncated", "OPS-1",
        "ROI_POOLING truncates the roi's scaled corners to whole elements instead of rounding them",
        operations=(Op.ROI_POOLING,))
def roi_pooling_corners_truncated():
    def run(values, ins, out_op, out):
        h_ratio, w_ratio = (float(np.asarray(v, np.float64).reshape(())) for v in values[5:7])
        scale = np.asarray([1 / w_ratio, 1 / h_ratio, 1 / w_ratio, 1 / h_ratio])
        rois = detection.real(values[1], ins[1])
        # corners at whole elements already (floor), which the reference's rounding keeps
        truncated = np.floor(rois * scale) / scale
        return regions.run_roi_pooling(_replaced(values, 1, detection.store(truncated, ins[1])), ins, out_op, out)

    return with_kernels({Op.ROI_POOLING: run})


@mutant("roi-pooling-quantized-rois-unscaled", "OPS-1",
        "ROI_POOLING on quantized data reads its TENSOR_QUANT16_ASYMM rois as whole numbers, not eighths",
        operations=(Op.ROI_POOLING,))
def roi_pooling_quantized_rois_unscaled():
    def run(values, ins, out_op, out):
        if not is_quantized_type(ins[0].type):
            return regions.run_roi_pooling(values, ins, out_op, out)
        # the stored eighths taken as elements, clamped into the feature map as a kernel indexing it would be
        nchw = bool(np.asarray(values[7]).reshape(()))
        shape = np.asarray(values[0]).shape
        height, width = shape[2:4] if nchw else shape[1:3]
        h_ratio, w_ratio = (float(np.asarray(v, np.float64).reshape(())) for v in values[5:7])
        limits = np.floor(np.asarray([width * w_ratio, height * h_ratio] * 2))
        rois = np.minimum(np.asarray(values[1], np.float64), limits)
        unscaled = [ins[0], dataclasses.replace(ins[1], scale=1.0), *ins[2:]]
        return regions.run_roi_pooling(_replaced(values, 1, rois), unscaled, out_op, out)

    return with_kernels({Op.ROI_POOLING: run})


@mutant("heatmap-keypoint-not-refined", "OPS-1",
        "HEATMAP_MAX_KEYPOINT places each keypoint at the centre of its maximum's heatmap element and scores it "
        "with that element, skipping the quadratic sub-element refinement",
        operations=(Op.HEATMAP_MAX_KEYPOINT,))
def heatmap_keypoint_not_refined():
    def run(values, ins, out_op, out):
        nchw = bool(np.asarray(values[2]).reshape(()))
        heatmap, boxes = detection.real(values[0], ins[0]), detection.real(values[1], ins[1])
        heatmap = heatmap.transpose(0, 2, 3, 1) if nchw else heatmap
        count, size, _, keypoints = heatmap.shape
        flat = heatmap.reshape(count, size * size, keypoints)
        top = np.argmax(flat, axis=1)
        row, col = top // size, top % size
        score = np.take_along_axis(flat, top[:, None, :], axis=1)[:, 0, :]
        width, height = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        kx = (col + 0.5) / size * width[:, None] + boxes[:, 0, None]
        ky = (row + 0.5) / size * height[:, None] + boxes[:, 1, None]
        return (detection.store(score, out_op),
                detection.store(np.stack([kx, ky], axis=-1), detection.box_output(ins[0])))

    return with_kernels({Op.HEATMAP_MAX_KEYPOINT: run})

