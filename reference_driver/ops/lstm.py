"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM, as NeuralNetworks.h (HAL 1.3)
defines them, on one shared cell.

One step of the cell, for a batch of inputs x, the previous output h and cell state c (W_x*, W_h*
the input and recurrent weights, p_* the peephole weights, b_* the biases, g the activation the
operation names, sigma the logistic function)::

    i = sigma(W_xi x + W_hi h + p_i * c + b_i)       (CIFG, no input gate weights: i = 1 - f)
    f = sigma(W_xf x + W_hf h + p_f * c + b_f)
    c' = clip(f * c + i * g(W_xc x + W_hc h + b_c), cell_clip)
    o = sigma(W_xo x + W_ho h + p_o * c' + b_o)
    h' = clip(W_proj (o * g(c')) + b_proj, proj_clip)  (no projection: h' = o * g(c'))

Peephole terms appear only when the cell-to-gate weights are given, a clip of 0 clips nothing.
With layer normalization (HAL 1.2: the output gate's layer norm weights given) each gate's sum
before its bias is standardised over the units, (z - mean) / sqrt(variance + 1e-8), scaled by the
gate's layer norm weights, and only then is the bias added.  The sequence operations run the cell
over time (time-major [max_time, batch, input] or batch-major); the bidirectional one runs a second
cell from the last step to the first, with an optional auxiliary input: given with auxiliary
weights it feeds both cells through those weights (cross-linking); given without them it replaces
the backward cell's input (parallel linking).

Types: TENSOR_FLOAT32 and (HAL 1.2) TENSOR_FLOAT16, every tensor of the input's type, the clips
FLOAT32 or FLOAT16 to match.  Floats compute in float64 and round once to the output type.  An
omitted optional operand (a NO_VALUE operand or an input given no value) reaches the kernel as an
empty array; whether the omissions agree (CIFG, peephole, projection, layer normalization, auxiliary
input) and every shape are checked when values are known.  LSTM's scratch buffer output, whose
content NNAPI leaves undefined, is written as zeros.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.api.hal import OPTIONAL_INPUTS, Operand, OperandLifeTime, OperandType, OperationType, numpy_dtype

from ._numeric import KernelError, Refusal, first, scalar, type_in

F32, F16 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16
INT32, BOOL = OperandType.INT32, OperandType.BOOL
#: the epsilon a layer-normalized gate's variance is taken with (NNAPI's CPU implementation).
LAYER_NORM_EPSILON = 1e-8

#: one direction's weights: 17 operands in NNAPI's order, each with its rank.
WEIGHT_ROLES: tuple[tuple[str, int], ...] = (
    ("input-to-input weights", 2), ("input-to-forget weights", 2), ("input-to-cell weights", 2),
    ("input-to-output weights", 2), ("recurrent-to-input weights", 2), ("recurrent-to-forget weights", 2),
    ("recurrent-to-cell weights", 2), ("recurrent-to-output weights", 2), ("cell-to-input weights", 1),
    ("cell-to-forget weights", 1), ("cell-to-output weights", 1), ("input gate bias", 1), ("forget gate bias", 1),
    ("cell bias", 1), ("output gate bias", 1), ("projection weights", 2), ("projection bias", 1),
)
#: the offsets, among the 17, of the weights NNAPI lets a model omit (LSTM's are inputs 1 to 17).
OPTIONAL_WEIGHTS = frozenset(at - 1 for at in OPTIONAL_INPUTS[OperationType.LSTM] if 1 <= at <= 17)
LAYER_NORM_ROLES = ("input layer norm weights", "forget layer norm weights", "cell layer norm weights",
                    "output layer norm weights")
AUX_ROLES = ("aux input-to-input weights", "aux input-to-forget weights", "aux input-to-cell weights",
             "aux input-to-output weights")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


#: NeuralNetworks.h: the activation codes the LSTMs accept (None, Relu, Relu6, Tanh, Sigmoid).
ACTIVATIONS: dict[int, Callable[[np.ndarray], np.ndarray]] = {
    0: lambda x: x,
    1: lambda x: np.maximum(x, 0.0),
    3: lambda x: np.clip(x, 0.0, 6.0),
    4: np.tanh,
    6: _sigmoid,
}

Array = np.ndarray
Gates = tuple["Array | None", "Array | None", "Array | None", "Array | None"]


@dataclass(frozen=True)
class Cell:
    """One direction's parameters as float64 arrays (None: omitted), gates in the order i, f, c, o."""

    to_gates: Gates
    recurrent: Gates
    peephole: tuple[Array | None, Array | None, Array | None]  # input, forget, output
    bias: Gates
    projection: Array | None
    projection_bias: Array | None
    layer_norm: Gates | None
    aux: Gates | None
    activation: Callable[[np.ndarray], np.ndarray]
    cell_clip: float
    proj_clip: float

    @property
    def cifg(self) -> bool:
        return self.to_gates[0] is None

    @property
    def units(self) -> int:
        return int(self.to_gates[1].shape[0])  # type: ignore[union-attr]

    @property
    def output_size(self) -> int:
        return int(self.recurrent[1].shape[1])  # type: ignore[union-attr]


def _gate(cell: Cell, k: int, x: Array, h: Array, aux: Array | None, peep: Array | None, c: Array) -> Array:
    """Gate ``k``'s value before its activation."""
    z = x @ cell.to_gates[k].T + h @ cell.recurrent[k].T  # type: ignore[union-attr]
    if aux is not None and cell.aux is not None:
        z = z + aux @ cell.aux[k].T  # type: ignore[union-attr]
    if peep is not None:
        z = z + c * peep
    if cell.layer_norm is not None:
        centred = z - z.mean(axis=-1, keepdims=True)
        z = centred / np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + LAYER_NORM_EPSILON)
        z = z * cell.layer_norm[k]
    return z + cell.bias[k]  # type: ignore[operator]


def step(cell: Cell, x: Array, h: Array, c: Array, aux: Array | None = None) -> tuple[Array, Array]:
    """One time step on a batch: the new output (= output state) and the new cell state."""
    with np.errstate(over="ignore", invalid="ignore"):
        forget = _sigmoid(_gate(cell, 1, x, h, aux, cell.peephole[1], c))
        entry = 1.0 - forget if cell.cifg else _sigmoid(_gate(cell, 0, x, h, aux, cell.peephole[0], c))
        state = forget * c + entry * cell.activation(_gate(cell, 2, x, h, aux, None, c))
        if cell.cell_clip > 0:
            state = np.clip(state, -cell.cell_clip, cell.cell_clip)
        out_gate = _sigmoid(_gate(cell, 3, x, h, aux, cell.peephole[2], state))
        output = out_gate * cell.activation(state)
        if cell.projection is not None:
            output = output @ cell.projection.T
            if cell.projection_bias is not None:
                output = output + cell.projection_bias
            if cell.proj_clip > 0:
                output = np.clip(output, -cell.proj_clip, cell.proj_clip)
    return output, state


def sequence(cell: Cell, xs: Array, h: Array, c: Array, aux: Array | None = None, *,
             reverse: bool = False) -> tuple[Array, Array, Array]:
    """The cell over time-major ``xs`` [max_time, batch, input]: outputs [max_time, batch, output]
    (each at its own step, also when run backwards) and the final output and cell states."""
    outputs = np.empty((xs.shape[0], xs.shape[1], cell.output_size))
    steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    for t in steps:
        h, c = step(cell, xs[t], h, c, None if aux is None else aux[t])
        outputs[t] = h
    return outputs, h, c


# --------------------------------------------------------------------------- validation


def _omissible(operand: Operand) -> bool:
    """An operand a model leaves without a value, or declares with no elements."""
    return operand.lifetime == OperandLifeTime.NO_VALUE or 0 in operand.dimensions


def _tensor(ins: Sequence[Operand], at: int, rank: int, what: str, optional: bool) -> Refusal | None:
    """A tensor operand of the input's type and, when it is to hold a value, of rank ``rank``."""
    operand = ins[at]
    if optional and _omissible(operand):
        return None
    return first((
        type_in(ins, at, {ins[0].type}, what),
        Refusal(f"{what} of rank {len(operand.dimensions)} (NNAPI: {rank})", at)
        if operand.dimensions and len(operand.dimensions) != rank else None,
    ))


def _weights(ins: Sequence[Operand], at: int, prefix: str = "") -> Refusal | None:
    return first(_tensor(ins, at + k, rank, prefix + what, k in OPTIONAL_WEIGHTS)
                 for k, (what, rank) in enumerate(WEIGHT_ROLES))


def _group(ins: Sequence[Operand], at: int, roles: Sequence[str], rank: int, prefix: str = "") -> Refusal | None:
    return first(_tensor(ins, at + k, rank, prefix + what, True) for k, what in enumerate(roles))


def _scalars(ins: Sequence[Operand], activation: int, clips: int, flags: Sequence[tuple[int, str]] = ()) -> Refusal | None:
    clip = OperandType.FLOAT16 if ins[0].type == F16 else OperandType.FLOAT32
    return first((
        type_in(ins, activation, {INT32}, "activation"),
        type_in(ins, clips, {clip}, "cell clip"),
        type_in(ins, clips + 1, {clip}, "projection clip"),
        *(type_in(ins, at, {BOOL}, what) for at, what in flags),
    ))


def _outputs(ins: Sequence[Operand], outs: Sequence[Operand], ranks: Sequence[int]) -> Refusal | None:
    return first(
        Refusal(f"type {out.type.name} differs from the input's", i, True) if out.type != ins[0].type else
        Refusal(f"rank {len(out.dimensions)} (NNAPI: {rank})", i, True) if out.dimensions and len(out.dimensions) != rank
        else None
        for i, (out, rank) in enumerate(zip(outs, ranks)))


def _input(ins: Sequence[Operand], rank: int) -> Refusal | None:
    return _tensor(ins, 0, rank, "input", False) or type_in(ins, 0, {F32, F16}, "input")


def validate_lstm(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) not in (23, 27) or len(outs) != 4:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 23 inputs, or 27 with layer "
                       "normalization; 4 outputs)")
    return first((
        _input(ins, 2), _weights(ins, 1),
        _tensor(ins, 18, 2, "output state in", False), _tensor(ins, 19, 2, "cell state in", False),
        _scalars(ins, 20, 21),
        _group(ins, 23, LAYER_NORM_ROLES, 1) if len(ins) == 27 else None,
        _outputs(ins, outs, (2, 2, 2, 2)),
    ))


def validate_unidirectional_sequence_lstm(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 28 or len(outs) not in (1, 3):
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 28 inputs; the output, and "
                       "optionally the output and cell states)")
    return first((
        _input(ins, 3), _weights(ins, 1),
        _tensor(ins, 18, 2, "output state in", False), _tensor(ins, 19, 2, "cell state in", False),
        _scalars(ins, 20, 21, ((23, "time major"),)),
        _group(ins, 24, LAYER_NORM_ROLES, 1),
        _outputs(ins, outs, (3, 2, 2)),
    ))


def validate_bidirectional_sequence_lstm(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) != 61 or len(outs) not in (1, 2, 5, 6):
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI: 61 inputs; the forward and backward "
                       "outputs, or one merged output, and optionally the four states)")
    sequences = 1 if len(outs) in (1, 5) else 2  # one merged output, or the forward and backward ones
    return first((
        _input(ins, 3), _weights(ins, 1, "forward "), _weights(ins, 18, "backward "),
        *(_tensor(ins, 35 + k, 2, what, False) for k, what in enumerate((
            "forward output state in", "forward cell state in", "backward output state in", "backward cell state in"))),
        _tensor(ins, 39, 3, "aux input", True),
        _group(ins, 40, AUX_ROLES, 2, "forward "), _group(ins, 44, AUX_ROLES, 2, "backward "),
        _scalars(ins, 48, 49, ((51, "merge outputs"), (52, "time major"))),
        _group(ins, 53, LAYER_NORM_ROLES, 1, "forward "), _group(ins, 57, LAYER_NORM_ROLES, 1, "backward "),
        _outputs(ins, outs, (3,) * sequences + (2, 2, 2, 2)),
    ))


# --------------------------------------------------------------------------- the kernels


def _value(array: np.ndarray) -> Array | None:
    return np.asarray(array, np.float64) if np.size(array) else None


def _shape(array: Array | None, shape: tuple[int, ...], what: str, operation: str) -> None:
    if array is not None and array.shape != shape:
        raise KernelError(f"{operation}: {what} of shape {array.shape} (NNAPI: {shape})")


def _agree(present: Sequence[bool], what: str, operation: str) -> None:
    if any(present) and not all(present):
        raise KernelError(f"{operation}: {what} given in part (NNAPI: all or none)")


def _float(value: np.ndarray, what: str, operation: str) -> float:
    number = float(np.asarray(value, np.float64).reshape(()))
    if not number >= 0:
        raise KernelError(f"{operation}: {what} {number} (NNAPI: at least 0)")
    return number


def _cell(values: Sequence[np.ndarray], at: int, layer_norm_at: int | None, aux_at: int | None, scalars_at: int,
          input_size: int, aux_size: int | None, operation: str, prefix: str = "") -> Cell:
    """One direction's cell from its operands, every omission and shape checked."""
    w = [_value(values[at + k]) for k in range(len(WEIGHT_ROLES))]
    for k, (what, _) in enumerate(WEIGHT_ROLES):
        if w[k] is None and k not in OPTIONAL_WEIGHTS:
            raise KernelError(f"{operation}: {prefix}{what} omitted (NNAPI: required)")
    units, output_size = w[1].shape[0] if w[1].ndim == 2 else -1, w[5].shape[1] if w[5].ndim == 2 else -1  # type: ignore[union-attr]
    names = [prefix + what for what, _ in WEIGHT_ROLES]
    for k in range(4):
        _shape(w[k], (units, input_size), names[k], operation)
        _shape(w[4 + k], (units, output_size), names[4 + k], operation)
    for k in range(8, 15):
        _shape(w[k], (units,), names[k], operation)
    _shape(w[15], (output_size, units), names[15], operation)
    _shape(w[16], (output_size,), names[16], operation)
    cifg = w[0] is None
    _agree((w[0] is not None, w[4] is not None), f"{prefix}input gate weights", operation)
    if cifg and w[11] is not None:
        raise KernelError(f"{operation}: {names[11]} given without input gate weights (NNAPI: none with CIFG)")
    if not cifg and w[11] is None:
        raise KernelError(f"{operation}: {names[11]} omitted (NNAPI: required without CIFG)")
    # peepholes come all or none; a CIFG cell has no input gate, so its cell-to-input weights may be left out
    peepholes = w[9] is not None or w[10] is not None
    _agree((w[8] is not None or (cifg and peepholes), w[9] is not None, w[10] is not None),
           f"{prefix}peephole weights", operation)
    if w[16] is not None and w[15] is None:
        raise KernelError(f"{operation}: {names[16]} given without projection weights")
    if w[15] is None and output_size != units:
        raise KernelError(f"{operation}: output size {output_size} differs from {units} units without projection")
    layer_norm = None
    if layer_norm_at is not None and np.size(values[layer_norm_at + 3]):
        norm = [_value(values[layer_norm_at + k]) for k in range(4)]
        for k in range(1, 4):
            if norm[k] is None:
                raise KernelError(f"{operation}: {prefix}{LAYER_NORM_ROLES[k]} omitted (NNAPI: required with layer "
                                  "normalization)")
        if (norm[0] is None) != cifg:
            raise KernelError(f"{operation}: {prefix}{LAYER_NORM_ROLES[0]} {'given' if cifg else 'omitted'} "
                              f"(NNAPI: {'none with' if cifg else 'required without'} CIFG)")
        for k in range(4):
            _shape(norm[k], (units,), prefix + LAYER_NORM_ROLES[k], operation)
        layer_norm = (norm[0], norm[1], norm[2], norm[3])
    elif layer_norm_at is not None and any(np.size(values[layer_norm_at + k]) for k in range(3)):
        raise KernelError(f"{operation}: {prefix}layer norm weights given without the output gate's")
    aux = None
    if aux_at is not None:
        a = [_value(values[aux_at + k]) for k in range(4)]
        if aux_size is None:
            if any(v is not None for v in a):
                raise KernelError(f"{operation}: {prefix}aux weights given without an aux input")
        else:
            for k in range(1, 4):
                if a[k] is None:
                    raise KernelError(f"{operation}: {prefix}{AUX_ROLES[k]} omitted (NNAPI: required with aux input)")
            if (a[0] is None) != cifg:
                raise KernelError(f"{operation}: {prefix}{AUX_ROLES[0]} {'given' if cifg else 'omitted'} "
                                  f"(NNAPI: {'none with' if cifg else 'required without'} CIFG)")
            for k in range(4):
                _shape(a[k], (units, aux_size), prefix + AUX_ROLES[k], operation)
            aux = (a[0], a[1], a[2], a[3])
    code = scalar(values[scalars_at])
    if code not in ACTIVATIONS:
        raise KernelError(f"{operation}: activation {code} (NNAPI: 0, 1, 3, 4 or 6)")
    return Cell((w[0], w[1], w[2], w[3]), (w[4], w[5], w[6], w[7]), (None if cifg else w[8], w[9], w[10]),
                (w[11], w[12], w[13], w[14]), w[15], w[16], layer_norm, aux, ACTIVATIONS[code],
                _float(values[scalars_at + 1], "cell clip", operation),
                _float(values[scalars_at + 2], "projection clip", operation))


def _state(values: Sequence[np.ndarray], at: int, shape: tuple[int, int], what: str, operation: str) -> Array:
    state = _value(values[at])
    if state is None:
        raise KernelError(f"{operation}: {what} omitted (NNAPI: required)")
    _shape(state, shape, what, operation)
    return state


def _rank(x: np.ndarray, rank: int, operation: str) -> Array:
    if x.ndim != rank:
        raise KernelError(f"{operation}: input of rank {x.ndim} (NNAPI: {rank})")
    return np.asarray(x, np.float64)


def run_lstm(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
             out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    x = _rank(values[0], 2, "LSTM")
    cell = _cell(values, 1, 23 if len(values) == 27 else None, None, 20, x.shape[1], None, "LSTM")
    batch = x.shape[0]
    h = _state(values, 18, (batch, cell.output_size), "output state in", "LSTM")
    c = _state(values, 19, (batch, cell.units), "cell state in", "LSTM")
    output, state = step(cell, x, h, c)
    dtype = numpy_dtype(ins[0].type)
    scratch = np.zeros((batch, cell.units * (3 if cell.cifg else 4)), dtype)
    result = output.astype(dtype)
    return scratch, result, state.astype(dtype), result.copy()


def _time_major(x: Array, flag: np.ndarray) -> tuple[Array, bool]:
    major = bool(np.asarray(flag).reshape(()))
    return (x if major else x.transpose(1, 0, 2)), major


def run_unidirectional_sequence_lstm(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                                     out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    operation = "UNIDIRECTIONAL_SEQUENCE_LSTM"
    xs, major = _time_major(_rank(values[0], 3, operation), values[23])
    cell = _cell(values, 1, 24, None, 20, xs.shape[2], None, operation)
    batch = xs.shape[1]
    h = _state(values, 18, (batch, cell.output_size), "output state in", operation)
    c = _state(values, 19, (batch, cell.units), "cell state in", operation)
    outputs, h, c = sequence(cell, xs, h, c)
    dtype = numpy_dtype(ins[0].type)
    # the states are returned whether or not the operation has them (OMITTABLE_OUTPUTS)
    return (outputs if major else outputs.transpose(1, 0, 2)).astype(dtype), h.astype(dtype), c.astype(dtype)


def run_bidirectional_sequence_lstm(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                                    out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    operation = "BIDIRECTIONAL_SEQUENCE_LSTM"
    xs, major = _time_major(_rank(values[0], 3, operation), values[52])
    aux_xs: Array | None = None
    if np.size(values[39]):
        aux_xs, _ = _time_major(_rank(values[39], 3, operation), values[52])
        if aux_xs.shape[:2] != xs.shape[:2]:
            raise KernelError(f"{operation}: aux input of {aux_xs.shape[:2]} steps and batches, the input's "
                              f"{xs.shape[:2]}")
    # aux weights decide the linking: with them the aux input feeds both cells; without, it is the
    # backward cell's input
    crossed = aux_xs is not None and bool(np.size(values[41]))
    bw_xs = aux_xs if aux_xs is not None and not crossed else xs
    aux_size = aux_xs.shape[2] if crossed and aux_xs is not None else None
    forward = _cell(values, 1, 53, 40, 48, xs.shape[2], aux_size, operation, "forward ")
    backward = _cell(values, 18, 57, 44, 48, bw_xs.shape[2], aux_size, operation, "backward ")
    batch = xs.shape[1]
    states = []
    for at, cell, name in ((35, forward, "forward"), (37, backward, "backward")):
        states.append(_state(values, at, (batch, cell.output_size), f"{name} output state in", operation))
        states.append(_state(values, at + 1, (batch, cell.units), f"{name} cell state in", operation))
    aux_in = aux_xs if crossed else None
    fw_out, fw_h, fw_c = sequence(forward, xs, states[0], states[1], aux_in)
    bw_out, bw_h, bw_c = sequence(backward, bw_xs, states[2], states[3], aux_in, reverse=True)
    dtype = numpy_dtype(ins[0].type)
    merge = bool(np.asarray(values[51]).reshape(()))
    laid = [o if major else o.transpose(1, 0, 2) for o in (fw_out, bw_out)]
    outputs = [np.concatenate(laid, axis=2)] if merge else laid
    return tuple(a.astype(dtype) for a in (*outputs, fw_h, fw_c, bw_h, bw_c))


#: operation -> how many trailing results of its kernel (HAL 1.3's state outputs, which the kernels
#: always return) a model may leave without an output operand.
OMITTABLE_OUTPUTS = {OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM: 2, OperationType.BIDIRECTIONAL_SEQUENCE_LSTM: 4}

#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.LSTM: (validate_lstm, run_lstm),
    OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM: (validate_unidirectional_sequence_lstm, run_unidirectional_sequence_lstm),
    OperationType.BIDIRECTIONAL_SEQUENCE_LSTM: (validate_bidirectional_sequence_lstm, run_bidirectional_sequence_lstm),
}
