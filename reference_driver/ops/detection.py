"""The detection operations (NeuralNetworks.h, HAL 1.3): AXIS_ALIGNED_BBOX_TRANSFORM,
BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS and DETECTION_POSTPROCESSING.

Boxes are corners (x1, y1, x2, y2), except DETECTION_POSTPROCESSING's anchors (centre y, centre x,
height, width) and outputs (y1, x1, y2, x2).  A box transform moves a box's centre by (dx, dy)
times its size and scales its size by exp(dw), exp(dh); AXIS_ALIGNED_BBOX_TRANSFORM and
GENERATE_PROPOSALS then clip it to its image.  Class 0 is the background: no NMS keeps it.

Non-maximum suppression follows NNAPI's CPU implementation, whose order decides equal scores:
the candidates of a class in index order; each round takes the first highest-scoring candidate,
and every other candidate either stays in place or is swapped with the last live one when
suppressed (hard NMS: IoU at least the threshold; BOX_WITH_NMS_LIMIT's linear and gaussian
kernels scale its score, and a score under the NMS score threshold suppresses it).

BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS have outputs whose size depends on the data (maybe 0);
the kernels return arrays of their real shapes.  DETECTION_POSTPROCESSING has fixed output shapes
and reports its counts in its last output, the unused slots zero.

Quantized operands compute on their real values and are stored as NNAPI's CPU implementation
stores them, round(x / scale + zeroPoint) (half away from zero) and saturated; boxes quantized as
TENSOR_QUANT16_ASYMM have scale 0.125 and zeroPoint 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType, is_quantized_type, numpy_dtype

from ._numeric import _RANGE, KernelError, Refusal, first, round_half_away, scalar

T = OperandType
F32, F16, TI32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32
QU8, QS8, QU16, QS16 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM
FLOAT32, FLOAT16, INT32, BOOL = T.FLOAT32, T.FLOAT16, T.INT32, T.BOOL
#: NeuralNetworks.h: the quantization of every TENSOR_QUANT16_ASYMM box (scale, zeroPoint).
BOX_QUANTIZATION = (0.125, 0)

#: one signature: per input, then per output, the types allowed at that position
Signature = tuple[tuple[frozenset[OperandType], ...], tuple[frozenset[OperandType], ...]]


def signature(ins: Sequence[object], outs: Sequence[object]) -> Signature:
    def sets(types: Sequence[object]) -> tuple[frozenset[OperandType], ...]:
        return tuple(frozenset(t) if isinstance(t, (set, frozenset)) else frozenset({t}) for t in types)  # type: ignore[arg-type]
    return sets(ins), sets(outs)


def check_signature(ins: Sequence[Operand], outs: Sequence[Operand], roles: tuple[Sequence[str], Sequence[str]],
                    signatures: dict[OperandType, Signature], operation: str) -> Refusal | None:
    """The operand counts, then each operand's type against the signature its first input's type selects."""
    in_roles, out_roles = roles
    if len(ins) != len(in_roles) or len(outs) != len(out_roles):
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI {operation}: {len(in_roles)} inputs, "
                       f"{len(out_roles)} outputs)")
    chosen = signatures.get(ins[0].type)
    if chosen is None:
        listed = ", ".join(sorted(t.name for t in signatures))
        return Refusal(f"{in_roles[0]} of type {ins[0].type.name} (NNAPI allows {listed})", 0)
    for operands, allowed_types, names, output in ((ins, chosen[0], in_roles, False), (outs, chosen[1], out_roles, True)):
        for position, (operand, allowed, role) in enumerate(zip(operands, allowed_types, names)):
            if operand.type not in allowed:
                wanted = " or ".join(sorted(t.name for t in allowed))
                return Refusal(f"{role} of type {operand.type.name} (NNAPI: {wanted} with a {ins[0].type.name} "
                               f"{in_roles[0]})", position, output)
    return None


def box_quantization(operands: Sequence[Operand], positions: Sequence[int], roles: Sequence[str], *,
                     output: bool = False) -> Refusal | None:
    """NeuralNetworks.h: a TENSOR_QUANT16_ASYMM box tensor has scale 0.125 and zeroPoint 0."""
    for position, role in zip(positions, roles):
        operand = operands[position]
        if operand.type == QU16 and (operand.scale, operand.zero_point) != BOX_QUANTIZATION:
            return Refusal(f"{role} of scale {operand.scale} and zeroPoint {operand.zero_point} (NNAPI: 0.125 and 0)",
                           position, output)
    return None


def ranks(operands: Sequence[Operand], wanted: dict[int, int], roles: Sequence[str], *,
          output: bool = False) -> Refusal | None:
    """Each listed operand's rank, when its rank is known."""
    for position, rank in wanted.items():
        dims = operands[position].dimensions
        if len(dims) not in (0, rank):
            return Refusal(f"{roles[position]} of rank {len(dims)} (NNAPI: {rank})", position, output)
    return None


def real(value: np.ndarray, operand: Operand) -> np.ndarray:
    """The real values of a tensor in float64 (dequantized when quantized)."""
    if is_quantized_type(operand.type):
        return (np.asarray(value, np.float64) - operand.zero_point) * operand.scale
    return np.asarray(value, np.float64)


def store(x: np.ndarray, operand: Operand) -> np.ndarray:
    """Real values as ``operand``'s type: NNAPI's round(x / scale + zeroPoint), saturated, when quantized."""
    if is_quantized_type(operand.type):
        low, high = _RANGE[operand.type]
        q = round_half_away(np.asarray(x, np.float64) / operand.scale + operand.zero_point)
        return np.clip(q, low, high).astype(numpy_dtype(operand.type))
    return np.ascontiguousarray(np.asarray(x).astype(numpy_dtype(operand.type)))


def _float(value: np.ndarray) -> float:
    return float(np.asarray(value, np.float64).reshape(()))


def _flag(value: np.ndarray) -> bool:
    return bool(np.asarray(value).reshape(()))


def _shape(array: np.ndarray, shape: Sequence[int | None], what: str, operation: str) -> None:
    """Run-time shape check: ``None`` accepts any size on that axis."""
    if array.ndim != len(shape) or any(w is not None and w != d for w, d in zip(shape, array.shape)):
        wanted = ", ".join("n" if w is None else str(w) for w in shape)
        raise KernelError(f"{operation}: {what} of shape {array.shape} (NNAPI: [{wanted}])")


# --------------------------------------------------------------------------- boxes and NMS


def iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection over union of one corner box with each of ``boxes`` (two empty boxes: NaN, which every
    suppression rule then compares as NNAPI's comparisons do)."""
    w = np.maximum(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0.0)
    h = np.maximum(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0.0)
    inter = w * h
    union = (box[2] - box[0]) * (box[3] - box[1]) + (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]) - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return inter / union


#: a suppression rule: (IoUs with the kept box, their scores) -> (new scores, suppressed mask)
Suppression = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def hard_suppression(threshold: float) -> Suppression:
    return lambda overlaps, scores: (scores, overlaps >= threshold)


def soft_suppression(kernel: int, iou_threshold: float, sigma: float, score_threshold: float) -> Suppression:
    """BOX_WITH_NMS_LIMIT's kernels: 0 hard, 1 linear, 2 gaussian; a decayed score under the threshold suppresses."""
    def rule(overlaps: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(invalid="ignore", over="ignore"):
            if kernel == 0:
                factor = np.where(overlaps < iou_threshold, 1.0, 0.0)
            elif kernel == 1:
                factor = np.where(overlaps < iou_threshold, 1.0, 1.0 - overlaps)
            else:
                factor = np.exp(-overlaps * overlaps / sigma)
        decayed = scores * factor
        return decayed, decayed < score_threshold
    return rule


def nms(scores: np.ndarray, boxes: np.ndarray, candidates: Sequence[int], limit: int, suppress: Suppression) -> list[int]:
    """The kept candidates, in the order kept; ``scores`` (indexed like the candidates, updated in place
    by soft kernels) and ``boxes`` [index, 4].  A negative ``limit`` keeps as many as survive."""
    order = list(candidates)
    start, end = 0, len(order)
    limit = end if limit < 0 else limit
    while start < end and start < limit:
        live = np.asarray(order[start:end])
        best = start + int(np.argmax(scores[live]))  # the first of equal highest scores
        order[start], order[best] = order[best], order[start]
        rest = np.asarray(order[start + 1:end], dtype=np.int64)
        if rest.size:
            scores[rest], gone = suppress(iou(boxes[order[start]], boxes[rest]), scores[rest])
            suppressed = dict(zip(rest.tolist(), gone.tolist()))
            i = start + 1
            while i < end:  # the swaps that put each suppressed candidate past the live ones
                if suppressed[order[i]]:
                    end -= 1
                    order[i], order[end] = order[end], order[i]
                else:
                    i += 1
        start += 1
    return order[:start]


def nms_multi_class(scores: np.ndarray, boxes: np.ndarray, classes: int, score_threshold: float, limit: int,
                    class_limit: int, suppress: Suppression) -> list[int]:
    """NMS per class but the background over ``scores`` [rois x classes] flattened, the kept indexes
    ordered by score (highest first) and cut to ``limit`` (negative: no cut)."""
    kept: list[int] = []
    for c in range(1, classes):
        column = np.arange(c, scores.size, classes)
        kept += nms(scores, boxes, column[scores[column] > score_threshold].tolist(), class_limit, suppress)
    kept.sort(key=lambda i: -scores[i])  # NNAPI leaves the order of equal scores open: here, the order kept
    return kept if limit < 0 else kept[:limit]


def transform_boxes(boxes: np.ndarray, deltas: np.ndarray, height: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Corner boxes [..., 4] moved and scaled by deltas (dx, dy, dw, dh) [..., 4], clipped to [0, width] x [0, height]."""
    w, h = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    cx, cy = (boxes[..., 0] + boxes[..., 2]) / 2, (boxes[..., 1] + boxes[..., 3]) / 2
    with np.errstate(over="ignore"):
        nw, nh = np.exp(deltas[..., 2]) * w, np.exp(deltas[..., 3]) * h
    ncx, ncy = cx + deltas[..., 0] * w, cy + deltas[..., 1] * h
    out = np.stack([ncx - nw / 2, ncy - nh / 2, ncx + nw / 2, ncy + nh / 2], axis=-1)
    limits = np.stack([width, height, width, height], axis=-1)
    return np.minimum(np.maximum(out, 0.0), limits)


# --------------------------------------------------------------------------- AXIS_ALIGNED_BBOX_TRANSFORM

_BBOX_ROLES = (("rois", "bounding box deltas", "batch indices", "image info"), ("output boxes",))
_BBOX_SIGNATURES = {
    F32: signature((F32, F32, TI32, F32), (F32,)),
    F16: signature((F16, F16, TI32, F16), (F16,)),
    QU16: signature((QU16, {QU8, QS8}, TI32, QU16), (QU16,)),
}


def validate_axis_aligned_bbox_transform(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return check_signature(ins, outs, _BBOX_ROLES, _BBOX_SIGNATURES, "AXIS_ALIGNED_BBOX_TRANSFORM") or first((
        box_quantization(ins, (0, 3), ("rois", "image info")),
        box_quantization(outs, (0,), ("output boxes",), output=True),
        ranks(ins, {0: 2, 1: 2, 2: 1, 3: 2}, _BBOX_ROLES[0]), ranks(outs, {0: 2}, _BBOX_ROLES[1], output=True)))


def run_axis_aligned_bbox_transform(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                                    out: np.ndarray | None) -> np.ndarray:
    name = "AXIS_ALIGNED_BBOX_TRANSFORM"
    rois, deltas = real(values[0], ins[0]), real(values[1], ins[1])
    batches, info = np.asarray(values[2]).astype(np.int64), real(values[3], ins[3])
    _shape(rois, (None, 4), "rois", name)
    _shape(deltas, (rois.shape[0], None), "deltas", name)
    _shape(batches, (rois.shape[0],), "batch indices", name)
    _shape(info, (None, 2), "image info", name)
    if deltas.shape[1] % 4:
        raise KernelError(f"{name}: deltas of {deltas.shape[1]} columns (NNAPI: 4 per class)")
    if np.any((batches < 0) | (batches >= info.shape[0])):
        raise KernelError(f"{name}: a batch index outside [0, {info.shape[0]})")
    if np.any(rois[:, 0] >= rois[:, 2]) or np.any(rois[:, 1] >= rois[:, 3]):
        raise KernelError(f"{name}: a roi with x2 <= x1 or y2 <= y1")
    classes = deltas.shape[1] // 4
    image = info[batches]  # [rois, 2]: height, width
    moved = transform_boxes(rois[:, None, :], deltas.reshape(-1, classes, 4), image[:, None, 0], image[:, None, 1])
    return store(moved.reshape(rois.shape[0], classes * 4), out_op)


# --------------------------------------------------------------------------- BOX_WITH_NMS_LIMIT

_NMS_ROLES = (("scores", "rois", "batch indices", "score threshold", "maximum detections", "NMS kernel",
               "IoU threshold", "sigma", "NMS score threshold"),
              ("output scores", "output rois", "output classes", "output batch indices"))
_NMS_SIGNATURES = {
    F32: signature((F32, F32, TI32, FLOAT32, INT32, INT32, FLOAT32, FLOAT32, FLOAT32), (F32, F32, TI32, TI32)),
    F16: signature((F16, F16, TI32, FLOAT16, INT32, INT32, FLOAT16, FLOAT16, FLOAT16), (F16, F16, TI32, TI32)),
    QU8: signature((QU8, QU16, TI32, FLOAT32, INT32, INT32, FLOAT32, FLOAT32, FLOAT32), (QU8, QU16, TI32, TI32)),
    QS8: signature((QS8, QU16, TI32, FLOAT32, INT32, INT32, FLOAT32, FLOAT32, FLOAT32), (QS8, QU16, TI32, TI32)),
}


def validate_box_with_nms_limit(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return check_signature(ins, outs, _NMS_ROLES, _NMS_SIGNATURES, "BOX_WITH_NMS_LIMIT") or first((
        box_quantization(ins, (1,), ("rois",)), box_quantization(outs, (1,), ("output rois",), output=True),
        ranks(ins, {0: 2, 1: 2, 2: 1}, _NMS_ROLES[0]),
        ranks(outs, {0: 1, 1: 2, 2: 1, 3: 1}, _NMS_ROLES[1], output=True)))


def run_box_with_nms_limit(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                           out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    name = "BOX_WITH_NMS_LIMIT"
    scores, rois = real(values[0], ins[0]), np.asarray(values[1])
    batches = np.asarray(values[2]).astype(np.int64)
    _shape(scores, (None, None), "scores", name)
    rois_count, classes = scores.shape
    _shape(rois, (rois_count, classes * 4), "rois", name)
    _shape(batches, (rois_count,), "batch indices", name)
    if classes < 2:
        raise KernelError(f"{name}: {classes} classes (NNAPI: more than 1, class 0 the background)")
    threshold, limit, kernel = _float(values[3]), scalar(values[4]), scalar(values[5])
    iou_threshold, sigma, nms_threshold = _float(values[6]), _float(values[7]), _float(values[8])
    if kernel not in (0, 1, 2):
        raise KernelError(f"{name}: NMS kernel {kernel} (NNAPI: 0 hard, 1 linear, 2 gaussian)")
    boxes = real(rois, ins[1]).reshape(-1, 4)  # box of (roi, class) at roi * classes + class
    if np.any(boxes[:, 0] > boxes[:, 2]) or np.any(boxes[:, 1] > boxes[:, 3]):
        raise KernelError(f"{name}: a roi with x2 < x1 or y2 < y1")
    suppress = soft_suppression(kernel, iou_threshold, sigma, nms_threshold)
    flat = scores.reshape(-1).copy()
    selected: list[int] = []
    starts = np.flatnonzero(np.diff(batches, prepend=batches[:1] - 1)) if rois_count else np.zeros(0, np.int64)
    for begin, stop in zip(starts.tolist(), [*starts[1:].tolist(), rois_count]):
        # the boxes of one batch are consecutive; each group runs its own NMS
        part = slice(begin * classes, stop * classes)
        group = flat[part]  # a view: the soft kernels' decayed scores are the output scores
        kept = nms_multi_class(group, boxes[part], classes, threshold, limit, limit, suppress)
        kept.sort(key=lambda i: (i % classes, -group[i]))  # the kept boxes by class, then by score
        selected += [begin * classes + i for i in kept]
    picked = np.asarray(selected, np.int64)
    # the output rois are the input's elements, whatever their type
    return (store(flat[picked], out_op), np.ascontiguousarray(rois.reshape(-1, 4)[picked]),
            (picked % classes).astype(np.int32), batches[picked // classes].astype(np.int32))


# --------------------------------------------------------------------------- GENERATE_PROPOSALS

_GP_ROLES = (("scores", "bounding box deltas", "anchors", "image info", "height stride", "width stride",
              "pre-NMS maximum", "post-NMS maximum", "IoU threshold", "minimum size", "layout"),
             ("output scores", "output rois", "output batch indices"))
_GP_SIGNATURES = {
    F32: signature((F32, F32, F32, F32, FLOAT32, FLOAT32, INT32, INT32, FLOAT32, FLOAT32, BOOL), (F32, F32, TI32)),
    F16: signature((F16, F16, F16, F16, FLOAT16, FLOAT16, INT32, INT32, FLOAT16, FLOAT16, BOOL), (F16, F16, TI32)),
    QU8: signature((QU8, QU8, QS16, QU16, FLOAT32, FLOAT32, INT32, INT32, FLOAT32, FLOAT32, BOOL), (QU8, QU16, TI32)),
    QS8: signature((QS8, QS8, QS16, QU16, FLOAT32, FLOAT32, INT32, INT32, FLOAT32, FLOAT32, BOOL), (QS8, QU16, TI32)),
}


def validate_generate_proposals(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    anchors = ins[2] if len(ins) > 2 else None
    return check_signature(ins, outs, _GP_ROLES, _GP_SIGNATURES, "GENERATE_PROPOSALS") or first((
        box_quantization(ins, (3,), ("image info",)), box_quantization(outs, (1,), ("output rois",), output=True),
        Refusal(f"anchors of scale {anchors.scale} (NNAPI: 0.125)", 2)
        if anchors is not None and anchors.type == QS16 and anchors.scale != BOX_QUANTIZATION[0] else None,
        ranks(ins, {0: 4, 1: 4, 2: 2, 3: 2}, _GP_ROLES[0]),
        ranks(outs, {0: 1, 1: 2, 2: 1}, _GP_ROLES[1], output=True)))


def box_output(data: Operand) -> Operand:
    """How a later output of boxes is stored (a kernel is given only its first output operand): beside
    quantized data, TENSOR_QUANT16_ASYMM of NNAPI's box quantization (validation holds it to that);
    beside float data, the data's type."""
    if is_quantized_type(data.type):
        return Operand(QU16, (), *BOX_QUANTIZATION)
    return Operand(data.type, ())


def run_generate_proposals(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                           out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    name = "GENERATE_PROPOSALS"
    nchw = _flag(values[10])
    scores, deltas = real(values[0], ins[0]), real(values[1], ins[1])
    _shape(scores, (None, None, None, None), "scores", name)
    _shape(deltas, (None, None, None, None), "deltas", name)
    if nchw:
        scores, deltas = scores.transpose(0, 2, 3, 1), deltas.transpose(0, 2, 3, 1)
    batches, height, width, anchors_count = scores.shape
    _shape(deltas, (batches, height, width, anchors_count * 4), "deltas (NHWC)", name)
    anchors, info = real(values[2], ins[2]), real(values[3], ins[3])
    _shape(anchors, (anchors_count, 4), "anchors", name)
    _shape(info, (batches, 2), "image info", name)
    h_stride, w_stride = _float(values[4]), _float(values[5])
    pre, post = scalar(values[6]), scalar(values[7])
    iou_threshold, min_size = _float(values[8]), _float(values[9])
    shift = np.stack(np.meshgrid(np.arange(width) * w_stride, np.arange(height) * h_stride), axis=-1)  # [h, w, (x, y)]
    shift = np.concatenate([shift, shift], axis=-1)[:, :, None, :]
    boxes = (anchors[None, None, :, :] + shift).reshape(-1, 4)  # in (h, w, anchor) order, as the scores
    if np.any(boxes[:, 0] >= boxes[:, 2]) or np.any(boxes[:, 1] >= boxes[:, 3]):
        raise KernelError(f"{name}: an anchor with x2 <= x1 or y2 <= y1")
    out_scores, out_rois, out_batches = [], [], []
    for b in range(batches):
        score = scores[b].reshape(-1).copy()
        moved = transform_boxes(boxes, deltas[b].reshape(-1, 4), info[b, 0], info[b, 1])
        select = np.arange(score.size)
        if 0 < pre < score.size:
            select = np.argsort(-score, kind="stable")[:pre]
        w, h = moved[select, 2] - moved[select, 0], moved[select, 3] - moved[select, 1]
        keep = (w > min_size) & (h > min_size) & (moved[select, 0] + w / 2 < info[b, 1]) & (moved[select, 1] + h / 2 < info[b, 0])
        kept = nms(score, moved, select[keep].tolist(), post, hard_suppression(iou_threshold))
        out_scores.append(score[kept])
        out_rois.append(moved[kept])
        out_batches.append(np.full(len(kept), b, np.int32))
    return (store(np.concatenate(out_scores), out_op), store(np.concatenate(out_rois).reshape(-1, 4), box_output(ins[0])),
            np.concatenate(out_batches).astype(np.int32))


# --------------------------------------------------------------------------- DETECTION_POSTPROCESSING

_DP_ROLES = (("class scores", "box encodings", "anchors", "y scale", "x scale", "height scale", "width scale",
              "regular NMS flag", "maximum detections", "maximum classes per detection",
              "maximum detections per class", "score threshold", "IoU threshold", "background-in-label flag"),
             ("output scores", "output boxes", "output classes", "detection counts"))
_DP_SIGNATURES = {
    t: signature((t, t, t, s, s, s, s, BOOL, INT32, INT32, INT32, s, s, BOOL), (t, t, TI32, TI32))
    for t, s in ((F32, FLOAT32), (F16, FLOAT16))
}


def validate_detection_postprocessing(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return check_signature(ins, outs, _DP_ROLES, _DP_SIGNATURES, "DETECTION_POSTPROCESSING") or first((
        ranks(ins, {0: 3, 1: 3, 2: 2}, _DP_ROLES[0]),
        ranks(outs, {0: 2, 1: 3, 2: 2, 3: 1}, _DP_ROLES[1], output=True)))


def run_detection_postprocessing(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                                 out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    name = "DETECTION_POSTPROCESSING"
    scores, deltas, anchors = (np.asarray(v, np.float64) for v in values[:3])
    _shape(scores, (None, None, None), "class scores", name)
    batches, anchors_count, classes = scores.shape
    _shape(deltas, (batches, anchors_count, None), "box encodings", name)
    _shape(anchors, (anchors_count, 4), "anchors", name)
    scale_y, scale_x, scale_h, scale_w = (_float(v) for v in values[3:7])
    regular, limit, classes_per, per_class = _flag(values[7]), scalar(values[8]), scalar(values[9]), scalar(values[10])
    score_threshold, iou_threshold, background_label = _float(values[11]), _float(values[12]), _flag(values[13])
    if min(scale_y, scale_x, scale_h, scale_w) <= 0 or score_threshold < 0 or iou_threshold < 0:
        raise KernelError(f"{name}: a scale at most 0 or a negative threshold (NNAPI: scales above 0, thresholds 0 or more)")
    if classes < 2 or deltas.shape[2] < 4 or limit < 1 or (per_class < 1 if regular else classes_per < 1):
        raise KernelError(f"{name}: {classes} classes, box encodings of {deltas.shape[2]}, maximum detections {limit}, "
                          f"per class {per_class}, classes per detection {classes_per} (NNAPI: more than 1 class, "
                          "at least 4, and maximums at least 1)")
    slots = limit if regular else limit * classes_per
    out_scores, out_boxes = np.zeros((batches, slots)), np.zeros((batches, slots, 4))
    out_classes, counts = np.zeros((batches, slots), np.int32), np.zeros(batches, np.int32)
    label_shift = 0 if background_label else 1
    yc = anchors[:, 0] + anchors[:, 2] * deltas[..., 0] / scale_y
    xc = anchors[:, 1] + anchors[:, 3] * deltas[..., 1] / scale_x
    with np.errstate(over="ignore"):
        half_h = anchors[:, 2] * np.exp(deltas[..., 2] / scale_h) / 2
        half_w = anchors[:, 3] * np.exp(deltas[..., 3] / scale_w) / 2
    decoded = np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], axis=-1)  # [batch, anchor, (y1, x1, y2, x2)]
    for b in range(batches):
        corners = decoded[b][:, [1, 0, 3, 2]]  # as (x1, y1, x2, y2) for the IoU; IoU is symmetric in x and y
        if regular:
            flat = scores[b].reshape(-1).copy()
            kept = nms_multi_class(flat, np.repeat(corners, classes, axis=0), classes, score_threshold, limit, per_class,
                                   hard_suppression(iou_threshold))
            picked = np.asarray(kept, np.int64)
            n = picked.size
            out_scores[b, :n], out_boxes[b, :n] = flat[picked], decoded[b][picked // classes]
            out_classes[b, :n] = picked % classes - label_shift
            counts[b] = n
        else:
            per_detection = min(classes - 1, classes_per)
            best = scores[b, :, 1:].max(axis=1)
            candidates = np.flatnonzero(best > score_threshold).tolist()
            kept = nms(best.copy(), corners, candidates, limit, hard_suppression(iou_threshold))
            for slot, anchor in enumerate(kept):
                ranked = 1 + np.argsort(-scores[b, anchor, 1:], kind="stable")[:per_detection]
                rows = slice(slot * per_detection, (slot + 1) * per_detection)
                out_scores[b, rows], out_boxes[b, rows] = scores[b, anchor, ranked], decoded[b, anchor]
                out_classes[b, rows] = ranked - label_shift
            counts[b] = len(kept) * per_detection
    dtype = numpy_dtype(ins[0].type)
    return out_scores.astype(dtype), out_boxes.astype(dtype), out_classes, counts


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.AXIS_ALIGNED_BBOX_TRANSFORM: (validate_axis_aligned_bbox_transform, run_axis_aligned_bbox_transform),
    OperationType.BOX_WITH_NMS_LIMIT: (validate_box_with_nms_limit, run_box_with_nms_limit),
    OperationType.GENERATE_PROPOSALS: (validate_generate_proposals, run_generate_proposals),
    OperationType.DETECTION_POSTPROCESSING: (validate_detection_postprocessing, run_detection_postprocessing),
}
