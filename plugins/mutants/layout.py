"""Seeded bugs of the shape and layout operations: each moves, pads or selects elements by one NNAPI
rule wrongly, and the generated suites' models of the operation catch it (OPS-1: the
operation's values or shape, whatever the test's theme)."""

from __future__ import annotations

import numpy as np

from harness.api.hal import OperationType, is_quantized_type
from reference_driver.ops import rearrange, slicing

from ._registry import mutant, with_kernels

Op = OperationType


@mutant("space-to-batch-batch-major", "OPS-1",
        "SPACE_TO_BATCH_ND numbers its output batches input batch first, then block offset, where NNAPI puts the "
        "block offset first (right only for one input batch or a 1x1 block)",
        operations=(OperationType.SPACE_TO_BATCH_ND,))
def space_to_batch_batch_major():
    def run(values, ins, out_op, out):
        result = rearrange.run_space_to_batch_nd(values, ins, out_op, out)
        n = np.shape(values[0])[0]  # the batch axis leads in both layouts
        blocks = result.reshape(result.shape[0] // n, n, *result.shape[1:])
        return np.ascontiguousarray(blocks.swapaxes(0, 1).reshape(result.shape))

    return with_kernels({Op.SPACE_TO_BATCH_ND: run})


@mutant("batch-to-space-block-swapped", "OPS-1",
        "BATCH_TO_SPACE_ND reads its block shape as [width, height] (right only for a square block)",
        operations=(OperationType.BATCH_TO_SPACE_ND,))
def batch_to_space_block_swapped():
    def run(values, ins, out_op, out):
        return rearrange.run_batch_to_space_nd([values[0], np.asarray(values[1])[::-1], *values[2:]], ins, out_op, out)

    return with_kernels({Op.BATCH_TO_SPACE_ND: run})


@mutant("strided-slice-end-mask-ignored", "OPS-1",
        "STRIDED_SLICE ends each axis at its end value even where the end mask says to run to the axis's end",
        operations=(OperationType.STRIDED_SLICE,))
def strided_slice_end_mask_ignored():
    def run(values, ins, out_op, out):
        return slicing.run_strided_slice([*values[:5], np.int32(0), values[6]], ins, out_op, out)

    return with_kernels({Op.STRIDED_SLICE: run})


@mutant("gather-along-first-axis", "OPS-1",
        "GATHER always gathers along axis 0, whatever its axis operand says (right only for axis 0 or -rank)",
        operations=(OperationType.GATHER,))
def gather_along_first_axis():
    def run(values, ins, out_op, out):
        return slicing.run_gather([values[0], np.int32(0), values[2]], ins, out_op, out)

    return with_kernels({Op.GATHER: run})


@mutant("pad-quantized-with-stored-zero", "OPS-1",
        "PAD fills a quantized tensor's padding with the stored value 0, not its zeroPoint (the real value 0)",
        operations=(OperationType.PAD,))
def pad_quantized_with_stored_zero():
    def run(values, ins, out_op, out):
        if is_quantized_type(ins[0].type):
            return rearrange._padded(values, "PAD", 0)
        return rearrange.run_pad(values, ins, out_op, out)

    return with_kernels({Op.PAD: run})


@mutant("pad-v2-value-ignored", "OPS-1", "PAD_V2 pads with the real value 0 whatever its pad value operand says",
        operations=(OperationType.PAD_V2,))
def pad_v2_value_ignored():
    return with_kernels({Op.PAD_V2: lambda values, ins, out_op, out: rearrange.run_pad(values[:2], ins, out_op, out)})


@mutant("transpose-permutation-inverted", "OPS-1",
        "TRANSPOSE moves input axis i to output axis perm[i] instead of taking output axis i from input axis perm[i] "
        "(right only for a permutation that is its own inverse)",
        operations=(OperationType.TRANSPOSE,))
def transpose_permutation_inverted():
    def run(values, ins, out_op, out):
        if len(values) > 1 and np.size(values[1]):
            inverse = np.argsort(np.asarray(values[1]).reshape(-1)).astype(np.int32)
            return rearrange.run_transpose([values[0], inverse], ins, out_op, out)
        return rearrange.run_transpose(values, ins, out_op, out)

    return with_kernels({Op.TRANSPOSE: run})


@mutant("space-to-depth-channel-major", "OPS-1",
        "SPACE_TO_DEPTH orders each output depth by input channel first, then block offset (right only for one "
        "input channel)",
        operations=(OperationType.SPACE_TO_DEPTH,))
def space_to_depth_channel_major():
    def run(values, ins, out_op, out):
        result = rearrange.run_space_to_depth(values, ins, out_op, out)
        nchw = rearrange._nchw(values, 2)
        channels = np.shape(values[0])[1 if nchw else 3]
        nhwc = result.transpose(0, 2, 3, 1) if nchw else result
        n, h, w, depth = nhwc.shape
        swapped = nhwc.reshape(n, h, w, depth // channels, channels).swapaxes(3, 4).reshape(n, h, w, depth)
        return np.ascontiguousarray(swapped.transpose(0, 3, 1, 2) if nchw else swapped)

    return with_kernels({Op.SPACE_TO_DEPTH: run})


@mutant("depth-to-space-columns-first", "OPS-1",
        "DEPTH_TO_SPACE reads each block of an input depth column by column instead of row by row (right only for a "
        "block size of 1)",
        operations=(OperationType.DEPTH_TO_SPACE,))
def depth_to_space_columns_first():
    def run(values, ins, out_op, out):
        result = rearrange.run_depth_to_space(values, ins, out_op, out)
        nchw = rearrange._nchw(values, 2)
        b = int(np.asarray(values[1]).reshape(()))
        nhwc = result.transpose(0, 2, 3, 1) if nchw else result
        n, h, w, c = nhwc.shape
        swapped = nhwc.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 4, 3, 2, 5).reshape(n, h, w, c)
        return np.ascontiguousarray(swapped.transpose(0, 3, 1, 2) if nchw else swapped)

    return with_kernels({Op.DEPTH_TO_SPACE: run})


@mutant("squeeze-every-unit-axis", "OPS-1",
        "SQUEEZE removes every axis of size 1, even those its axes operand does not name",
        operations=(OperationType.SQUEEZE,))
def squeeze_every_unit_axis():
    return with_kernels({Op.SQUEEZE: lambda values, ins, out_op, out: slicing.run_squeeze(values[:1], ins, out_op, out)})


@mutant("expand-dims-negative-axis-short", "OPS-1",
        "EXPAND_DIMS counts a negative axis from the input's rank instead of the output's (-1 inserts before the last "
        "axis, not after it)",
        operations=(OperationType.EXPAND_DIMS,))
def expand_dims_negative_axis_short():
    def run(values, ins, out_op, out):
        axis = int(np.asarray(values[1]).reshape(()))
        if axis < 0 and np.ndim(values[0]) + axis >= 0:
            return slicing.run_expand_dims([values[0], np.int32(np.ndim(values[0]) + axis)], ins, out_op, out)
        return slicing.run_expand_dims(values, ins, out_op, out)

    return with_kernels({Op.EXPAND_DIMS: run})


@mutant("slice-size-read-as-end", "OPS-1", "SLICE reads its size operand as the end index of each axis",
        operations=(OperationType.SLICE,))
def slice_size_read_as_end():
    def run(values, ins, out_op, out):
        begins, sizes = np.asarray(values[1]).reshape(-1), np.asarray(values[2]).reshape(-1)
        ends = np.where(sizes == -1, -1, np.maximum(sizes - begins, 0)).astype(np.int32)
        return slicing.run_slice([values[0], values[1], ends], ins, out_op, out)

    return with_kernels({Op.SLICE: run})


@mutant("tile-repeats-elements", "OPS-1",
        "TILE repeats each element in place (a a b b) instead of repeating the whole tensor (a b a b)",
        operations=(OperationType.TILE,))
def tile_repeats_elements():
    def run(values, ins, out_op, out):
        x = values[0]
        multiples = [int(m) for m in np.asarray(values[1]).reshape(-1)]
        if len(multiples) != np.ndim(x):
            return rearrange.run_tile(values, ins, out_op, out)
        for axis, m in enumerate(multiples):
            x = np.repeat(x, m, axis=axis)
        return x

    return with_kernels({Op.TILE: run})


@mutant("split-outputs-reversed", "OPS-1", "SPLIT gives its last part to its first output, and so on backwards",
        operations=(OperationType.SPLIT,))
def split_outputs_reversed():
    return with_kernels({Op.SPLIT: lambda values, ins, out_op, out: slicing.run_split(values, ins, out_op, out)[::-1]})


@mutant("topk-ascending", "OPS-1", "TOPK_V2 lists the k largest values smallest first (and their indices so)",
        operations=(OperationType.TOPK_V2,))
def topk_ascending():
    def run(values, ins, out_op, out):
        found, indices = slicing.run_topk_v2(values, ins, out_op, out)
        return np.ascontiguousarray(found[..., ::-1]), np.ascontiguousarray(indices[..., ::-1])

    return with_kernels({Op.TOPK_V2: run})
