"""A correct driver whose activations and element-wise functions compute in float32 (CHOICE-7).

It computes them as a vendor's kernels commonly do, by formulas of float32 library functions, each
step rounded: LOGISTIC as 1 / (1 + exp(-x)), TANH as 1 - 2 / (exp(2x) + 1), ELU as
alpha * (exp(x) - 1), RSQRT as 1 / sqrt(x), POW as exp2(e * log2(b)), HARD_SWISH step by step;
TENSOR_FLOAT16 computes so too and rounds to float16 at the end.  Everything else is the
reference's.  Its results are some ulps from the exact value, absolutely rather than relatively
where a formula subtracts (tanh and ELU near 0): what the judge's bounds for transcendental
functions must allow.
"""

from __future__ import annotations

import numpy as np

from harness.api.hal import OperationType
from reference_driver import ReferenceDevice
from reference_driver.ops import KERNELS, Kernel
from reference_driver.ops._numeric import FLOAT_TENSORS

Op = OperationType
_ONE = np.float32(1)


def _elu(x, alpha):
    return np.where(x < 0, np.float32(alpha) * (np.exp(np.minimum(x, 0)) - _ONE), x)


def _softmax(op, x, values):
    """exp(beta * (x - max)) summed in float32 (LOG_SOFTMAX: beta * (x - max) - log of the sum)."""
    axis = int(np.asarray(values[2]).reshape(())) if len(values) > 2 else -1
    scaled = np.float32(np.asarray(values[1]).reshape(())) * (x - np.max(x, axis=axis, keepdims=True))
    total = np.sum(np.exp(scaled), axis=axis, keepdims=True, dtype=np.float32)
    return scaled - np.log(total) if op == Op.LOG_SOFTMAX else np.exp(scaled) / total


_FORMULAS = {
    Op.LOGISTIC: lambda x: _ONE / (_ONE + np.exp(-x)),
    Op.TANH: lambda x: _ONE - np.float32(2) / (np.exp(np.float32(2) * x) + _ONE),
    Op.EXP: np.exp,
    Op.LOG: np.log,
    Op.SIN: np.sin,
    Op.SQRT: np.sqrt,
    Op.RSQRT: lambda x: _ONE / np.sqrt(x),
    Op.HARD_SWISH: lambda x: x * np.clip(x + np.float32(3), 0, 6).astype(np.float32) / np.float32(6),
}


def _in_float32(op: OperationType, kernel: Kernel) -> Kernel:
    def run(values, ins, out_op, out):
        checked = kernel.run(values, ins, out_op, None)  # the reference's errors, shapes and quantized results
        if ins[0].type not in FLOAT_TENSORS:
            return checked
        x = np.asarray(values[0], np.float32)
        with np.errstate(all="ignore"):
            if op == Op.ELU:
                result = _elu(x, float(np.asarray(values[1]).reshape(())))
            elif op in (Op.SOFTMAX, Op.LOG_SOFTMAX):
                result = _softmax(op, x, values)
            elif op == Op.POW:
                result = np.exp2(np.asarray(values[1], np.float32) * np.log2(x))
            else:
                result = _FORMULAS[op](x)
        return np.asarray(result, np.float32).astype(checked.dtype).reshape(checked.shape)
    return Kernel(kernel.validate, run)


def functions_in_float32() -> ReferenceDevice:
    """CHOICE-7: LOGISTIC, TANH, ELU, HARD_SWISH, EXP, LOG, SIN, SQRT, RSQRT, POW, SOFTMAX and LOG_SOFTMAX on float tensors
    computed by float32 formulas (1 - 2 / (exp(2x) + 1) for tanh, exp2(e * log2(b)) for pow), each
    step rounded, TENSOR_FLOAT16 rounded at the end: a few ulps off, absolutely where a formula
    subtracts."""
    device = ReferenceDevice()
    for op in (*_FORMULAS, Op.ELU, Op.POW, Op.SOFTMAX, Op.LOG_SOFTMAX):
        device.kernels[op] = _in_float32(op, KERNELS[op])
    return device
