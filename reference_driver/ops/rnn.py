"""RNN, SVDF, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN, as NeuralNetworks.h
(HAL 1.3) defines them; TENSOR_FLOAT32 and TENSOR_FLOAT16 throughout.

One RNN step is ``h = activation(x · weightsᵀ + h_prev · recurrent_weightsᵀ + bias)`` (plus
``aux · aux_weightsᵀ`` when an auxiliary input takes part), batch by batch; RNN returns the new
hidden state twice (state output 0, output 1).  SVDF keeps, per batch and filter, the last
``memory_size`` feature activations (``weights_feature · x``) in its state, oldest first: a step
writes the new activation into the last slot, each filter's output is its state row dotted with
its ``weights_time`` row, an output unit sums ``rank`` consecutive filters plus its (optional)
bias, and the state output is the state shifted one slot towards the oldest, the newest slot
zeroed — the layout NNAPI's CPU implementation and its golden examples use ([batch, memory_size
× num_filters]).  The sequence RNNs run the step over time, [max_time, batch, …] when time-major
and [batch, max_time, …] otherwise; their HAL 1.3 state outputs give the last hidden state.
BIDIRECTIONAL_SEQUENCE_RNN runs a forward and a backward (last time step first) RNN; its
auxiliary input either feeds both directions through their aux weights (cross-linking) or, when
the aux weights are given no value, replaces the input of the backward direction (parallel
linking); with merge_outputs the backward output is appended to the forward one on the last axis.

Floats compute in float64 and round once to the output type.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from harness.api.hal import OPTIONAL_INPUTS, Operand, OperandLifeTime, OperandType, OperationType, numpy_dtype

from ._numeric import FLOAT_TENSORS, KernelError, Refusal, activate, activation_code, first, scalar, type_in

INT32, BOOL = OperandType.INT32, OperandType.BOOL


# --------------------------------------------------------------------------- validation helpers


def omitted(operand: Operand) -> bool:
    """An optional operand the model gives no value."""
    return operand.lifetime == OperandLifeTime.NO_VALUE


def counts(ins: Sequence[Operand], outs: Sequence[Operand], inputs: int, outputs: Iterable[int], signature: str) -> Refusal | None:
    allowed = tuple(outputs)
    if len(ins) == inputs and len(outs) in allowed:
        return None
    return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: {signature})")


def tensors_like(ins: Sequence[Operand], roles: dict[int, str], optional: Iterable[int] = ()) -> Refusal | None:
    """Each input named in ``roles`` of input 0's type, given a value unless ``optional``."""
    kind = ins[0].type
    optional = frozenset(optional)
    for position, role in roles.items():
        operand = ins[position]
        if omitted(operand):
            if position not in optional:
                return Refusal(f"{role} given no value (NNAPI: required)", position)
            continue
        if operand.type != kind:
            return Refusal(f"{role} of type {operand.type.name} differs from input 0's {kind.name}", position)
    return None


def outputs_like(kind: OperandType, outs: Sequence[Operand]) -> Refusal | None:
    for position, operand in enumerate(outs):
        if operand.type != kind:
            return Refusal(f"type {operand.type.name} differs from input 0's {kind.name}", position, True)
    return None


def ranks(operands: Sequence[Operand], wanted: dict[int, int], *, output: bool = False,
          optional: Iterable[int] = ()) -> Refusal | None:
    """Each operand of ``wanted`` {position: rank} of that rank, where its rank is known and it has a value.

    An ``optional`` input is checked at execution: a request may give it no value whatever its dimensions.
    """
    skipped = frozenset(optional)
    for position, rank in wanted.items():
        if position >= len(operands) or position in skipped:
            continue
        operand = operands[position]
        if omitted(operand) or not operand.dimensions or len(operand.dimensions) == rank:
            continue
        return Refusal(f"rank {len(operand.dimensions)} (NNAPI: {rank})", position, output)
    return None


def scalars(ins: Sequence[Operand], wanted: dict[int, tuple[OperandType, str]]) -> Refusal | None:
    return first(type_in(ins, position, {kind}, role) for position, (kind, role) in wanted.items())


# --------------------------------------------------------------------------- run-time helpers


def given(value: np.ndarray) -> bool:
    """Whether an optional input has a value (an omitted one arrives empty)."""
    return np.size(value) > 0


def real(value: np.ndarray) -> np.ndarray:
    return np.asarray(value, np.float64)


def expect(array: np.ndarray, shape: Sequence[int], role: str, operation: str) -> None:
    if tuple(np.shape(array)) != tuple(shape):
        raise KernelError(f"{operation}: {role} of shape {tuple(np.shape(array))} (NNAPI: {tuple(shape)})")


def rank_of(array: np.ndarray, rank: int, role: str, operation: str) -> None:
    if np.ndim(array) != rank:
        raise KernelError(f"{operation}: {role} of rank {np.ndim(array)} (NNAPI: {rank})")


def flag(value: np.ndarray) -> bool:
    return bool(np.asarray(value).reshape(()))


def step(x: np.ndarray, weights: np.ndarray, recurrent: np.ndarray, bias: np.ndarray, hidden: np.ndarray,
         activation: int, aux: np.ndarray | None = None, aux_weights: np.ndarray | None = None) -> np.ndarray:
    """One RNN step on [batch, …] float64 arrays: the new hidden state."""
    total = x @ weights.T + hidden @ recurrent.T + bias
    if aux is not None and aux_weights is not None:
        total += aux @ aux_weights.T
    return activate(total, activation, in_place=True)


def cell_shapes(cell: Sequence[np.ndarray], batch: int, input_size: int, operation: str, prefix: str = "") -> int:
    """Check one RNN cell's operands (weights, recurrent weights, bias, hidden state) against each other; its
    number of units."""
    weights, recurrent, bias, hidden = cell
    for array, role in ((weights, "weights"), (recurrent, "recurrent weights"), (hidden, "hidden state")):
        rank_of(array, 2, prefix + role, operation)
    rank_of(bias, 1, prefix + "bias", operation)
    units = weights.shape[0]
    expect(weights, (units, input_size), prefix + "weights", operation)
    expect(recurrent, (units, units), prefix + "recurrent weights", operation)
    expect(bias, (units,), prefix + "bias", operation)
    expect(hidden, (batch, units), prefix + "hidden state", operation)
    return units


# --------------------------------------------------------------------------- RNN


RNN_ROLES = {1: "weights", 2: "recurrent weights", 3: "bias", 4: "hidden state"}


def validate_rnn(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return counts(ins, outs, 6, (2,), "input, weights, recurrent weights, bias, hidden state, activation; "
                  "hidden state and output") or first((
        type_in(ins, 0, FLOAT_TENSORS, "input"),
        tensors_like(ins, RNN_ROLES),
        scalars(ins, {5: (INT32, "fused activation")}),
        outputs_like(ins[0].type, outs),
        ranks(ins, {0: 2, 1: 2, 2: 2, 3: 1, 4: 2}),
        ranks(outs, {0: 2, 1: 2}, output=True),
    ))


def run_rnn(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
            out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    x, weights, recurrent, bias, hidden = (real(v) for v in values[:5])
    rank_of(x, 2, "input", "RNN")
    cell_shapes((weights, recurrent, bias, hidden), x.shape[0], x.shape[1], "RNN")
    state = step(x, weights, recurrent, bias, hidden, activation_code(values[5])).astype(numpy_dtype(ins[0].type))
    return state, state.copy()


# --------------------------------------------------------------------------- SVDF


def validate_svdf(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return counts(ins, outs, 7, (2,), "input, weights_feature, weights_time, bias (optional), state, rank, "
                  "activation; state and output") or first((
        type_in(ins, 0, FLOAT_TENSORS, "input"),
        tensors_like(ins, {1: "weights_feature", 2: "weights_time", 3: "bias", 4: "state"}, optional=(3,)),
        scalars(ins, {5: (INT32, "rank"), 6: (INT32, "fused activation")}),
        outputs_like(ins[0].type, outs),
        ranks(ins, {0: 2, 1: 2, 2: 2, 3: 1, 4: 2}, optional=(3,)),
        ranks(outs, {0: 2, 1: 2}, output=True),
    ))


def run_svdf(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
             out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    x, features, times, bias, state = (real(v) for v in values[:5])
    rank, activation = scalar(values[5]), activation_code(values[6])
    for array, role in ((x, "input"), (features, "weights_feature"), (times, "weights_time"), (state, "state")):
        rank_of(array, 2, role, "SVDF")
    batch, input_size = x.shape
    filters, memory = times.shape
    if rank < 1 or filters % rank:
        raise KernelError(f"SVDF: rank {rank} does not divide the {filters} filters (NNAPI: num_units × rank filters)")
    units = filters // rank
    expect(features, (filters, input_size), "weights_feature", "SVDF")
    expect(state, (batch, memory * filters), "state", "SVDF")
    has_bias = given(values[3])
    if has_bias:
        expect(bias, (units,), "bias", "SVDF")
    history = state.reshape(batch, filters, memory).copy()
    history[:, :, -1] = x @ features.T  # the newest activation replaces the slot the shift emptied
    filtered = np.einsum("bfm,fm->bf", history, times)
    result = filtered.reshape(batch, units, rank).sum(axis=2) + (bias if has_bias else 0.0)
    shifted = np.zeros_like(history)
    shifted[:, :, :-1] = history[:, :, 1:]
    dtype = numpy_dtype(ins[0].type)
    return (shifted.reshape(batch, memory * filters).astype(dtype),
            activate(result, activation, in_place=True).astype(dtype))


# --------------------------------------------------------------------------- UNIDIRECTIONAL_SEQUENCE_RNN


def validate_unidirectional_sequence_rnn(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    return counts(ins, outs, 7, (1, 2), "input, weights, recurrent weights, bias, hidden state, activation, "
                  "time-major flag; output and optionally the hidden state") or first((
        type_in(ins, 0, FLOAT_TENSORS, "input"),
        tensors_like(ins, RNN_ROLES),
        scalars(ins, {5: (INT32, "fused activation"), 6: (INT32, "time-major flag")}),
        outputs_like(ins[0].type, outs),
        ranks(ins, {0: 3, 1: 2, 2: 2, 3: 1, 4: 2}),
        ranks(outs, {0: 3, 1: 2}, output=True),
    ))


def run_unidirectional_sequence_rnn(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                                    out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    operation = "UNIDIRECTIONAL_SEQUENCE_RNN"
    x, weights, recurrent, bias, hidden = (real(v) for v in values[:5])
    activation, time_major = activation_code(values[5]), scalar(values[6]) != 0
    rank_of(x, 3, "input", operation)
    sequence = x if time_major else x.transpose(1, 0, 2)
    steps, batch, input_size = sequence.shape
    units = cell_shapes((weights, recurrent, bias, hidden), batch, input_size, operation)
    outputs = np.empty((steps, batch, units))
    for t in range(steps):
        hidden = outputs[t] = step(sequence[t], weights, recurrent, bias, hidden, activation)
    dtype = numpy_dtype(ins[0].type)
    result = (outputs if time_major else outputs.transpose(1, 0, 2)).astype(dtype)
    # the hidden-state output (HAL 1.3) comes last: a model without it leaves it out (OMITTABLE_OUTPUTS)
    return result, hidden.astype(dtype)


# --------------------------------------------------------------------------- BIDIRECTIONAL_SEQUENCE_RNN


BIDIRECTIONAL_ROLES = {1: "forward weights", 2: "forward recurrent weights", 3: "forward bias",
                       4: "forward hidden state", 5: "backward weights", 6: "backward recurrent weights",
                       7: "backward bias", 8: "backward hidden state", 9: "auxiliary input",
                       10: "forward auxiliary weights", 11: "backward auxiliary weights"}
#: the auxiliary input and its weights may be given no value.
BIDIRECTIONAL_OPTIONAL = OPTIONAL_INPUTS[OperationType.BIDIRECTIONAL_SEQUENCE_RNN]


def validate_bidirectional_sequence_rnn(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    refusal = counts(ins, outs, 15, (1, 2, 3, 4), "input, the forward and the backward cells' weights, "
                     "recurrent weights, bias and hidden state, auxiliary input and weights, activation, "
                     "time-major and merge-outputs flags; 1 to 4 outputs")
    if refusal is not None:
        return refusal
    # a model input may be given no value by the request: whether it is present is known only then
    known = all(ins[i].lifetime != OperandLifeTime.SUBGRAPH_INPUT for i in (9, 10, 11))
    aux, fw_aux, bw_aux = (not omitted(ins[i]) for i in (9, 10, 11))
    return first((
        type_in(ins, 0, FLOAT_TENSORS, "input"),
        tensors_like(ins, BIDIRECTIONAL_ROLES, optional=BIDIRECTIONAL_OPTIONAL),
        scalars(ins, {12: (INT32, "fused activation"), 13: (BOOL, "time-major flag"), 14: (BOOL, "merge-outputs flag")}),
        outputs_like(ins[0].type, outs),
        ranks(ins, {0: 3, 1: 2, 2: 2, 3: 1, 4: 2, 5: 2, 6: 2, 7: 1, 8: 2, 9: 3, 10: 2, 11: 2}, optional=BIDIRECTIONAL_OPTIONAL),
        Refusal("one auxiliary weights tensor given without the other (NNAPI: both or neither)", 10 if bw_aux else 11)
        if known and fw_aux != bw_aux else None,
        Refusal("auxiliary weights without an auxiliary input (NNAPI: the input too)", 9)
        if known and fw_aux and not aux else None,
    ))


def run_bidirectional_sequence_rnn(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                                   out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    operation = "BIDIRECTIONAL_SEQUENCE_RNN"
    x = real(values[0])
    fw = [real(v) for v in values[1:5]]
    bw = [real(v) for v in values[5:9]]
    has_aux, has_aux_weights = given(values[9]), given(values[10]) and given(values[11])
    if given(values[10]) != given(values[11]) or (has_aux_weights and not has_aux):
        raise KernelError(f"{operation}: auxiliary weights need each other and the auxiliary input")
    activation, time_major, merge = activation_code(values[12]), flag(values[13]), flag(values[14])
    rank_of(x, 3, "input", operation)
    sequence = x if time_major else x.transpose(1, 0, 2)
    steps, batch, input_size = sequence.shape
    aux_sequence = None
    if has_aux:
        aux = real(values[9])
        rank_of(aux, 3, "auxiliary input", operation)
        aux_sequence = aux if time_major else aux.transpose(1, 0, 2)
        if aux_sequence.shape[:2] != (steps, batch):
            raise KernelError(f"{operation}: auxiliary input of shape {aux.shape} for an input of shape {x.shape}")
    # parallel linking: the auxiliary input, not the input, feeds the backward direction
    bw_sequence = aux_sequence if has_aux and not has_aux_weights else sequence
    assert bw_sequence is not None
    fw_units = cell_shapes(fw, batch, input_size, operation, "forward ")
    bw_units = cell_shapes(bw, batch, bw_sequence.shape[2], operation, "backward ")
    fw_aux_weights = bw_aux_weights = None
    if has_aux_weights:
        assert aux_sequence is not None
        fw_aux_weights, bw_aux_weights = real(values[10]), real(values[11])
        expect(fw_aux_weights, (fw_units, aux_sequence.shape[2]), "forward auxiliary weights", operation)
        expect(bw_aux_weights, (bw_units, aux_sequence.shape[2]), "backward auxiliary weights", operation)
    cross = aux_sequence if has_aux_weights else None
    fw_out, bw_out = np.empty((steps, batch, fw_units)), np.empty((steps, batch, bw_units))
    hidden = fw[3]
    for t in range(steps):
        hidden = fw_out[t] = step(sequence[t], fw[0], fw[1], fw[2], hidden, activation,
                                  None if cross is None else cross[t], fw_aux_weights)
    fw_state, hidden = hidden, bw[3]
    for t in reversed(range(steps)):
        hidden = bw_out[t] = step(bw_sequence[t], bw[0], bw[1], bw[2], hidden, activation,
                                  None if cross is None else cross[t], bw_aux_weights)
    dtype = numpy_dtype(ins[0].type)
    layout = (lambda a: a) if time_major else (lambda a: a.transpose(1, 0, 2))
    sequences = [np.concatenate((fw_out, bw_out), axis=2)] if merge else [fw_out, bw_out]
    # the hidden states (HAL 1.3) come last: a model without them leaves out the last two (OMITTABLE_OUTPUTS)
    return (*(layout(s).astype(dtype) for s in sequences), fw_state.astype(dtype), hidden.astype(dtype))


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.RNN: (validate_rnn, run_rnn),
    OperationType.SVDF: (validate_svdf, run_svdf),
    OperationType.UNIDIRECTIONAL_SEQUENCE_RNN: (validate_unidirectional_sequence_rnn, run_unidirectional_sequence_rnn),
    OperationType.BIDIRECTIONAL_SEQUENCE_RNN: (validate_bidirectional_sequence_rnn, run_bidirectional_sequence_rnn),
}
#: operation -> how many trailing results of its kernel a model may leave without an output operand.
OMITTABLE_OUTPUTS = {
    OperationType.UNIDIRECTIONAL_SEQUENCE_RNN: 1,
    OperationType.BIDIRECTIONAL_SEQUENCE_RNN: 2,
}
