"""A correct driver whose recurrent operations compute in their tensors' own precision (CHOICE-7).

RNN, UNIDIRECTIONAL_SEQUENCE_RNN, SVDF, LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM compute as a vendor's
kernels commonly do: every product, sum, sigmoid and tanh of every time step in float32 (numpy's
BLAS summing in its own order), each step's state rounded to the tensors' type (float32, or
float16 for TENSOR_FLOAT16) before the next step reads it.  (Float16 arithmetic throughout is
no choice for a layer-normalized LSTM: its variance's epsilon of 1e-8 is zero in float16.)
Everything else is the reference's.  Its errors grow over the time steps through the state: what
the judge's bounds for the recurrent operations (`harness.judging.recurrent_terms`) must allow.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.api.hal import OperationType, numpy_dtype
from reference_driver import ReferenceDevice
from reference_driver.ops import KERNELS, Kernel, lstm, rnn
from reference_driver.ops._numeric import activation_code, scalar

Op = OperationType


def _in_float32(values, at: int) -> np.ndarray:
    return np.asarray(values[at], np.float32)


def _rnn(values, ins, out_op, out):
    checked = KERNELS[Op.RNN].run(values, ins, out_op, out)  # the reference's checks of shapes and codes
    x, weights, recurrent, bias, hidden = (_in_float32(values, k) for k in range(5))
    state = rnn.step(x, weights, recurrent, bias, hidden, activation_code(values[5])).astype(checked[0].dtype)
    return state, state.copy()


def _sequence_rnn(values, ins, out_op, out):
    KERNELS[Op.UNIDIRECTIONAL_SEQUENCE_RNN].run(values, ins, out_op, out)  # the reference's checks
    dtype = numpy_dtype(ins[0].type)
    x, weights, recurrent, bias, hidden = (_in_float32(values, k) for k in range(5))
    time_major = scalar(values[6]) != 0
    sequence = x if time_major else x.transpose(1, 0, 2)
    outputs = []
    for xt in sequence:
        step = rnn.step(xt, weights, recurrent, bias, hidden, activation_code(values[5]))
        hidden = step.astype(dtype).astype(np.float32)  # the state as the tensors' type holds it
        outputs.append(hidden)
    stacked = np.stack(outputs)
    return (stacked if time_major else stacked.transpose(1, 0, 2)).astype(dtype), hidden.astype(dtype)


def _svdf(values, ins, out_op, out):
    checked = KERNELS[Op.SVDF].run(values, ins, out_op, out)
    dtype = numpy_dtype(ins[0].type)
    x, features, times, bias, state = (_in_float32(values, k) for k in range(5))
    rank = scalar(values[5])
    batch = x.shape[0]
    filters, memory = times.shape
    history = state.reshape(batch, filters, memory).copy()
    history[:, :, -1] = (x @ features.T).astype(dtype)  # the state holds the tensors' type
    filtered = (history * times).sum(axis=2, dtype=np.float32)
    result = filtered.reshape(batch, filters // rank, rank).sum(axis=2, dtype=np.float32)
    if bias.size:
        result = result + bias
    shifted = np.zeros_like(history)
    shifted[:, :, :-1] = history[:, :, 1:]
    return (shifted.reshape(batch, memory * filters).astype(checked[0].dtype),
            rnn.activate(result, activation_code(values[6])).astype(checked[1].dtype))


def _cell_in(cell: lstm.Cell, dtype) -> lstm.Cell:
    """The cell with every array in ``dtype`` (so the cell's arithmetic is in it)."""
    def cast(part):
        if part is None:
            return None
        if isinstance(part, tuple):
            return tuple(cast(p) for p in part)
        return np.asarray(part, dtype)
    return dataclasses.replace(cell, **{f.name: cast(getattr(cell, f.name)) for f in dataclasses.fields(cell)
                                        if f.name not in ("activation", "cell_clip", "proj_clip")})


def _lstm(values, ins, out_op, out):
    checked = KERNELS[Op.LSTM].run(values, ins, out_op, out)
    dtype = numpy_dtype(ins[0].type)
    x = _in_float32(values, 0)
    cell = _cell_in(lstm._cell(values, 1, 23 if len(values) == 27 else None, None, 20, x.shape[1], None, "LSTM"),
                    np.float32)
    with np.errstate(over="ignore"):
        output, state = lstm.step(cell, x, _in_float32(values, 18), _in_float32(values, 19))
    result = output.astype(dtype)
    return checked[0], result, state.astype(dtype), result.copy()


def _sequence_lstm(values, ins, out_op, out):
    operation = Op.UNIDIRECTIONAL_SEQUENCE_LSTM
    KERNELS[operation].run(values, ins, out_op, out)
    dtype = numpy_dtype(ins[0].type)
    xs, major = lstm._time_major(_in_float32(values, 0), values[23])
    cell = _cell_in(lstm._cell(values, 1, 24, None, 20, xs.shape[2], None, operation.name), np.float32)
    h, c = _in_float32(values, 18), _in_float32(values, 19)
    outputs = []
    with np.errstate(over="ignore"):
        for xt in xs:
            h, c = (a.astype(dtype).astype(np.float32) for a in lstm.step(cell, xt, h, c))
            outputs.append(h)
    stacked = np.stack(outputs)
    return (stacked if major else stacked.transpose(1, 0, 2)).astype(dtype), h.astype(dtype), c.astype(dtype)


_RUNS = {Op.RNN: _rnn, Op.UNIDIRECTIONAL_SEQUENCE_RNN: _sequence_rnn, Op.SVDF: _svdf, Op.LSTM: _lstm,
         Op.UNIDIRECTIONAL_SEQUENCE_LSTM: _sequence_lstm}


def recurrent_in_own_precision() -> ReferenceDevice:
    """CHOICE-7: RNN, UNIDIRECTIONAL_SEQUENCE_RNN, SVDF, LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM compute
    every step in float32, each step's state rounded to the tensors' type (TENSOR_FLOAT16: float16)
    before the next reads it, where the reference computes in float64 and rounds once."""
    device = ReferenceDevice()
    for op, run in _RUNS.items():
        device.kernels[op] = Kernel(KERNELS[op].validate, run)
    return device
