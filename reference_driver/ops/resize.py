"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR in every NNAPI signature (HAL 1.3).

Inputs, as NeuralNetworks.h lists them: the input, then the output's width and height (INT32), or
the factors that scale the input's (FLOAT32, FLOAT16 for a TENSOR_FLOAT16 input: new size =
floor(size x factor)), then the layout flag (optional for RESIZE_BILINEAR, 3 to 6 inputs; required
for RESIZE_NEAREST_NEIGHBOR, 4 to 6), align_corners and half_pixel_centers (BOOL, optional, not
both true).  Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM and _SIGNED, a quantized
output with the input's scale and zeroPoint.

Where each output pixel samples the input is worked out in float32, as NNAPI's CPU implementation
(TFLite's kernels) does, so that no pixel is chosen differently at a boundary that exact arithmetic
would put on the other side: scale = in / out ((in - 1) / (out - 1) with align_corners and more than
one output), position = y x scale, or (y + 0.5) x scale (- 0.5 for bilinear) with half-pixel
centers.  Nearest neighbour takes floor(position) (rounded half away from zero with align_corners),
clamped to the input; bilinear weighs the two neighbours floor and ceil (clamped) by the position's
fraction, in float64, rounded once to the output type (a quantized value half away from zero).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, is_quantized_type

from . import conv
from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, first, from_real, quantization_kept, to_real,
                       type_in)

INT32, BOOL = OperandType.INT32, OperandType.BOOL
F32, F16 = OperandType.FLOAT32, OperandType.FLOAT16


def _validator(least: int, what: str):
    def validate(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
        if not least <= len(ins) <= 6 or len(outs) != 1:
            return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: {least} to 6 inputs, 1 output)")
        data, out = ins[0], outs[0]
        size = ins[1].type
        scales = {F16} if data.type == OperandType.TENSOR_FLOAT16 else {F32}
        return first((
            type_in(ins, 0, FLOAT_TENSORS | QUANT_TENSORS, "input"),
            type_in(ins, 1, {INT32} | scales, "output width or width scale"),
            None if ins[2].type == size else Refusal(f"output height of type {ins[2].type.name} with a width of {size.name} "
                                                     "(NNAPI: the same type)", 2),
            first(type_in(ins, i, {BOOL}, "layout, align_corners or half_pixel_centers flag") for i in range(3, len(ins))),
            None if out.type == data.type else Refusal(f"type {out.type.name} differs from the input's", 0, True),
            conv._rank(data, 0, 4, "input"), conv._rank(out, 0, 4, "output", True),
            quantization_kept(data, out) if is_quantized_type(data.type) else None,
        ))

    validate.__doc__ = f"{what}'s operands (NeuralNetworks.h)."
    return validate


validate_resize_bilinear = _validator(3, "RESIZE_BILINEAR")
validate_resize_nearest_neighbor = _validator(4, "RESIZE_NEAREST_NEIGHBOR")


def _flag(values: Sequence[np.ndarray], at: int) -> bool:
    return len(values) > at and bool(np.asarray(values[at]).reshape(()))


def geometry(values: Sequence[np.ndarray], ins: Sequence[Operand], what: str):
    """(NCHW, align_corners, half_pixel_centers, output height, output width), checked as NNAPI's CPU does."""
    nchw, align, half = _flag(values, 3), _flag(values, 4), _flag(values, 5)
    if align and half:
        raise KernelError(f"{what}: align_corners and half_pixel_centers both true (NNAPI: not both)")
    data = values[0]
    if np.ndim(data) != 4:
        raise KernelError(f"{what}: input of rank {np.ndim(data)} (NNAPI: 4)")
    height, width = (data.shape[2], data.shape[3]) if nchw else (data.shape[1], data.shape[2])
    if min(height, width) < 1:
        raise KernelError(f"{what}: input {data.shape} (NNAPI: positive height and width)")
    if ins[1].type == INT32:
        out_w, out_h = int(np.asarray(values[1]).reshape(())), int(np.asarray(values[2]).reshape(()))
    else:  # floor(size x factor), the product in float32 (NNAPI's CPU implementation)
        out_w, out_h = (int(np.floor(np.float32(size) * np.float32(np.asarray(v).reshape(()))))
                        for size, v in ((width, values[1]), (height, values[2])))
    if min(out_h, out_w) < 1:
        raise KernelError(f"{what}: output height {out_h} and width {out_w} (NNAPI: positive)")
    return nchw, align, half, out_h, out_w


def _scale(size: int, out: int, align: bool) -> np.float32:
    if align and out > 1:
        return np.float32(size - 1) / np.float32(out - 1)
    return np.float32(size) / np.float32(out)


def nearest_indexes(size: int, out: int, align: bool, half: bool) -> np.ndarray:
    """The input index each output index copies (float32 positions, as NNAPI's CPU)."""
    scale = _scale(size, out, align)
    position = ((np.arange(out, dtype=np.float32) + np.float32(0.5)) * scale if half
                else np.arange(out, dtype=np.float32) * scale)
    # roundf: half away from zero (positions are not negative); floorf otherwise
    index = np.floor(position + np.float32(0.5)) if align else np.floor(position)
    index = np.minimum(index.astype(np.int64), size - 1)
    return np.maximum(index, 0) if half else index


def bilinear_weights(size: int, out: int, align: bool, half: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower index, upper index, the upper one's weight) per output index (TFLite's
    ComputeInterpolationValues, in float32)."""
    scale = _scale(size, out, align)
    steps = np.arange(out, dtype=np.float32)
    position = (steps + np.float32(0.5)) * scale - np.float32(0.5) if half else steps * scale
    lower = np.maximum(np.floor(position).astype(np.int64), 0)
    upper = np.minimum(np.ceil(position).astype(np.int64), size - 1)
    return lower, upper, (position - lower.astype(np.float32)).astype(np.float64)


def _nhwc(data: np.ndarray, nchw: bool) -> np.ndarray:
    return data.transpose(0, 2, 3, 1) if nchw else data


def _laid_out(result: np.ndarray, nchw: bool) -> np.ndarray:
    return result.transpose(0, 3, 1, 2) if nchw else result


def run_resize_nearest_neighbor(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                                out: np.ndarray | None) -> np.ndarray:
    """out[n, y, x, c] = in[n, rows[y], columns[x], c]: a copy of stored values (no requantizing:
    the output has the input's scale and zeroPoint)."""
    nchw, align, half, out_h, out_w = geometry(values, ins, "RESIZE_NEAREST_NEIGHBOR")
    x = _nhwc(values[0], nchw)
    rows = nearest_indexes(x.shape[1], out_h, align, half)
    columns = nearest_indexes(x.shape[2], out_w, align, half)
    return _laid_out(x[:, rows][:, :, columns], nchw)


def run_resize_bilinear(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                        out: np.ndarray | None) -> np.ndarray:
    """out[n, y, x, c] = the bilinear interpolation of the four input pixels around (y, x)'s position."""
    nchw, align, half, out_h, out_w = geometry(values, ins, "RESIZE_BILINEAR")
    x = np.asarray(to_real(_nhwc(values[0], nchw), ins[0]), np.float64)
    top, bottom, down = bilinear_weights(x.shape[1], out_h, align, half)
    left, right, across = bilinear_weights(x.shape[2], out_w, align, half)
    down, across = down[None, :, None, None], across[None, None, :, None]
    upper = x[:, top][:, :, left] * (1 - across) + x[:, top][:, :, right] * across
    lower = x[:, bottom][:, :, left] * (1 - across) + x[:, bottom][:, :, right] * across
    return _laid_out(from_real(upper * (1 - down) + lower * down, out_op), nchw)
