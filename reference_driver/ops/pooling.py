"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D in every NNAPI signature (HAL 1.3).

Their inputs, as NeuralNetworks.h lists them (input first): explicit padding: pad left, right,
top, bottom, stride w, h, filter w, h, activation, [layout]: 10 or 11 inputs; a padding scheme:
scheme, stride w, h, filter w, h, activation, [layout]: 7 or 8.  The layout flag is true for NCHW
input and output.  AVERAGE_POOL_2D and MAX_POOL_2D take TENSOR_FLOAT32, TENSOR_FLOAT16,
TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED, with the input's scale and zeroPoint on a
quantized output; L2_POOL_2D the float types only.

A window's padding is no value: the average and L2 pools divide by the number of the window's
input elements (NeuralNetworks.h's sum(1); NNAPI's CPU implementation counts the elements inside
the input), the max pool takes the largest of them.  NNAPI's CPU implementation refuses padding
as wide as the filter or wider (every window then holds an input element): so does the reference,
at execution.

Floats compute in float64 and round once to the output type.  A quantized average is NNAPI's, on
the stored values (input and output share scale and zeroPoint): the sum of the window's values
divided by their count, rounded half up for TENSOR_QUANT8_ASYMM and half away from zero for
TENSOR_QUANT8_ASYMM_SIGNED (TFLite's integer kernels, which NNAPI's CPU implementation runs), then
clamped to the fused activation's range in stored units.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, is_quantized_type, numpy_dtype

from . import _window, conv, nn
from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, activate, first, from_real, quantization_kept,
                       scalar, type_in)

INT32, BOOL = OperandType.INT32, OperandType.BOOL


def pool_signature(ins: Sequence[Operand]) -> conv.Signature | None:
    """The positions of a pool's parameters (``count``: the filter width, then its height)."""
    if len(ins) in (7, 8):
        return conv.Signature((1,), (2, 3), 6, 7 if len(ins) == 8 else None, count=4)
    if len(ins) in (10, 11):
        return conv.Signature((1, 2, 3, 4), (5, 6), 9, 10 if len(ins) == 11 else None, count=7)
    return None


def _validator(types: frozenset[OperandType]):
    def validate(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
        sig = pool_signature(ins)
        if sig is None or len(outs) != 1:
            return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 7 or 8 inputs with a padding scheme, "
                           "10 or 11 with explicit padding; 1 output)")
        assert sig.count is not None  # the filter width's position
        scalars = (*sig.padding, *sig.strides, sig.count, sig.count + 1, sig.activation)
        data, out = ins[0], outs[0]
        return first((
            type_in(ins, 0, types, "input"),
            None if out.type == data.type else Refusal(f"type {out.type.name} differs from the input's", 0, True),
            first(type_in(ins, i, {INT32}, "padding, stride, filter size or activation") for i in scalars),
            type_in(ins, sig.layout, {BOOL}, "layout flag") if sig.layout is not None else None,
            conv._rank(data, 0, 4, "input"), conv._rank(out, 0, 4, "output", True),
            quantization_kept(data, out) if is_quantized_type(data.type) else None,
        ))

    return validate


validate_average_pool_2d = _validator(FLOAT_TENSORS | QUANT_TENSORS)
validate_max_pool_2d = _validator(FLOAT_TENSORS | QUANT_TENSORS)
validate_l2_pool_2d = _validator(FLOAT_TENSORS)


def pool_geometry(values: Sequence[np.ndarray], ins: Sequence[Operand], what: str) -> tuple[nn.ConvGeometry, int, int]:
    """The geometry and the filter's height and width, checked as NNAPI's CPU implementation does."""
    sig = pool_signature(ins)
    assert sig is not None and sig.count is not None  # validated
    if np.ndim(values[0]) != 4:
        raise KernelError(f"{what}: input of rank {np.ndim(values[0])} (NNAPI: 4)")
    filter_w, filter_h = scalar(values[sig.count]), scalar(values[sig.count + 1])
    conv._positive(what, **{"filter width": filter_w, "filter height": filter_h})
    g = conv.geometry(values, sig, np.shape(values[0]), (filter_h, filter_w), what)
    if max(g.pad_left, g.pad_right) >= filter_w or max(g.pad_top, g.pad_bottom) >= filter_h:
        raise KernelError(f"{what}: padding (left {g.pad_left}, right {g.pad_right}, top {g.pad_top}, bottom "
                          f"{g.pad_bottom}) not below the filter's {filter_h}x{filter_w} (NNAPI's CPU limit)")
    return g, filter_h, filter_w


def _stored_nhwc(data: np.ndarray, g: nn.ConvGeometry) -> np.ndarray:
    return data.transpose(0, 2, 3, 1) if g.nchw else data


def _laid_out(result: np.ndarray, g: nn.ConvGeometry) -> np.ndarray:
    return result.transpose(0, 3, 1, 2) if g.nchw else result


def counts(x: np.ndarray, g: nn.ConvGeometry, filter_h: int, filter_w: int, out_h: int, out_w: int) -> np.ndarray:
    """Each output's number of input elements in its window, [out_h, out_w, 1] (the padding not counted)."""
    rows = _window.window_counts(x.shape[1], filter_h, g.stride_h, g.pad_top, out_h)
    columns = _window.window_counts(x.shape[2], filter_w, g.stride_w, g.pad_left, out_w)
    return (rows[:, None] * columns[None, :])[:, :, None]


def _quantized_range(activation: int, out_op: Operand) -> tuple[int, int]:
    """The fused activation's range in stored units (NNAPI's CalculateActivationRange)."""
    low, high = from_real(activate(np.array([-np.inf, np.inf]), activation), out_op)
    return int(low), int(high)


def run_average_pool_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                        out: np.ndarray | None) -> np.ndarray:
    """out[n, y, x, c] = act(mean of in[n, y*sh + i - pt, x*sw + j - pl, c] over the window's input elements)."""
    g, filter_h, filter_w = pool_geometry(values, ins, "AVERAGE_POOL_2D")
    stored = _stored_nhwc(values[0], g)
    if is_quantized_type(out_op.type):
        window = _window.windows(stored.astype(np.int64), g, filter_h, filter_w, "AVERAGE_POOL_2D")
        total = window.sum(axis=(-2, -1))
        count = counts(stored, g, filter_h, filter_w, *window.shape[1:3])
        half = count // 2
        if out_op.type == OperandType.TENSOR_QUANT8_ASYMM:  # non-negative sums: (sum + count / 2) / count
            mean = (total + half) // count
        else:  # rounded half away from zero, as C's truncating division of sum -+ count / 2
            mean = np.where(total > 0, (total + half) // count, -((half - total) // count))
        return _laid_out(np.clip(mean, *_quantized_range(g.activation, out_op)).astype(numpy_dtype(out_op.type)), g)
    window = _window.windows(np.asarray(stored, np.float64), g, filter_h, filter_w, "AVERAGE_POOL_2D")
    real = window.sum(axis=(-2, -1)) / counts(stored, g, filter_h, filter_w, *window.shape[1:3])
    return _laid_out(from_real(activate(real, g.activation), out_op), g)


def run_max_pool_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                    out: np.ndarray | None) -> np.ndarray:
    """out[n, y, x, c] = act(max of in[n, y*sh + i - pt, x*sw + j - pl, c] over the window's input elements)."""
    g, filter_h, filter_w = pool_geometry(values, ins, "MAX_POOL_2D")
    stored = np.asarray(_stored_nhwc(values[0], g), np.float64)
    largest = _window.windows(stored, g, filter_h, filter_w, "MAX_POOL_2D", fill=-np.inf).max(axis=(-2, -1))
    if is_quantized_type(out_op.type):  # the stored values' maximum, clamped in stored units
        return _laid_out(np.clip(largest, *_quantized_range(g.activation, out_op)).astype(numpy_dtype(out_op.type)), g)
    return _laid_out(from_real(activate(largest, g.activation), out_op), g)


def run_l2_pool_2d(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                   out: np.ndarray | None) -> np.ndarray:
    """out[n, y, x, c] = act(sqrt(mean of in[...]^2 over the window's input elements))."""
    g, filter_h, filter_w = pool_geometry(values, ins, "L2_POOL_2D")
    stored = np.asarray(_stored_nhwc(values[0], g), np.float64)
    window = _window.windows(stored * stored, g, filter_h, filter_w, "L2_POOL_2D")
    real = np.sqrt(window.sum(axis=(-2, -1)) / counts(stored, g, filter_h, filter_w, *window.shape[1:3]))
    return _laid_out(from_real(activate(real, g.activation), out_op), g)
