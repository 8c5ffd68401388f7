"""CHANNEL_SHUFFLE, as NeuralNetworks.h (HAL 1.3) defines it.

The axis's channels, read as ``num_groups`` groups of equal size, are interleaved: output channel
``k * num_groups + g`` is input channel ``g * group_size + k`` (a reshape to [num_groups,
group_size], a transpose, and back).  The output has the input's shape, type and quantization;
the axis is counted from either end; tensors have rank up to 4.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType

from ._numeric import (FLOAT_TENSORS, QUANT_TENSORS, KernelError, Refusal, check_rank, first, quantization_kept,
                       rank_at_most, scalar, type_in)
from .pointwise import same_types

INT32 = OperandType.INT32


def validate_channel_shuffle(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 3 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: input, num_groups and axis; 1 output)")
    return first((
        type_in(ins, 0, FLOAT_TENSORS | QUANT_TENSORS, "input"),
        same_types(ins[:1], outs),
        type_in(ins, 1, {INT32}, "num_groups"),
        type_in(ins, 2, {INT32}, "axis"),
        rank_at_most(ins[:1]), rank_at_most(outs, output=True),
        quantization_kept(ins[0], outs[0]) if ins[0].type in QUANT_TENSORS else None,
    ))


def run_channel_shuffle(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                        out: np.ndarray | None) -> np.ndarray:
    check_rank(values[:1], "CHANNEL_SHUFFLE")
    x = values[0]
    groups, axis = scalar(values[1]), scalar(values[2])
    if not -x.ndim <= axis < x.ndim:
        raise KernelError(f"CHANNEL_SHUFFLE: axis {axis} out of range for rank {x.ndim}")
    channels = x.shape[axis]
    if groups <= 0 or channels % groups:
        raise KernelError(f"CHANNEL_SHUFFLE: {channels} channels do not split into {groups} groups of equal size")
    moved = np.moveaxis(x, axis, -1)
    shuffled = moved.reshape(*moved.shape[:-1], groups, channels // groups).swapaxes(-1, -2).reshape(moved.shape)
    return np.moveaxis(shuffled, -1, axis)


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {OperationType.CHANNEL_SHUFFLE: (validate_channel_shuffle, run_channel_shuffle)}
