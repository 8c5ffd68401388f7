"""FILL and RANK, as NeuralNetworks.h (HAL 1.3) defines them: the operations between a tensor's
shape and values.

FILL makes a tensor of the shape a 1-D TENSOR_INT32 gives, every element the value of a scalar of
the output's element type (FLOAT32 for TENSOR_FLOAT32, FLOAT16 for TENSOR_FLOAT16, INT32 for
TENSOR_INT32).  RANK gives the number of dimensions of a tensor of any type as an INT32 scalar.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api.hal import Operand, OperandType, OperationType, numpy_dtype

from ._numeric import KernelError, Refusal, first, type_in

I32 = OperandType.TENSOR_INT32
#: FILL's output types and the scalar type of each one's value.
FILL_VALUE_TYPES = {OperandType.TENSOR_FLOAT32: OperandType.FLOAT32, OperandType.TENSOR_FLOAT16: OperandType.FLOAT16,
                    I32: OperandType.INT32}
#: NNAPI's tensor types RANK takes (every tensor type).
RANK_TYPES = frozenset(t for t in OperandType if t.name.startswith("TENSOR_"))


def validate_fill(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 2 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: dims and value; 1 output)")
    out = outs[0]
    if out.type not in FILL_VALUE_TYPES:
        names = ", ".join(sorted(t.name for t in FILL_VALUE_TYPES))
        return Refusal(f"type {out.type.name} (NNAPI allows {names})", 0, True)
    return first((
        type_in(ins, 0, {I32}, "dims"),
        Refusal(f"dims of rank {len(ins[0].dimensions)} (NNAPI: 1)", 0) if len(ins[0].dimensions) > 1 else None,
        type_in(ins, 1, {FILL_VALUE_TYPES[out.type]}, "value"),
    ))


def run_fill(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    dims = tuple(int(d) for d in np.asarray(values[0]).reshape(-1))
    if any(d < 0 for d in dims):
        raise KernelError(f"FILL: dims {list(dims)} (NNAPI: none negative)")
    return np.full(dims, np.asarray(values[1]).reshape(()), dtype=numpy_dtype(out_op.type))


def validate_rank(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 1 or len(outs) != 1:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 1 input, 1 output)")
    return first((
        type_in(ins, 0, RANK_TYPES, "input"),
        Refusal(f"type {outs[0].type.name} (NNAPI: INT32)", 0, True) if outs[0].type != OperandType.INT32 else None,
    ))


def run_rank(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand, out: np.ndarray | None) -> np.ndarray:
    return np.asarray(np.ndim(values[0]), np.int32)


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.FILL: (validate_fill, run_fill),
    OperationType.RANK: (validate_rank, run_rank),
}
