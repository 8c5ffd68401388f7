"""Seeded operation-semantics bugs: NNAPI signatures computed wrongly (caught by golden examples, OPS-1)."""

from __future__ import annotations

import dataclasses
import signal
import threading

import numpy as np

from harness.api.hal import OperationType, conv_2d_has_padding_scheme
from reference_driver.ops import _numeric, elementwise, nn

from ._registry import mutant, with_kernels


@mutant("div-int32-truncates", "OPS-1", "DIV on TENSOR_INT32 rounds toward zero (C division) instead of toward minus infinity",
        operations=(OperationType.DIV,))
def div_int32_truncates():
    def truncate(a, b, out=None):
        with np.errstate(all="ignore"):
            result = np.trunc(np.asarray(a, np.float64) / np.asarray(b, np.float64)).astype(np.int32)
        if out is not None:
            out[...] = result
            return out
        return result

    return with_kernels({OperationType.DIV: elementwise.binary(np.divide, "DIV", integer=truncate)})


@mutant("div-int32-by-zero-traps", "OPS-1", "DIV on TENSOR_INT32 divides as C does on x86: a zero divisor raises SIGFPE, "
        "which kills the driver's process (NNAPI leaves the quotient undefined; the execution must still complete)",
        operations=(OperationType.DIV,))
def div_int32_by_zero_traps():
    def divide(a, b, out=None):
        if not np.all(b):  # the trap is the dividing thread's own, as a faulting instruction's is
            signal.pthread_kill(threading.get_ident(), signal.SIGFPE)
        return elementwise._floor_divide(a, b, out=out)

    return with_kernels({OperationType.DIV: elementwise.binary(np.divide, "DIV", integer=divide)})


def conv_with_geometry(change, *, right_sized: bool = False):
    """CONV_2D computed with the geometry ``change(resolved, implicit padding, filter shape)`` makes
    of the resolved one.  ``right_sized``: the kernel fills the output it is handed, so as many of
    its outputs are kept as the resolved geometry gives; otherwise all that the changed one gives."""

    def run(values, ins, out_op, out):
        data, filt, bias = nn.conv_weights(values, ins)
        geometry = nn.conv_geometry(values, ins, filt.shape, data.shape)
        kernel = change(geometry, conv_2d_has_padding_scheme(ins), filt.shape)
        result = nn.conv_2d(data, ins[0], filt, bias, kernel, out_op)
        if right_sized and kernel != geometry:
            right = nn.conv_2d(data, ins[0], filt, bias, geometry, out_op)
            result = result[tuple(slice(0, side) for side in right.shape)]
        return result

    return with_kernels({OperationType.CONV_2D: run})


@mutant("conv-same-pads-at-start", "OPS-1", "CONV_2D's SAME padding puts the odd row and column at the start, not the end",
        operations=(OperationType.CONV_2D,))
def conv_same_pads_at_start():
    return conv_with_geometry(lambda g, *_: dataclasses.replace(g, pad_top=g.pad_bottom, pad_bottom=g.pad_top,
                                                               pad_left=g.pad_right, pad_right=g.pad_left))


def _same_rows_padded_as_columns(dilated_only: bool):
    """CONV_2D whose SAME padding of the rows comes from the input's width (``dilated_only``: only
    under a dilated filter)."""

    def run(values, ins, out_op, out):
        data, filt, bias = nn.conv_weights(values, ins)
        geometry = nn.conv_geometry(values, ins, filt.shape, data.shape)
        dilated = (geometry.dilation_h, geometry.dilation_w) != (1, 1)
        same = conv_2d_has_padding_scheme(ins) and _numeric.scalar(values[3]) == nn.PaddingScheme.SAME
        if same and (dilated or not dilated_only):
            width = data.shape[3] if geometry.nchw else data.shape[2]
            top, bottom = nn._implicit_padding(width, geometry.stride_h, geometry.dilation_h, filt.shape[1],
                                               nn.PaddingScheme.SAME)
            geometry = dataclasses.replace(geometry, pad_top=top, pad_bottom=bottom)
        return nn.conv_2d(data, ins[0], filt, bias, geometry, out_op)

    return with_kernels({OperationType.CONV_2D: run})


@mutant("conv-same-rows-padded-as-columns", "OPS-1",
        "CONV_2D's SAME padding of the rows is worked out from the input's width, as for a square image",
        operations=(OperationType.CONV_2D,))
def conv_same_rows_padded_as_columns():
    return _same_rows_padded_as_columns(dilated_only=False)


@mutant("conv-same-dilated-rows-padded-as-columns", "OPS-1",
        "CONV_2D's SAME padding under a dilated filter (its own code path: an engine's auto-padding refuses dilation) "
        "works out the rows' padding from the input's width",
        operations=(OperationType.CONV_2D,))
def conv_same_dilated_rows_padded_as_columns():
    return _same_rows_padded_as_columns(dilated_only=True)


@mutant("conv-ignores-dilation", "OPS-1", "CONV_2D ignores its dilation factors",
        operations=(OperationType.CONV_2D,))
def conv_ignores_dilation():
    return conv_with_geometry(lambda g, *_: dataclasses.replace(g, dilation_h=1, dilation_w=1))


@mutant("conv-ignores-layout", "OPS-1", "CONV_2D reads NCHW input as NHWC (the layout flag ignored)",
        operations=(OperationType.CONV_2D,))
def conv_ignores_layout():
    return conv_with_geometry(lambda g, *_: dataclasses.replace(g, nchw=False))


@mutant("conv-per-channel-first-scale", "OPS-1", "a per-channel quantized CONV_2D filter uses its first scale for every channel",
        operations=(OperationType.CONV_2D,))
def conv_per_channel_first_scale():
    def run(values, ins, out_op, out):
        quant = ins[1].channel_quant
        if quant is not None and len(quant.scales) > 1:
            first = dataclasses.replace(quant, scales=(quant.scales[0],) * len(quant.scales))
            ins = [ins[0], dataclasses.replace(ins[1], channel_quant=first), *ins[2:]]
        return nn.run_conv_2d(values, ins, out_op, out)

    return with_kernels({OperationType.CONV_2D: run})


@mutant("relu1-clamps-at-zero", "OPS-1", "the RELU1 operation clamps at 0 below instead of -1",
        operations=(OperationType.RELU1,))
def relu1_clamps_at_zero():
    def run(values, ins, out_op, out):
        return _numeric.from_real(np.clip(_numeric.to_real(values[0], ins[0]), 0, 1), out_op)

    return with_kernels({OperationType.RELU1: run})
