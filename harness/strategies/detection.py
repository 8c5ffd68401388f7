"""Models of the detection and region operations: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT,
GENERATE_PROPOSALS, DETECTION_POSTPROCESSING, ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT.

One family per operation (`FAMILIES`), each model one operation on a type NNAPI gives it and the
driver declares, NHWC or NCHW where the operation has a layout flag, one or two batches.  The
quantized forms are drawn where the outputs are elements of the inputs (BOX_WITH_NMS_LIMIT's kept
scores and boxes, ROI_POOLING's maxima), so no requantization's rounding is judged on a handful of
elements; their boxes are TENSOR_QUANT16_ASYMM of scale 1/8, which holds the drawn grids exactly.

These operations decide (a score above a threshold, an IoU at least a threshold, which score is
highest, a box larger than the minimum size, a heatmap's maximum) on values a correct driver may
compute a few ulps away from the reference (CHOICE-7).  So every decision is drawn with a margin
no such error crosses: scores are distinct multiples of 1/64 and thresholds fall between them;
an IoU or minimum size threshold is taken among candidates only when every box is a margin away
from it (none is: the example is rejected).  Boxes lie on a grid of 1/2 (regions: 1/4) with
power-of-two ratios, so what is not an exponential is exact.  A transformed box coordinate made
small by cancellation (its centre minus half its size near 0) would have an error far above a
bound relative to the coordinate: its deltas are set to zero, which leaves it exact.

BOX_WITH_NMS_LIMIT's and GENERATE_PROPOSALS' outputs have as many rows as boxes survive: the model
always declares their first axis unknown (or their rank), so that every test of these models goes
through DOM-DYN-2's path (a region too small is OUTPUT_INSUFFICIENT_SIZE with the shapes it needs);
their sizes, zero when every score is under the threshold, are counted by running the reference's
kernel on the drawn values, which is the only way to know how many boxes survive.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

from harness.api.hal import Capabilities, Operand, OperandType, OperationType
from reference_driver.ops import detection as reference_detection

from .models import ModelCase, _Case, _Choices, _narrowed_to, _operation_and_type_of, _small_ints, _start
from .values import FLOAT_TYPES, QUANT_TYPES, ZERO_POINT_RANGE, arrays, usable_types

Op = OperationType
F32, F16, TI32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
INT32, BOOL, QU16 = OperandType.INT32, OperandType.BOOL, OperandType.TENSOR_QUANT16_ASYMM
#: The data types drawn per operation: NeuralNetworks.h's float forms, and its quantized ones where
#: the outputs are input elements (the others' quantized forms are not drawn yet).
OPERATION_TYPES: dict[OperationType, tuple[OperandType, ...]] = {
    **{op: FLOAT_TYPES for op in (Op.AXIS_ALIGNED_BBOX_TRANSFORM, Op.GENERATE_PROPOSALS, Op.DETECTION_POSTPROCESSING,
                                  Op.ROI_ALIGN, Op.HEATMAP_MAX_KEYPOINT)},
    Op.BOX_WITH_NMS_LIMIT: FLOAT_TYPES + QUANT_TYPES,
    Op.ROI_POOLING: FLOAT_TYPES + QUANT_TYPES,
}
#: NeuralNetworks.h: the (scale, zeroPoint) of every TENSOR_QUANT16_ASYMM box.
BOX_QUANTIZATION = reference_detection.BOX_QUANTIZATION
FAMILIES: dict[str, tuple[OperationType, ...]] = {op.name.lower(): (op,) for op in OPERATION_TYPES}
#: Operations whose outputs have as many rows as the data makes (NNAPI: declared of unknown size).
DATA_DEPENDENT = frozenset({Op.BOX_WITH_NMS_LIMIT, Op.GENERATE_PROPOSALS})
#: A score's grid: distinct multiples of 1/64 in (0, 1), exact in float16 too.
_SCORE_STEP = 1 / 64
#: The IoU thresholds drawn, each taken only when every pair of boxes' IoU is `_IOU_MARGIN` away; 0.5,
#: the common default, last (a driver that ignores the model's threshold for it shows elsewhere).
_IOU_THRESHOLDS = (0.3, 0.7, 0.4, 0.6, 0.5)
_IOU_MARGIN = 0.05
_IOU_NEAR = 0.2
#: A transformed coordinate at least this share of its terms (|centre| + half its size), or its
#: deltas are zeroed: the judge bounds a box's error relative to the coordinate.
_CANCELLATION = 1 / 8


def _scalar_type(type: OperandType) -> OperandType:
    """NNAPI: a TENSOR_FLOAT16 operation's float parameters are FLOAT16, the others' FLOAT32."""
    return OperandType.FLOAT16 if type == F16 else OperandType.FLOAT32


def _box_type(type: OperandType) -> OperandType:
    """NNAPI: the boxes of an operation on quantized data are TENSOR_QUANT16_ASYMM, the others' its type."""
    return QU16 if type in QUANT_TYPES else type


def _as_stored(type: OperandType, real: np.ndarray, quant: tuple[float, int]) -> np.ndarray:
    """``real`` values as a tensor of ``type`` holds them (exact: the drawn grids are the scale's)."""
    if type not in QUANT_TYPES and type != QU16:
        return real
    return np.rint(np.asarray(real) / quant[0] + quant[1]).astype(np.int64)


def _companions(op: OperationType, type: OperandType) -> frozenset[OperandType]:
    """The operand types a model of ``op`` on ``type`` needs besides it (NeuralNetworks.h's signatures)."""
    scalar = _scalar_type(type)
    return frozenset({_box_type(type)} - {type}) | {
        Op.AXIS_ALIGNED_BBOX_TRANSFORM: frozenset({TI32}),
        Op.BOX_WITH_NMS_LIMIT: frozenset({TI32, INT32, scalar}),
        Op.GENERATE_PROPOSALS: frozenset({TI32, INT32, BOOL, scalar}),
        Op.DETECTION_POSTPROCESSING: frozenset({TI32, INT32, BOOL, scalar}),
        Op.ROI_ALIGN: frozenset({TI32, INT32, BOOL, scalar}),
        Op.ROI_POOLING: frozenset({TI32, INT32, BOOL, scalar}),
        Op.HEATMAP_MAX_KEYPOINT: frozenset({BOOL}),
    }[op]


@functools.lru_cache(maxsize=1024)
def operation_types(caps: Capabilities, op: OperationType) -> tuple[OperandType, ...]:
    """The data types a model of ``op`` can have for this driver: NNAPI's, declared, with companions declared."""
    declared = caps.types_of(op)
    return tuple(t for t in usable_types(OPERATION_TYPES[op], declared) if _companions(op, t) <= declared)


def operations(caps: Capabilities, family: str) -> tuple[OperationType, ...]:
    """The operations of ``family`` a model can be built of for this driver (declared, on a type it declares)."""
    return tuple(op for op in FAMILIES[family] if op in caps.operations and operation_types(caps, op))


def _operation_and_type(c: _Choices, caps: Capabilities, family: str) -> tuple[OperationType, OperandType]:
    return _operation_and_type_of(c, operations(caps, family), functools.partial(operation_types, caps))


def _given(c: _Choices, label: str) -> str:
    return c.choice(("input", "copy", "reference"), f"{label} given as")


def _levels(draw, shape: tuple[int, ...], levels: int, label: str) -> np.ndarray:
    """Integers in [0, levels), one draw for the whole array; zero bytes decode to the middle level."""
    bound = levels // 2
    return (draw(_small_ints("int64", tuple(shape), bound), label=label) + bound) % levels


def _distinct_scores(draw, count: int, label: str) -> np.ndarray:
    """``count`` distinct multiples of 1/64 in (0, 1) in a drawn order (count at most 63)."""
    keys = _levels(draw, (count,), 63, label)
    order = np.lexsort((np.arange(count), keys))  # ties in the keys broken by position: still a permutation
    ranks = np.empty(count, np.int64)
    ranks[order] = np.arange(count)
    return (ranks + 1) * _SCORE_STEP


def _score_threshold(c: _Choices, count: int, label: str) -> float:
    """A threshold halfway between two of ``count`` scores' grid values, under half of them, or one
    time in five past them all (no detection)."""
    if c.integer(0, 4, f"{label}: every score under it") == 4:
        return (count + 0.5) * _SCORE_STEP
    return (c.integer(0, count // 2, label) + 0.5) * _SCORE_STEP


def _corner_boxes(draw, count: int, extent: float, label: str) -> np.ndarray:
    """``count`` corner boxes (x1, y1, x2, y2) on a grid of 1/2 inside [0, extent], each 1/2 to 4 a side."""
    corners = _levels(draw, (count, 2), 2 * int(extent) - 1, f"{label} corners") * 0.5
    sides = (_levels(draw, (count, 2), 7, f"{label} sides") + 1) * 0.5
    corners = np.minimum(corners, extent - sides)
    return np.concatenate([corners, corners + sides], axis=1)


def _overlapping(draw, boxes: np.ndarray, label: str) -> np.ndarray:
    """``boxes`` where about two in three are an earlier box with each side moved by one half:
    boxes that overlap, with IoUs around the thresholds."""
    count = boxes.shape[0]
    source = _levels(draw, (count,), count, f"{label} copied from")
    fresh = _levels(draw, (count,), 3, f"{label} of its own") == 0
    moves = _levels(draw, (count, 4), 2, f"{label} moves") - 0.5
    out = boxes.copy()
    for i in range(1, count):
        if not fresh[i]:
            moved = out[source[i] % i] + moves[i]
            if moved[0] < moved[2] and moved[1] < moved[3] and moved.min() >= 0:
                out[i] = moved
    return out


def _pairwise_iou(boxes: np.ndarray) -> np.ndarray:
    return np.stack([reference_detection.iou(box, boxes) for box in boxes]) if boxes.size else np.zeros((0, 0))


def _iou_threshold(c: _Choices, groups: list[np.ndarray], label: str) -> float:
    """An IoU threshold `_IOU_MARGIN` away from every IoU of two boxes of a group (reject if none is),
    one with an IoU within `_IOU_NEAR` of it where there is one: NMS then decides near its threshold."""
    overlaps = np.concatenate([_pairwise_iou(g)[np.triu_indices(len(g), 1)] for g in groups] or [np.zeros(0)])
    overlaps = overlaps[np.isfinite(overlaps)]
    start = c.integer(0, len(_IOU_THRESHOLDS) - 2, label)
    drawn = [_IOU_THRESHOLDS[(start + k) % (len(_IOU_THRESHOLDS) - 1)] for k in range(len(_IOU_THRESHOLDS) - 1)]
    drawn.append(_IOU_THRESHOLDS[-1])
    clear = [t for t in drawn if not np.any(np.abs(overlaps - t) < _IOU_MARGIN)]
    if not clear:
        reject()  # every threshold is within a rounding of some pair's IoU: a decision a correct driver may flip
    return next((t for t in clear if np.any(np.abs(overlaps - t) < _IOU_NEAR)), clear[0])


def _well_conditioned(corners: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """Per box, whether each transformed coordinate is `_CANCELLATION` of its terms away from 0."""
    return np.all(np.abs(corners) >= _CANCELLATION * terms, axis=-1)


def _transformed(boxes: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Corner boxes moved by deltas (dx, dy, dw, dh), unclipped, and each coordinate's terms."""
    w, h = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    cx, cy = (boxes[..., 0] + boxes[..., 2]) / 2 + deltas[..., 0] * w, (boxes[..., 1] + boxes[..., 3]) / 2 + deltas[..., 1] * h
    half_w, half_h = np.exp(deltas[..., 2]) * w / 2, np.exp(deltas[..., 3]) * h / 2
    corners = np.stack([cx - half_w, cy - half_h, cx + half_w, cy + half_h], axis=-1)
    terms = np.stack([np.abs(cx) + half_w, np.abs(cy) + half_h] * 2, axis=-1)
    return corners, terms


def _box_deltas(draw, shape: tuple[int, ...], label: str) -> np.ndarray:
    """Deltas [..., 4]: moves of -1/2 to 1/2 in steps of 1/8, and log-scales of 0, +-1/4, +-1/2."""
    moves = (_levels(draw, (*shape, 2), 9, f"{label} moves") - 4) / 8
    scales = (_levels(draw, (*shape, 2), 5, f"{label} scales") - 2) / 4
    return np.concatenate([moves, scales], axis=-1)


def _dynamic(c: _Choices, shape: tuple[int, ...], label: str) -> tuple[int, ...]:
    """A data-dependent output's dimensions: its rows unknown, the rest as drawn (or its rank unknown)."""
    dims = c.declared(shape, label)
    return dims if not dims else (0, *dims[1:])


def _layout(c: _Choices) -> bool:
    return c.boolean("NCHW")


def _nchw(x: np.ndarray, nchw: bool) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x


@st.composite
def axis_aligned_bbox_transform_models(draw, caps: Capabilities) -> ModelCase:
    """AXIS_ALIGNED_BBOX_TRANSFORM of 1 to 4 rois in 1 or 2 images, 1 to 3 classes of deltas."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "axis_aligned_bbox_transform")
    images = c.integer(1, 2, "images")
    info = np.asarray([[c.integer(4, 12, f"image {i} height"), c.integer(4, 12, f"image {i} width")]
                       for i in range(images)], np.float64)
    count, classes = c.integer(1, 4, "rois"), c.integer(1, 3, "classes")
    batches = _levels(draw, (count,), 3, "batch indices") % images
    rois = _corner_boxes(draw, count, 8.0, "rois")
    deltas = _box_deltas(draw, (count, classes), "deltas")
    corners, terms = _transformed(rois[:, None, :], deltas)
    deltas[~_well_conditioned(corners, terms)] = 0.0
    case = _Case(c)
    ins = [case.operand(type, rois.astype(np.float64), how=_given(c, "rois"), label="rois"),
           case.operand(type, deltas.reshape(count, 4 * classes), how=_given(c, "deltas"), label="deltas"),
           case.operand(TI32, batches.astype(np.int32), how=_given(c, "batch indices"), label="batch indices"),
           case.operand(type, info, how=_given(c, "image info"), label="image info")]
    out = (count, 4 * classes)
    case.output(op, ins, type, out)
    return case.done([out], f"AXIS_ALIGNED_BBOX_TRANSFORM {type.name} {classes} classes")


def _nms_output_shapes(op: OperationType, values: list[np.ndarray], ins: list[Operand]) -> int:
    """How many boxes the reference's kernel keeps (their number is the data's)."""
    kernels = {Op.BOX_WITH_NMS_LIMIT: reference_detection.run_box_with_nms_limit,
               Op.GENERATE_PROPOSALS: reference_detection.run_generate_proposals}
    return int(kernels[op](values, ins, ins[0], None)[0].shape[0])


def _score_quantization(c: _Choices, type: OperandType) -> tuple[float, int]:
    """Quantized scores' (scale, zeroPoint): the score grid's step, so that every score is exact, and
    a zeroPoint that leaves room for the 63 steps of (0, 1)."""
    if type not in QUANT_TYPES:
        return (0.0, 0)
    low, high = ZERO_POINT_RANGE[type]
    return _SCORE_STEP, c.integer(low, high - 64, "scores zero point")


@st.composite
def box_with_nms_limit_models(draw, caps: Capabilities) -> ModelCase:
    """BOX_WITH_NMS_LIMIT (hard NMS) of 1 to 4 rois per image in 1 or 2 images, 2 or 3 classes,
    boxes that overlap, distinct scores, sometimes none above the threshold."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "box_with_nms_limit")
    scalar = _scalar_type(type)
    per_image = [c.choice((3, 4, 2, 1), f"image {i} rois") for i in range(c.integer(1, 2, "images"))]
    count, classes = sum(per_image), c.choice((2, 3, 2), "classes")
    batches = np.repeat(np.arange(len(per_image)), per_image).astype(np.int32)
    boxes = _corner_boxes(draw, count * classes, 12.0, "boxes").reshape(count, classes, 4)
    for k in range(classes):  # overlaps within a class of an image: what NMS compares
        boxes[:, k] = _overlapping(draw, boxes[:, k], f"class {k} boxes")
    scores = np.concatenate([_distinct_scores(draw, n * classes, f"image {i} scores").reshape(n, classes)
                             for i, n in enumerate(per_image)])
    threshold = _score_threshold(c, count * classes, "score threshold")
    iou_threshold = _iou_threshold(c, [boxes[batches == b, k] for b in range(len(per_image)) for k in range(classes)],
                                   "IoU threshold")
    limit = c.choice((-1, 1, 2, 3, 6), "maximum detections")
    score_quant, box_type = _score_quantization(c, type), _box_type(type)
    box_quant = BOX_QUANTIZATION if box_type == QU16 else (0.0, 0)
    values = [_as_stored(type, scores, score_quant), _as_stored(box_type, boxes.reshape(count, 4 * classes), box_quant),
              batches]
    parameters = [np.asarray(threshold), np.asarray(limit, np.int32), np.asarray(0, np.int32), np.asarray(iou_threshold),
                  np.asarray(0.5), np.asarray(_SCORE_STEP / 4)]
    parameter_types = (scalar, INT32, INT32, scalar, scalar, scalar)
    kept = _nms_output_shapes(op, [*values, *parameters],
                              [Operand(type, (), *score_quant), Operand(box_type, (), *box_quant), Operand(TI32),
                               *map(Operand, parameter_types)])
    case = _Case(c)
    ins = [case.operand(type, values[0], score_quant, how=_given(c, "scores"), label="scores"),
           case.operand(box_type, values[1], box_quant, how=_given(c, "rois"), label="rois"),
           case.operand(TI32, batches, how=_given(c, "batch indices"), label="batch indices"),
           *(case.b.constant(t, v) for t, v in zip(parameter_types, parameters))]
    shapes = [(kept,), (kept, 4), (kept,), (kept,)]
    # the kept scores and boxes are the inputs' elements: of the inputs' quantization
    kinds = ((type, score_quant), (box_type, box_quant), (TI32, (0.0, 0)), (TI32, (0.0, 0)))
    outputs = [(t, _dynamic(c, s, f"output {i}"), *q) for i, ((t, q), s) in enumerate(zip(kinds, shapes))]
    case.b.operation_outputs(op, ins, outputs)
    return case.done(shapes, f"BOX_WITH_NMS_LIMIT {type.name} {classes} classes, {kept} kept")


@st.composite
def generate_proposals_models(draw, caps: Capabilities) -> ModelCase:
    """GENERATE_PROPOSALS on a 1 to 3 square feature map of 1 or 2 anchors, 1 or 2 images, NHWC or NCHW."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "generate_proposals")
    scalar = _scalar_type(type)
    images, height, width, anchors_count = (c.integer(1, 2, "images"), c.integer(1, 3, "height"),
                                            c.integer(1, 3, "width"), c.integer(1, 2, "anchors"))
    stride = c.choice((1.0, 2.0), "stride")
    info = np.asarray([[c.integer(3, 8, f"image {i} height"), c.integer(3, 8, f"image {i} width")]
                       for i in range(images)], np.float64)
    anchors = _corner_boxes(draw, anchors_count, 4.0, "anchors")
    per_image = height * width * anchors_count
    scores = np.stack([_distinct_scores(draw, per_image, f"image {i} scores") for i in range(images)])
    deltas = _box_deltas(draw, (images, per_image), "deltas")
    shift = np.stack(np.meshgrid(np.arange(width) * stride, np.arange(height) * stride), axis=-1)
    placed = (anchors[None, None, :, :] + np.concatenate([shift, shift], axis=-1)[:, :, None, :]).reshape(-1, 4)
    corners, terms = _transformed(placed[None], deltas)
    deltas[~_well_conditioned(corners, terms)] = 0.0
    corners, _ = _transformed(placed[None], deltas)
    clipped = np.minimum(np.maximum(corners, 0.0), np.stack([info[:, 1], info[:, 0]] * 2, axis=-1)[:, None, :])
    sizes = np.stack([clipped[..., 2] - clipped[..., 0], clipped[..., 3] - clipped[..., 1]], axis=-1)
    centres = clipped[..., :2] + sizes / 2
    # (a proposal under half an element a side is under every minimum size drawn, whatever its centre)
    if np.any((np.abs(centres - info[:, None, ::-1]) < 0.05) & (sizes.min(axis=-1, keepdims=True) > 0.45)):
        reject()  # a proposal's centre on its image's edge: the filter's decision a rounding may flip
    min_size = next((m for m in (c.choice((0.5, 1.0, 2.0), "minimum size"), 0.5, 1.0, 2.0)
                     if not np.any(np.abs(sizes - m) < 0.05 * m)), None)
    if min_size is None:
        reject()  # every minimum size is within a rounding of a proposal's side
    iou_threshold = _iou_threshold(c, list(clipped), "IoU threshold")
    pre, post = c.choice((64, 2, 4), "pre-NMS maximum"), c.choice((64, 1, 2, 4), "post-NMS maximum")
    nchw = _layout(c)
    score_map = scores.reshape(images, height, width, anchors_count)
    delta_map = deltas.reshape(images, height, width, 4 * anchors_count)
    values = [score_map, delta_map, anchors, info]
    parameters = [np.asarray(stride), np.asarray(stride), np.asarray(pre, np.int32), np.asarray(post, np.int32),
                  np.asarray(iou_threshold), np.asarray(min_size), np.asarray(nchw)]
    parameter_types = (scalar, scalar, INT32, INT32, scalar, scalar, BOOL)
    kept = _nms_output_shapes(op, [_nchw(score_map, nchw), _nchw(delta_map, nchw), anchors, info, *parameters],
                              [Operand(type)] * 4 + list(map(Operand, parameter_types)))
    case = _Case(c)
    ins = [case.operand(type, _nchw(v, nchw) if i < 2 else v, how=_given(c, name), label=name)
           for i, (v, name) in enumerate(zip(values, ("scores", "deltas", "anchors", "image info")))]
    ins += [case.b.constant(t, v) for t, v in zip(parameter_types, parameters)]
    shapes = [(kept,), (kept, 4), (kept,)]
    outputs = [(t, _dynamic(c, s, f"output {i}"), 0.0, 0) for i, (t, s) in enumerate(zip((type, type, TI32), shapes))]
    case.b.operation_outputs(op, ins, outputs)
    return case.done(shapes, f"GENERATE_PROPOSALS {type.name}{' NCHW' if nchw else ''}, {kept} kept")


@st.composite
def detection_postprocessing_models(draw, caps: Capabilities) -> ModelCase:
    """DETECTION_POSTPROCESSING of 1 to 4 anchors, 2 or 3 classes, 1 or 2 images, regular or fast NMS,
    box coder scales of powers of two, the background in the labels or not."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "detection_postprocessing")
    scalar = _scalar_type(type)
    images, count, classes = c.integer(1, 2, "images"), c.integer(1, 4, "anchors"), c.integer(2, 3, "classes")
    corners = _corner_boxes(draw, count, 8.0, "anchors") + 1.0  # (x1, y1, x2, y2) in [1, 9]
    anchors = np.stack([(corners[:, 1] + corners[:, 3]) / 2, (corners[:, 0] + corners[:, 2]) / 2,
                        corners[:, 3] - corners[:, 1], corners[:, 2] - corners[:, 0]], axis=-1)  # (yc, xc, h, w)
    coder = [c.choice((1.0, 2.0, 4.0, 8.0), f"{axis} scale") for axis in ("y", "x", "height", "width")]
    moves = (_levels(draw, (images, count, 2), 9, "encoding moves") - 4) / 4  # (dy, dx)
    logs = (_levels(draw, (images, count, 2), 5, "encoding log-scales") - 2) / 2  # (dh, dw)
    encodings = np.concatenate([moves, logs], axis=-1)
    # in corner form (x, y) as `_transformed` takes it: (dx, dy, dw, dh) over the coder's scales
    as_deltas = np.stack([encodings[..., 1] / coder[1], encodings[..., 0] / coder[0], encodings[..., 3] / coder[3],
                          encodings[..., 2] / coder[2]], axis=-1)
    decoded, terms = _transformed(corners[None], as_deltas)
    encodings[~_well_conditioned(decoded, terms)] = 0.0
    as_deltas[~_well_conditioned(decoded, terms)] = 0.0
    decoded, _ = _transformed(corners[None], as_deltas)
    scores = np.stack([_distinct_scores(draw, count * classes, f"image {i} scores").reshape(count, classes)
                       for i in range(images)])
    threshold = _score_threshold(c, count * classes, "score threshold")
    iou_threshold = _iou_threshold(c, list(decoded), "IoU threshold")
    regular, background = c.boolean("regular NMS"), c.boolean("background in the labels")
    limit, per_detection, per_class = c.integer(1, 3, "maximum detections"), c.integer(1, 2, "classes per detection"), \
        c.integer(1, 3, "detections per class")
    parameters = [*(np.float64(s) for s in coder), np.bool_(regular), np.int32(limit), np.int32(per_detection),
                  np.int32(per_class), np.float64(threshold), np.float64(iou_threshold), np.bool_(background)]
    parameter_types = (scalar,) * 4 + (BOOL, INT32, INT32, INT32, scalar, scalar, BOOL)
    case = _Case(c)
    ins = [case.operand(type, scores, how=_given(c, "scores"), label="scores"),
           case.operand(type, encodings, how=_given(c, "box encodings"), label="box encodings"),
           case.operand(type, anchors, how=_given(c, "anchors"), label="anchors"),
           *(case.b.constant(t, v) for t, v in zip(parameter_types, parameters))]
    slots = limit if regular else limit * per_detection
    shapes = [(images, slots), (images, slots, 4), (images, slots), (images,)]
    outputs = [(t, c.declared(s, f"output {i}"), 0.0, 0) for i, (t, s) in enumerate(zip((type, type, TI32, TI32), shapes))]
    case.b.operation_outputs(op, ins, outputs)
    return case.done(shapes, f"DETECTION_POSTPROCESSING {type.name} {'regular' if regular else 'fast'} NMS")


#: ROI_ALIGN's and ROI_POOLING's output sides and ratios: powers of two, so that every sample position
#: and bin edge is exact and no floor or ceil of one is a rounding's decision.
_REGION_SIDES = (1, 2, 4, 1, 2)
_RATIOS = (0.5, 1.0, 2.0)


def _feature_rois(draw, c: _Choices, count: int, height: int, width: int, out_h: int, out_w: int) -> np.ndarray:
    """``count`` rois in feature-map elements on a grid of 1/4, at most twice the output a side, so an
    adaptive sampling grid (ceil of a bin's size) is 1 or 2 samples, a power of two."""
    starts = _levels(draw, (count, 2), 2 * max(height, width) + 1, "roi starts") / 4  # in the first half
    starts = np.minimum(starts, [width - 0.25, height - 0.25])
    lengths = _levels(draw, (count, 2), 33, "roi lengths") / 4  # often past a bin: adaptive grids of 2
    lengths = np.minimum(lengths, np.minimum([2 * out_w, 2 * out_h], [width, height] - starts))
    return np.concatenate([starts, starts + lengths], axis=1)


def _region_models(draw, caps: Capabilities, family: str) -> ModelCase:
    c = _start(draw)
    op, type = _operation_and_type(c, caps, family)
    scalar = _scalar_type(type)
    images, depth = c.integer(1, 2, "images"), c.integer(1, 2, "depth")
    height, width = c.integer(2, 5, "height"), c.integer(2, 5, "width")
    out_h, out_w = c.choice(_REGION_SIDES, "output height"), c.choice(_REGION_SIDES, "output width")
    h_ratio, w_ratio = c.choice(_RATIOS, "height ratio"), c.choice(_RATIOS, "width ratio")
    count = c.integer(1, 3, "rois")
    rois = _feature_rois(draw, c, count, height, width, out_h, out_w) * [w_ratio, h_ratio, w_ratio, h_ratio]
    batches = (_levels(draw, (count,), 3, "batch indices") % images).astype(np.int32)
    nchw = _layout(c)
    data = draw(arrays(type, (images, height, width, depth)), label="input")
    quant, box_type = c.quantization(type, "input"), _box_type(type)  # ROI_POOLING's output: the input's elements
    box_quant = BOX_QUANTIZATION if box_type == QU16 else (0.0, 0)
    # half the time 0: NNAPI's adaptive grid, ceil of a bin's size
    sampling = ([np.int32(c.choice((0, 2, 0, 1), f"{axis} sampling ratio")) for axis in ("height", "width")]
                if op == Op.ROI_ALIGN else [])
    case = _Case(c)
    ins = [case.operand(type, _nchw(data, nchw), quant, label="input"),
           case.operand(box_type, _as_stored(box_type, rois, box_quant), box_quant, how=_given(c, "rois"), label="rois"),
           case.operand(TI32, batches, how=_given(c, "batch indices"), label="batch indices"),
           case.b.scalar(out_h), case.b.scalar(out_w),
           case.b.constant(scalar, h_ratio), case.b.constant(scalar, w_ratio),
           *(case.b.constant(INT32, s) for s in sampling), case.b.constant(BOOL, nchw)]
    out = (count, depth, out_h, out_w) if nchw else (count, out_h, out_w, depth)
    case.output(op, ins, type, out, quant)
    grid = f" sampling {int(sampling[0])}x{int(sampling[1])}" if sampling else ""
    return case.done([out], f"{op.name} {type.name}{' NCHW' if nchw else ''} to {out_h}x{out_w}{grid}")


@st.composite
def roi_align_models(draw, caps: Capabilities) -> ModelCase:
    """ROI_ALIGN of 1 to 3 rois, sampling ratios 0 (adaptive), 1 or 2, NHWC or NCHW."""
    return _region_models(draw, caps, "roi_align")


@st.composite
def roi_pooling_models(draw, caps: Capabilities) -> ModelCase:
    """ROI_POOLING of 1 to 3 rois, NHWC or NCHW."""
    return _region_models(draw, caps, "roi_pooling")


#: HEATMAP_MAX_KEYPOINT: how far a fit's Hessian must be from NNAPI's singularity test, relatively,
#: and from cancellation (its determinant a share of its products), for a rounding not to decide.
_SINGULAR_MARGIN = 0.1


@st.composite
def heatmap_max_keypoint_models(draw, caps: Capabilities) -> ModelCase:
    """HEATMAP_MAX_KEYPOINT of 1 to 3 boxes, square heatmaps of side 2 to 4, 1 or 2 keypoints, NHWC or
    NCHW; heatmap values distinct multiples of 1/4, so that each maximum is one element."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "heatmap_max_keypoint")
    count, size, keypoints = c.integer(1, 3, "boxes"), c.integer(2, 4, "heatmap side"), c.integer(1, 2, "keypoints")
    planes = [(_distinct_scores(draw, size * size, f"heatmap {i}") / _SCORE_STEP - size * size / 2) / 4
              for i in range(count * keypoints)]
    heatmap = np.stack(planes).reshape(count, keypoints, size, size).transpose(0, 2, 3, 1)  # NHWC
    boxes = _corner_boxes(draw, count, 8.0, "boxes")
    _check_refinement(heatmap, boxes, type)
    nchw = _layout(c)
    case = _Case(c)
    ins = [case.operand(type, _nchw(heatmap, nchw), label="heatmap"),
           case.operand(type, boxes, how=_given(c, "boxes"), label="boxes"),
           case.b.constant(BOOL, nchw)]
    shapes = [(count, keypoints), (count, keypoints, 2)]
    outputs = [(t, c.declared(s, f"output {i}"), 0.0, 0) for i, (t, s) in enumerate(zip((type, type), shapes))]
    case.b.operation_outputs(op, ins, outputs)
    return case.done(shapes, f"HEATMAP_MAX_KEYPOINT {type.name}{' NCHW' if nchw else ''} side {size}")


def _check_refinement(heatmap: np.ndarray, boxes: np.ndarray, type: OperandType) -> None:
    """Reject a heatmap whose refinement a rounding could change: a Hessian near NNAPI's singularity
    test or ill-conditioned, or a score or keypoint coordinate made small by cancellation."""
    from reference_driver.ops import regions

    count, size, _, keypoints = heatmap.shape
    flat = heatmap.reshape(count, size * size, keypoints)
    top = np.argmax(flat, axis=1)
    row, col = top // size, top % size
    mirror = lambda i: np.where(i < 0, 1, np.where(i >= size, size - 2, i))  # noqa: E731 - the reference's rule
    offsets = np.arange(-1, 2)
    rows = mirror(row[..., None] + offsets)[..., :, None]
    cols = mirror(col[..., None] + offsets)[..., None, :]
    grid = heatmap[np.arange(count)[:, None, None, None], rows, cols, np.arange(keypoints)[None, :, None, None]]
    g = lambda r, k: grid[..., r, k]  # noqa: E731
    a00, a11 = g(1, 0) - 2 * g(1, 1) + g(1, 2), g(0, 1) - 2 * g(1, 1) + g(2, 1)
    a01 = (g(2, 2) - g(2, 0) - g(0, 2) + g(0, 0)) / 4
    det = a00 * a11 - a01 * a01
    tolerance = regions.SINGULAR_TOLERANCE.get(type, regions.DEFAULT_SINGULAR_TOLERANCE)
    test = tolerance + tolerance * a00 * a11
    products = np.abs(a00 * a11) + a01 * a01
    solvable = ~(np.abs(det) < test)
    if np.any(np.abs(np.abs(det) - test) < _SINGULAR_MARGIN * np.abs(test)) or \
            np.any(solvable & (np.abs(det) < _SINGULAR_MARGIN * products)):
        reject()  # the fit's Hessian near singular: a rounding decides whether and how far it refines
    delta, value = regions.refine(grid, tolerance)
    b = np.abs(grid).max(axis=(-1, -2))
    if np.any(np.abs(value) < _CANCELLATION * 4 * b):
        reject()  # a fitted score much smaller than its heatmap's values: cancellation
    positions = np.stack([col, row], axis=-1) + delta + 0.5
    sides = np.stack([boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]], axis=-1)[:, None, :]
    keypoint = positions / size * sides + boxes[:, None, :2]
    if np.any(np.abs(keypoint) < _CANCELLATION * (np.abs(positions) / size * sides + boxes[:, None, :2])):
        reject()  # a keypoint coordinate near 0 by cancellation


MAKERS: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    "axis_aligned_bbox_transform": axis_aligned_bbox_transform_models,
    "box_with_nms_limit": box_with_nms_limit_models,
    "generate_proposals": generate_proposals_models,
    "detection_postprocessing": detection_postprocessing_models,
    "roi_align": roi_align_models,
    "roi_pooling": roi_pooling_models,
    "heatmap_max_keypoint": heatmap_max_keypoint_models,
}


@functools.lru_cache(maxsize=256)
def single_operation_models(caps: Capabilities, op: OperationType) -> st.SearchStrategy[ModelCase]:
    """Models of ``op`` alone (of one of `FAMILIES`): the driver's declarations narrowed to it."""
    return _narrowed_to(op, FAMILIES, MAKERS, caps)
