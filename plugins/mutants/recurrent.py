"""Seeded bugs of the recurrent operations (RNN, SVDF, the sequence RNNs, the LSTMs and the
quantized LSTMs): each computes one NNAPI rule of a cell or of its run over time wrongly
(OPS-1: the operation's values), and one keeps a cell's state in the driver between executions
(STATE-1)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence

import numpy as np

from harness.api.hal import Operand, OperationType, numpy_dtype
from reference_driver.ops import KERNELS, lstm, quantized_lstm, rnn
from reference_driver.ops._numeric import activation_code, scalar

from ._registry import mutant, with_kernels

Op = OperationType


@mutant("rnn-recurrent-weights-untransposed", "OPS-1",
        "RNN multiplies the previous hidden state by the recurrent weights as stored, [units, units], not by their "
        "transpose: each unit reads the column of the others' weights meant for them",
        operations=(Op.RNN,))
def rnn_recurrent_weights_untransposed():
    def run(values, ins, out_op, out):
        x, weights, recurrent, bias, hidden = (rnn.real(v) for v in values[:5])
        total = x @ weights.T + hidden @ recurrent + bias
        state = rnn.activate(total, activation_code(values[5]), in_place=True).astype(numpy_dtype(ins[0].type))
        return state, state.copy()

    return with_kernels({Op.RNN: run})


@mutant("sequence-rnn-state-not-carried", "OPS-1",
        "UNIDIRECTIONAL_SEQUENCE_RNN starts every time step from the hidden state given as input, not from the "
        "previous step's, as if each step were a separate RNN",
        operations=(Op.UNIDIRECTIONAL_SEQUENCE_RNN,))
def sequence_rnn_state_not_carried():
    def run(values, ins, out_op, out):
        x, weights, recurrent, bias, hidden = (rnn.real(v) for v in values[:5])
        time_major = scalar(values[6]) != 0
        sequence = x if time_major else x.transpose(1, 0, 2)
        outputs = np.stack([rnn.step(xt, weights, recurrent, bias, hidden, activation_code(values[5]))
                            for xt in sequence])
        dtype = numpy_dtype(ins[0].type)
        return (outputs if time_major else outputs.transpose(1, 0, 2)).astype(dtype), outputs[-1].astype(dtype)

    return with_kernels({Op.UNIDIRECTIONAL_SEQUENCE_RNN: run})


@mutant("sequence-rnn-time-major-ignored", "OPS-1",
        "UNIDIRECTIONAL_SEQUENCE_RNN reads its input as time-major whatever the flag says: a batch-major input's "
        "batches are run as time steps and its time steps as batches",
        operations=(Op.UNIDIRECTIONAL_SEQUENCE_RNN,))
def sequence_rnn_time_major_ignored():
    reference = KERNELS[Op.UNIDIRECTIONAL_SEQUENCE_RNN].run

    def run(values, ins, out_op, out):
        return reference([*values[:6], np.ones_like(values[6])], ins, out_op, out)

    return with_kernels({Op.UNIDIRECTIONAL_SEQUENCE_RNN: run})


@mutant("bidirectional-rnn-backward-not-reversed", "OPS-1",
        "BIDIRECTIONAL_SEQUENCE_RNN runs its backward cell from the first time step to the last, like the forward one",
        operations=(Op.BIDIRECTIONAL_SEQUENCE_RNN,))
def bidirectional_rnn_backward_not_reversed():
    reference = KERNELS[Op.BIDIRECTIONAL_SEQUENCE_RNN].run

    def run(values, ins, out_op, out):
        time_major = rnn.flag(values[13])
        axis = 0 if time_major else 1

        def flipped(array: np.ndarray) -> np.ndarray:
            return np.flip(array, axis) if np.size(array) else array

        # the backward cell over the reversed sequence, its outputs reversed back: forward order throughout
        backward_only = [flipped(values[0]), *values[1:9], flipped(values[9]), *values[10:]]
        results = reference(backward_only, ins, out_op, out)
        forward = reference(values, ins, out_op, out)
        merge = rnn.flag(values[14])
        if merge:
            units = values[1].shape[0]
            fw, bw = forward[0][..., :units], flipped(results[0][..., units:])
            return (np.concatenate((fw, bw), axis=2), forward[1], results[2])
        return (forward[0], flipped(results[1]), forward[2], results[3])

    return with_kernels({Op.BIDIRECTIONAL_SEQUENCE_RNN: run})


@mutant("svdf-rank-summed-across-units", "OPS-1",
        "SVDF sums each output unit's rank filters as if stored rank-major ([rank, units]), not as the rank "
        "consecutive filters of each unit",
        operations=(Op.SVDF,))
def svdf_rank_summed_across_units():
    def run(values, ins, out_op, out):
        x, features, times, bias, state = (rnn.real(v) for v in values[:5])
        rank = scalar(values[5])
        batch = x.shape[0]
        filters, memory = times.shape
        history = state.reshape(batch, filters, memory).copy()
        history[:, :, -1] = x @ features.T
        filtered = np.einsum("bfm,fm->bf", history, times)
        result = filtered.reshape(batch, rank, filters // rank).sum(axis=1) + (bias if rnn.given(values[3]) else 0.0)
        shifted = np.zeros_like(history)
        shifted[:, :, :-1] = history[:, :, 1:]
        dtype = numpy_dtype(ins[0].type)
        return (shifted.reshape(batch, memory * filters).astype(dtype),
                rnn.activate(result, activation_code(values[6]), in_place=True).astype(dtype))

    return with_kernels({Op.SVDF: run})


# --------------------------------------------------------------------------- the LSTM cell

#: The LSTMs whose cell the cell's seeded bugs change (the bidirectional one has a bug of its own).
_LSTMS = (Op.LSTM, Op.UNIDIRECTIONAL_SEQUENCE_LSTM)


def _with_cell(change: Callable[[lstm.Cell], lstm.Cell]) -> dict[OperationType, Callable]:
    """LSTM's and UNIDIRECTIONAL_SEQUENCE_LSTM's kernels, the reference's but for the cell, which
    ``change`` makes of the one the reference builds from the operands."""

    def run_lstm(values, ins, out_op, out):
        results = KERNELS[Op.LSTM].run(values, ins, out_op, out)  # the reference's checks and its scratch buffer
        x = np.asarray(values[0], np.float64)
        cell = change(lstm._cell(values, 1, 23 if len(values) == 27 else None, None, 20, x.shape[1], None, "LSTM"))
        output, state = lstm.step(cell, x, np.asarray(values[18], np.float64), np.asarray(values[19], np.float64))
        dtype = numpy_dtype(ins[0].type)
        return results[0], output.astype(dtype), state.astype(dtype), output.astype(dtype)

    def run_sequence(values, ins, out_op, out):
        operation = Op.UNIDIRECTIONAL_SEQUENCE_LSTM
        KERNELS[operation].run(values, ins, out_op, out)  # the reference's checks
        xs, major = lstm._time_major(np.asarray(values[0], np.float64), values[23])
        cell = change(lstm._cell(values, 1, 24, None, 20, xs.shape[2], None, operation.name))
        outputs, h, c = lstm.sequence(cell, xs, np.asarray(values[18], np.float64), np.asarray(values[19], np.float64))
        dtype = numpy_dtype(ins[0].type)
        return (outputs if major else outputs.transpose(1, 0, 2)).astype(dtype), h.astype(dtype), c.astype(dtype)

    return {Op.LSTM: run_lstm, Op.UNIDIRECTIONAL_SEQUENCE_LSTM: run_sequence}


@mutant("lstm-forget-gate-takes-input-bias", "OPS-1",
        "The LSTM cell adds the input gate's bias to the forget gate (a copy-paste of the bias index); with CIFG, "
        "where there is no input gate bias, the forget gate's own",
        operations=_LSTMS)
def lstm_forget_gate_takes_input_bias():
    def change(cell: lstm.Cell) -> lstm.Cell:
        if cell.bias[0] is None:
            return cell
        return dataclasses.replace(cell, bias=(cell.bias[0], cell.bias[0], cell.bias[2], cell.bias[3]))

    return with_kernels(_with_cell(change))


@mutant("lstm-cifg-input-gate-equals-forget", "OPS-1",
        "A CIFG LSTM (no input gate weights) takes the forget gate's value as its input gate, not 1 - forget",
        operations=_LSTMS)
def lstm_cifg_input_gate_equals_forget():
    def change(cell: lstm.Cell) -> lstm.Cell:
        if not cell.cifg:
            return cell
        # the input gate computed from the forget gate's weights: sigma(z_f), where NNAPI has 1 - sigma(z_f)
        return dataclasses.replace(cell, to_gates=(cell.to_gates[1], *cell.to_gates[1:]),
                                   recurrent=(cell.recurrent[1], *cell.recurrent[1:]),
                                   peephole=(cell.peephole[1], *cell.peephole[1:]),
                                   bias=(cell.bias[1], *cell.bias[1:]),
                                   layer_norm=None if cell.layer_norm is None else
                                   (cell.layer_norm[1], *cell.layer_norm[1:]),
                                   aux=None if cell.aux is None else (cell.aux[1], *cell.aux[1:]))

    return with_kernels(_with_cell(change))


@mutant("lstm-peephole-dropped", "OPS-1",
        "The LSTM cell ignores its peephole (cell-to-gate) weights when they are given",
        operations=_LSTMS)
def lstm_peephole_dropped():
    return with_kernels(_with_cell(lambda cell: dataclasses.replace(cell, peephole=(None, None, None))))


@mutant("lstm-projection-clip-ignored", "OPS-1",
        "The LSTM cell does not clip its projected output to the projection clip",
        operations=_LSTMS)
def lstm_projection_clip_ignored():
    return with_kernels(_with_cell(lambda cell: dataclasses.replace(cell, proj_clip=0.0)))


@mutant("lstm-output-gate-takes-cell-layer-norm", "OPS-1",
        "A layer-normalized LSTM scales its output gate's normalized sum by the cell gate's layer norm weights",
        operations=_LSTMS)
def lstm_output_gate_takes_cell_layer_norm():
    def change(cell: lstm.Cell) -> lstm.Cell:
        if cell.layer_norm is None:
            return cell
        norms = cell.layer_norm
        return dataclasses.replace(cell, layer_norm=(norms[0], norms[1], norms[2], norms[2]))

    return with_kernels(_with_cell(change))


@mutant("sequence-lstm-time-major-ignored", "OPS-1",
        "UNIDIRECTIONAL_SEQUENCE_LSTM reads its input as time-major whatever the flag says",
        operations=(Op.UNIDIRECTIONAL_SEQUENCE_LSTM,))
def sequence_lstm_time_major_ignored():
    reference = KERNELS[Op.UNIDIRECTIONAL_SEQUENCE_LSTM].run

    def run(values, ins, out_op, out):
        return reference([*values[:23], np.ones_like(values[23]), *values[24:]], ins, out_op, out)

    return with_kernels({Op.UNIDIRECTIONAL_SEQUENCE_LSTM: run})


@mutant("bidirectional-lstm-merged-backward-first", "OPS-1",
        "BIDIRECTIONAL_SEQUENCE_LSTM with merge_outputs puts the backward outputs before the forward ones on the "
        "last axis",
        operations=(Op.BIDIRECTIONAL_SEQUENCE_LSTM,))
def bidirectional_lstm_merged_backward_first():
    reference = KERNELS[Op.BIDIRECTIONAL_SEQUENCE_LSTM].run

    def run(values, ins, out_op, out):
        results = reference(values, ins, out_op, out)
        if not rnn.flag(values[51]):
            return results
        forward_size = values[6].shape[1]  # the forward recurrent-to-forget weights: [units, output size]
        merged = results[0]
        return (np.concatenate((merged[..., forward_size:], merged[..., :forward_size]), axis=2), *results[1:])

    return with_kernels({Op.BIDIRECTIONAL_SEQUENCE_LSTM: run})


# --------------------------------------------------------------------------- STATE-1

#: Each operation's state inputs (the positions a step-by-step app feeds its last state outputs back
#: into) and, among its kernel's results, the state outputs that fill them.
_STATES: dict[OperationType, tuple[tuple[int, ...], tuple[int, ...]]] = {
    Op.RNN: ((4,), (0,)),
    Op.UNIDIRECTIONAL_SEQUENCE_RNN: ((4,), (1,)),
    Op.LSTM: ((18, 19), (1, 2)),
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: ((18, 19), (1, 2)),
    Op.QUANTIZED_16BIT_LSTM: ((13, 14), (0, 1)),
    Op.QUANTIZED_LSTM: ((18, 19), (0, 1)),
}


@mutant("recurrent-state-kept-between-executions", "STATE-1",
        "RNN, UNIDIRECTIONAL_SEQUENCE_RNN, LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and the quantized LSTMs keep their last "
        "state outputs in the driver and, from the second execution of an operation on, start from them instead of "
        "the request's state inputs, as a streaming driver that assumes an app feeds each state back",
        operations=tuple(_STATES))
def recurrent_state_kept_between_executions():
    kept: dict[tuple[OperationType, Operand, tuple[Operand, ...]], tuple[np.ndarray, ...]] = {}
    lock = threading.Lock()

    def keeping(op: OperationType) -> Callable:
        reference = KERNELS[op].run
        inputs_at, results_at = _STATES[op]

        def run(values: Sequence[np.ndarray], ins, out_op, out):
            key = (op, out_op, tuple(ins))
            with lock:
                previous = kept.get(key)
            fed = list(values)
            if previous is not None:
                for at, state in zip(inputs_at, previous):
                    fed[at] = state
            results = reference(fed, ins, out_op, out)
            with lock:
                kept[key] = tuple(np.array(results[k]) for k in results_at)
            return results

        return run

    return with_kernels({op: keeping(op) for op in _STATES})


# --------------------------------------------------------------------------- QUANTIZED_16BIT_LSTM


@mutant("quantized-16bit-lstm-update-not-rescaled", "OPS-1",
        "QUANTIZED_16BIT_LSTM adds the input gate times the cell candidate, a Q0.15 product, to the cell state "
        "without rescaling it to the state's Q4.11: a fixed-point shift forgotten, the update 16 times too large "
        "(then saturated)",
        operations=(Op.QUANTIZED_16BIT_LSTM,))
def quantized_16bit_lstm_update_not_rescaled():
    def run(values, ins, out_op, out):
        KERNELS[Op.QUANTIZED_16BIT_LSTM].run(values, ins, out_op, out)  # the reference's checks of shapes
        x = np.asarray(values[0], np.int64)
        prev_out, prev_state = np.asarray(values[14], np.int64), np.asarray(values[13], np.int64)
        multiplier, shift = quantized_lstm.quantize_multiplier(4096 * float(np.float32(ins[9].scale)))
        side_by_side = np.concatenate((x, prev_out), axis=1) - 128
        gates = []
        for g in range(4):
            w_in, w_rec, bias = (np.asarray(values[i], np.int64) for i in (1 + g, 5 + g, 9 + g))
            weights = np.concatenate((w_rec, w_in), axis=1) - ins[1].zero_point
            accumulator = quantized_lstm.wrap(bias + side_by_side @ weights.T, 32)
            gates.append(quantized_lstm.saturate(quantized_lstm.multiply_by_quantized(accumulator, multiplier, shift), 16))
        input_gate, forget_gate, output_gate = (quantized_lstm.logistic(gates[i], 3) for i in (0, 1, 3))
        modulation = quantized_lstm.tanh(gates[2], 3)
        # the bug: no multiply_by_pot(..., -4) taking the Q(0) product to the state's Q(4)
        state = quantized_lstm.saturate(quantized_lstm.high_mul(input_gate, modulation, 16)
                                        + quantized_lstm.high_mul(forget_gate, prev_state, 16), 16)
        activation = quantized_lstm.high_mul(output_gate,
                                             quantized_lstm.tanh(quantized_lstm.multiply_by_pot(state, 1, 16), 3), 16)
        output = np.clip(quantized_lstm.divide_by_pot(activation, 8), -128, 127) + 128
        return state.astype(np.int16), output.astype(np.uint8)

    return with_kernels({Op.QUANTIZED_16BIT_LSTM: run})


# --------------------------------------------------------------------------- QUANTIZED_LSTM


@mutant("quantized-lstm-output-gate-takes-cell-layer-norm", "OPS-1",
        "A layer-normalized QUANTIZED_LSTM scales its output gate's normalized sum by the cell gate's layer norm "
        "weights (a copy-pasted input index)",
        operations=(Op.QUANTIZED_LSTM,))
def quantized_lstm_output_gate_takes_cell_layer_norm():
    reference = KERNELS[Op.QUANTIZED_LSTM].run

    def run(values, ins, out_op, out):
        swapped_values, swapped_ins = list(values), list(ins)
        swapped_values[23], swapped_ins[23] = values[22], ins[22]  # the cell gate's layer norm weights
        return reference(swapped_values, swapped_ins, out_op, out)

    return with_kernels({Op.QUANTIZED_LSTM: run})
