"""Models of the recurrent operations: RNN, SVDF, UNIDIRECTIONAL_SEQUENCE_RNN,
BIDIRECTIONAL_SEQUENCE_RNN, LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM,
QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM.

One family per operation (`FAMILIES`), on TENSOR_FLOAT32 or TENSOR_FLOAT16 as the driver declares;
the quantized LSTMs on the types NeuralNetworks.h fixes for them, at scales chosen below.
Sequences have 2 to 5 time steps, time-major or batch-major, batches 1 to 3, 1 to 4 units; each
optional part NNAPI has is drawn given or omitted (NO_VALUE): SVDF's bias, the bidirectional RNN's
auxiliary input (cross- or parallel-linked), the LSTMs' CIFG, peepholes, projection (with its bias
or not, clipped or not), cell clip and layer normalization, the sequence operations' state outputs.

Values stay where a wrong rule shows: inputs in [-2, 2), weights in [-1/2, 1/2) and biases in
[-1, 1), so that each gate's sum is a few units at most and its sigmoid or tanh far from flat;
the clips, when given, sit inside the values' range so that they cut some.  The state inputs are
always request inputs (`STATE_INPUTS`): an app feeds each execution's state outputs into the next
(STATE-1), and `stateful_models` gives each example the input values of its following steps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import strategies as st

from harness.api.hal import Capabilities, OperandType, OperationType

from .models import ModelCase, _Case, _Choices, _narrowed_to, _operation_and_type_of, _start
from .values import FLOAT_TYPES, arrays, usable_types

Op = OperationType
F16 = OperandType.TENSOR_FLOAT16
INT32, BOOL = OperandType.INT32, OperandType.BOOL
QU8, QSYMM16 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT16_SYMM
QS8, QSYMM8, TI32 = OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_INT32
FAMILIES: dict[str, tuple[OperationType, ...]] = {
    "rnn": (Op.RNN,),
    "svdf": (Op.SVDF,),
    "unidirectional_sequence_rnn": (Op.UNIDIRECTIONAL_SEQUENCE_RNN,),
    "bidirectional_sequence_rnn": (Op.BIDIRECTIONAL_SEQUENCE_RNN,),
    "lstm": (Op.LSTM,),
    "unidirectional_sequence_lstm": (Op.UNIDIRECTIONAL_SEQUENCE_LSTM,),
    "bidirectional_sequence_lstm": (Op.BIDIRECTIONAL_SEQUENCE_LSTM,),
    "quantized_16bit_lstm": (Op.QUANTIZED_16BIT_LSTM,),
    "quantized_lstm": (Op.QUANTIZED_LSTM,),
}
#: Each operation's state inputs and the outputs (model output positions, when present) an app feeds
#: back into them, in order: RNN's hidden state, an LSTM's output and cell states.
STATE_INPUTS: dict[OperationType, tuple[tuple[int, int], ...]] = {
    Op.RNN: ((4, 0),),
    Op.SVDF: ((4, 0),),
    Op.UNIDIRECTIONAL_SEQUENCE_RNN: ((4, 1),),
    Op.LSTM: ((18, 1), (19, 2)),
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: ((18, 1), (19, 2)),
    Op.QUANTIZED_16BIT_LSTM: ((13, 0), (14, 1)),
    Op.QUANTIZED_LSTM: ((18, 0), (19, 1)),
}
#: Fused activations of the RNNs and SVDF (NONE, RELU, RELU1, RELU6) and the LSTMs' (NONE, RELU,
#: RELU6, TANH, SIGMOID): TANH most of the time, the activation LSTMs are used with.
_RNN_ACTIVATIONS = (0, 1, 2, 3)
_LSTM_ACTIVATIONS = (4, 4, 0, 1, 3, 6)
_HOWS = ("input", "copy", "reference")


def _companions(op: OperationType) -> frozenset[OperandType]:
    """The scalar types a model of ``op`` needs besides its tensors: INT32 (activations, SVDF's rank,
    the unidirectional RNN's time-major flag), BOOL (the other sequence operations' flags), and
    FLOAT32 or FLOAT16 clips of the LSTMs (`_clip_type`, checked with the tensor type)."""
    if op in (Op.BIDIRECTIONAL_SEQUENCE_RNN, Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.BIDIRECTIONAL_SEQUENCE_LSTM):
        return frozenset({INT32, BOOL})
    return frozenset({INT32})


def _clip_type(type: OperandType) -> OperandType:
    return OperandType.FLOAT16 if type == F16 else OperandType.FLOAT32


_LSTMS = (Op.LSTM, Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.BIDIRECTIONAL_SEQUENCE_LSTM)


#: QUANTIZED_16BIT_LSTM's types: uint8 input, weights and output, int32 biases, int16 cell state.
_SIXTEEN_BIT_TYPES = frozenset({QU8, TI32, QSYMM16})
#: QUANTIZED_LSTM's: int8 input, states and output, int8 symmetric weights, int16 peepholes, cell state
#: and layer norm weights, int32 biases, and its FLOAT32 and INT32 scalars (clips, scales, zeroPoint).
_QLSTM_TYPES = frozenset({QS8, QSYMM8, QSYMM16, TI32, OperandType.FLOAT32, INT32})


@functools.lru_cache(maxsize=1024)
def operation_types(caps: Capabilities, op: OperationType) -> tuple[OperandType, ...]:
    """The data types a model of ``op`` can have for this driver: NNAPI's, declared, with companions declared."""
    declared = caps.types_of(op)
    if op == Op.QUANTIZED_16BIT_LSTM:
        return (QU8,) if _SIXTEEN_BIT_TYPES <= declared else ()
    if op == Op.QUANTIZED_LSTM:
        return (QS8,) if _QLSTM_TYPES <= declared else ()
    if not _companions(op) <= declared:
        return ()
    return tuple(t for t in usable_types(FLOAT_TYPES, declared) if op not in _LSTMS or _clip_type(t) in declared)


def operations(caps: Capabilities, family: str) -> tuple[OperationType, ...]:
    """The operations of ``family`` a model can be built of for this driver (declared, on a type it declares)."""
    return tuple(op for op in FAMILIES[family] if op in caps.operations and operation_types(caps, op))


class _Recurrent(_Case):
    """A model being built, with the recurrent operations' kinds of values."""

    def __init__(self, c: _Choices, draw, type: OperandType) -> None:
        super().__init__(c)
        self.draw, self.type = draw, type
        # one way for all the weights of a model: a choice each would pass the model's choice bytes
        self.how = c.choice(_HOWS, "weights given as")

    def value(self, shape: tuple[int, ...], label: str, shift: int) -> np.ndarray:
        """Values of [-8, 8) scaled by 2**-shift (exactly: a power of two)."""
        drawn = self.draw(arrays(self.type, shape), label=label)
        return (drawn * np.asarray(2.0 ** -shift, drawn.dtype)).astype(drawn.dtype)

    def weight(self, shape: tuple[int, ...], label: str, shift: int = 4) -> int:
        """A weight or bias tensor, as the model's weights are given (a request input fully specified)."""
        value = self.value(shape, label, shift)
        if self.how == "input":
            self.values.append(value)
            return self.b.input(self.type, shape)
        return self.b.constant(self.type, value, by_reference=self.how == "reference")

    def data(self, shape: tuple[int, ...], label: str, shift: int = 2) -> int:
        """A request input of data (a sequence, a state), declared as the model's choices say."""
        return self.operand(self.type, self.value(shape, label, shift), label=label)

    def absent(self, shape: tuple[int, ...] = ()) -> int:
        return self.b.omitted(self.type, shape)

    def flag(self, value: bool) -> int:
        return self.b.constant(BOOL, value)


def _type(c: _Choices, caps: Capabilities, family: str) -> tuple[OperationType, OperandType]:
    return _operation_and_type_of(c, operations(caps, family), functools.partial(operation_types, caps))


def _sequence_shape(time_major: bool, steps: int, batch: int, size: int) -> tuple[int, int, int]:
    return (steps, batch, size) if time_major else (batch, steps, size)


@st.composite
def rnn_models(draw, caps: Capabilities) -> ModelCase:
    """RNN: one step of batch 1 to 3, 1 to 4 inputs and units, any fused activation."""
    c = _start(draw)
    op, type = _type(c, caps, "rnn")
    batch, size, units = c.integer(1, 3, "batch"), c.integer(1, 4, "input size"), c.integer(1, 4, "units")
    activation = c.choice(_RNN_ACTIVATIONS, "activation")
    case = _Recurrent(c, draw, type)
    x = case.data((batch, size), "input")
    weights = [case.weight((units, size), "weights"), case.weight((units, units), "recurrent weights"),
               case.weight((units,), "bias", 3)]
    hidden = case.data((batch, units), "hidden state in")
    out = (batch, units)
    outputs = [(type, c.declared(out, "hidden state out"), 0.0, 0), (type, c.declared(out, "output"), 0.0, 0)]
    case.b.operation_outputs(op, [x, *weights, hidden, case.b.scalar(activation)], outputs)
    return case.done([out, out], f"RNN {type.name} activation {activation}")


@st.composite
def svdf_models(draw, caps: Capabilities) -> ModelCase:
    """SVDF: rank 1 to 3, 1 to 3 units, memory of 1 to 4 steps, its bias given or omitted."""
    c = _start(draw)
    op, type = _type(c, caps, "svdf")
    batch, size = c.integer(1, 3, "batch"), c.integer(1, 4, "input size")
    units, rank, memory = c.integer(1, 3, "units"), c.integer(1, 3, "rank"), c.integer(1, 4, "memory size")
    activation = c.choice(_RNN_ACTIVATIONS, "activation")
    filters = units * rank
    case = _Recurrent(c, draw, type)
    x = case.data((batch, size), "input")
    features = case.weight((filters, size), "weights_feature")
    times = case.weight((filters, memory), "weights_time")
    bias = case.weight((units,), "bias", 3) if c.boolean("bias given") else case.absent((units,))
    state = case.data((batch, memory * filters), "state in")
    state_shape, out = (batch, memory * filters), (batch, units)
    outputs = [(type, c.declared(state_shape, "state out"), 0.0, 0), (type, c.declared(out, "output"), 0.0, 0)]
    case.b.operation_outputs(op, [x, features, times, bias, state, case.b.scalar(rank), case.b.scalar(activation)],
                             outputs)
    return case.done([state_shape, out], f"SVDF {type.name} rank {rank} memory {memory}")


@st.composite
def unidirectional_sequence_rnn_models(draw, caps: Capabilities, state_outputs: bool | None = None) -> ModelCase:
    """UNIDIRECTIONAL_SEQUENCE_RNN over 2 to 5 steps, time-major or not, its state output present or not."""
    c = _start(draw)
    op, type = _type(c, caps, "unidirectional_sequence_rnn")
    steps, batch = c.integer(2, 5, "time steps"), c.integer(1, 3, "batch")
    size, units = c.integer(1, 4, "input size"), c.integer(1, 4, "units")
    time_major, activation = c.boolean("time major"), c.choice(_RNN_ACTIVATIONS, "activation")
    with_state = c.boolean("state output") if state_outputs is None else state_outputs
    case = _Recurrent(c, draw, type)
    x = case.data(_sequence_shape(time_major, steps, batch, size), "input")
    weights = [case.weight((units, size), "weights"), case.weight((units, units), "recurrent weights"),
               case.weight((units,), "bias", 3)]
    hidden = case.data((batch, units), "hidden state in")
    out, state = _sequence_shape(time_major, steps, batch, units), (batch, units)
    shapes: list[tuple[int, ...]] = [out, state] if with_state else [out]
    outputs = [(type, c.declared(shape, f"output {k}"), 0.0, 0) for k, shape in enumerate(shapes)]
    case.b.operation_outputs(op, [x, *weights, hidden, case.b.scalar(activation), case.b.scalar(int(time_major))],
                             outputs)
    return case.done(shapes, f"UNIDIRECTIONAL_SEQUENCE_RNN {type.name} {'time' if time_major else 'batch'}-major "
                             f"{steps} steps")


#: The bidirectional RNN's auxiliary input: none, feeding both cells through their aux weights
#: (cross-linking), or the backward cell's input in place of the input (parallel linking).
_AUX_MODES = ("none", "cross", "parallel")


@st.composite
def bidirectional_sequence_rnn_models(draw, caps: Capabilities) -> ModelCase:
    """BIDIRECTIONAL_SEQUENCE_RNN over 2 to 5 steps: each linking of its auxiliary input, the outputs
    merged or not, the state outputs present or not, the two cells of different sizes."""
    c = _start(draw)
    op, type = _type(c, caps, "bidirectional_sequence_rnn")
    steps, batch, size = c.integer(2, 5, "time steps"), c.integer(1, 3, "batch"), c.integer(1, 4, "input size")
    fw_units, bw_units = c.integer(1, 4, "forward units"), c.integer(1, 4, "backward units")
    aux, aux_size = c.choice(_AUX_MODES, "auxiliary input"), c.integer(1, 3, "auxiliary input size")
    time_major, merge = c.boolean("time major"), c.boolean("merge outputs")
    with_states, activation = c.boolean("state outputs"), c.choice(_RNN_ACTIVATIONS, "activation")
    case = _Recurrent(c, draw, type)
    x = case.data(_sequence_shape(time_major, steps, batch, size), "input")
    bw_size = aux_size if aux == "parallel" else size

    def cell(units: int, inputs: int, name: str) -> list[int]:
        return [case.weight((units, inputs), f"{name} weights"), case.weight((units, units), f"{name} recurrent weights"),
                case.weight((units,), f"{name} bias", 3), case.data((batch, units), f"{name} hidden state in")]

    forward, backward = cell(fw_units, size, "forward"), cell(bw_units, bw_size, "backward")
    aux_shape = _sequence_shape(time_major, steps, batch, aux_size)
    aux_input = case.data(aux_shape, "auxiliary input") if aux != "none" else case.absent()
    if aux == "cross":
        aux_weights = [case.weight((fw_units, aux_size), "forward aux weights"),
                       case.weight((bw_units, aux_size), "backward aux weights")]
    else:
        aux_weights = [case.absent(), case.absent()]
    fw_out, bw_out = (_sequence_shape(time_major, steps, batch, units) for units in (fw_units, bw_units))
    merged = _sequence_shape(time_major, steps, batch, fw_units + bw_units)
    shapes: list[tuple[int, ...]] = [merged] if merge else [fw_out, bw_out]
    if with_states:
        shapes += [(batch, fw_units), (batch, bw_units)]
    outputs = [(type, c.declared(shape, f"output {k}"), 0.0, 0) for k, shape in enumerate(shapes)]
    inputs = [x, *forward, *backward, aux_input, *aux_weights, case.b.scalar(activation), case.flag(time_major),
              case.flag(merge)]
    case.b.operation_outputs(op, inputs, outputs)
    return case.done(shapes, f"BIDIRECTIONAL_SEQUENCE_RNN {type.name} aux {aux}{' merged' if merge else ''}")


@dataclass(frozen=True)
class _LstmForm:
    """Which optional parts an LSTM cell has."""

    cifg: bool
    peephole: bool
    projection: bool
    projection_bias: bool
    layer_norm: bool
    cell_clip: float
    proj_clip: float

    def describe(self) -> str:
        parts = [name for name, present in (("CIFG", self.cifg), ("peephole", self.peephole),
                                            ("projection", self.projection), ("layer norm", self.layer_norm),
                                            ("cell clip", self.cell_clip > 0), ("projection clip", self.proj_clip > 0))
                 if present]
        return " + ".join(parts) or "plain"


def _lstm_form(c: _Choices, layer_norm: bool) -> _LstmForm:
    projection = c.boolean("projection")
    return _LstmForm(cifg=c.boolean("CIFG"), peephole=c.boolean("peephole"), projection=projection,
                     projection_bias=projection and c.boolean("projection bias"),
                     layer_norm=layer_norm and c.boolean("layer normalization"),
                     cell_clip=c.choice((0.0, 0.0, 0.5, 1.0), "cell clip"),
                     proj_clip=c.choice((0.0, 0.0, 0.25, 0.5), "projection clip") if projection else 0.0)


def _lstm_weights(case: _Recurrent, form: _LstmForm, units: int, inputs: int, outputs: int, name: str = "") -> list[int]:
    """One cell's 17 weights in NNAPI's order, the omitted ones NO_VALUE operands."""
    gates = ("input", "forget", "cell", "output")
    given = lambda gate: not (form.cifg and gate == "input")  # noqa: E731  (CIFG: no input gate)
    to_gates = [case.weight((units, inputs), f"{name}input-to-{g} weights") if given(g) else case.absent()
                for g in gates]
    recurrent = [case.weight((units, outputs), f"{name}recurrent-to-{g} weights") if given(g) else case.absent()
                 for g in gates]
    peepholes = [case.weight((units,), f"{name}cell-to-{g} weights", 3) if form.peephole and given(g)
                 else case.absent() for g in ("input", "forget", "output")]
    biases = [case.weight((units,), f"{name}{g} gate bias", 3) if given(g) else case.absent() for g in gates]
    projection = [case.weight((outputs, units), f"{name}projection weights", 3) if form.projection else case.absent(),
                  case.weight((outputs,), f"{name}projection bias", 3) if form.projection_bias else case.absent()]
    return [*to_gates, *recurrent, *peepholes, *biases, *projection]


def _layer_norm_weights(case: _Recurrent, form: _LstmForm, units: int, name: str = "") -> list[int]:
    """The four layer norm weights (around 1, so that the normalized sums stay of a unit's size)."""
    if not form.layer_norm:
        return [case.absent() for _ in range(4)]
    return [case.absent() if form.cifg and k == 0 else case.weight((units,), f"{name}{g} layer norm weights", 2)
            for k, g in enumerate(("input", "forget", "cell", "output"))]


def _clips(case: _Recurrent, form: _LstmForm) -> list[int]:
    clip = _clip_type(case.type)
    return [case.b.constant(clip, form.cell_clip), case.b.constant(clip, form.proj_clip)]


def _lstm_sizes(c: _Choices, form: _LstmForm) -> tuple[int, int, int, int]:
    # one unit's layer-normalized sum is its mean: zero whatever the layer norm weights, which it hides
    least = 2 if form.layer_norm else 1
    batch, size, units = c.integer(1, 3, "batch"), c.integer(1, 4, "input size"), c.integer(least, 4, "units")
    return batch, size, units, c.integer(1, 4, "output size") if form.projection else units


@st.composite
def lstm_models(draw, caps: Capabilities) -> ModelCase:
    """LSTM: one step, each optional part given or omitted, with or without layer normalization
    (27 inputs or 23); its scratch buffer's content is the driver's (NeuralNetworks.h)."""
    c = _start(draw)
    op, type = _type(c, caps, "lstm")
    normalized = c.boolean("27 inputs")
    form = _lstm_form(c, normalized)
    batch, size, units, output_size = _lstm_sizes(c, form)
    activation = c.choice(_LSTM_ACTIVATIONS, "activation")
    case = _Recurrent(c, draw, type)
    x = case.data((batch, size), "input")
    weights = _lstm_weights(case, form, units, size, output_size)
    states = [case.data((batch, output_size), "output state in"), case.data((batch, units), "cell state in")]
    inputs = [x, *weights, *states, case.b.scalar(activation), *_clips(case, form)]
    if normalized:
        inputs += _layer_norm_weights(case, form, units)
    shapes = [(batch, units * (3 if form.cifg else 4)), (batch, output_size), (batch, units), (batch, output_size)]
    outputs = [(type, c.declared(shape, f"output {k}"), 0.0, 0) for k, shape in enumerate(shapes)]
    case.b.operation_outputs(op, inputs, outputs)
    return case.done(shapes, f"LSTM {type.name} {form.describe()} activation {activation}")


@st.composite
def unidirectional_sequence_lstm_models(draw, caps: Capabilities, state_outputs: bool | None = None) -> ModelCase:
    """UNIDIRECTIONAL_SEQUENCE_LSTM over 2 to 5 steps, time-major or not, each optional part given
    or omitted, its state outputs present or not."""
    c = _start(draw)
    op, type = _type(c, caps, "unidirectional_sequence_lstm")
    form = _lstm_form(c, True)
    batch, size, units, output_size = _lstm_sizes(c, form)
    steps, time_major = c.integer(2, 5, "time steps"), c.boolean("time major")
    with_states = c.boolean("state outputs") if state_outputs is None else state_outputs
    activation = c.choice(_LSTM_ACTIVATIONS, "activation")
    case = _Recurrent(c, draw, type)
    x = case.data(_sequence_shape(time_major, steps, batch, size), "input")
    weights = _lstm_weights(case, form, units, size, output_size)
    states = [case.data((batch, output_size), "output state in"), case.data((batch, units), "cell state in")]
    inputs = [x, *weights, *states, case.b.scalar(activation), *_clips(case, form), case.flag(time_major),
              *_layer_norm_weights(case, form, units)]
    shapes: list[tuple[int, ...]] = [_sequence_shape(time_major, steps, batch, output_size)]
    if with_states:
        shapes += [(batch, output_size), (batch, units)]
    outputs = [(type, c.declared(shape, f"output {k}"), 0.0, 0) for k, shape in enumerate(shapes)]
    case.b.operation_outputs(op, inputs, outputs)
    return case.done(shapes, f"UNIDIRECTIONAL_SEQUENCE_LSTM {type.name} {form.describe()} "
                             f"{'time' if time_major else 'batch'}-major {steps} steps")


@st.composite
def bidirectional_sequence_lstm_models(draw, caps: Capabilities) -> ModelCase:
    """BIDIRECTIONAL_SEQUENCE_LSTM over 2 to 5 steps: both cells of one form, the outputs merged or
    not, the state outputs present or not, no auxiliary input (its 61 inputs' other optional part)."""
    c = _start(draw)
    op, type = _type(c, caps, "bidirectional_sequence_lstm")
    form = _lstm_form(c, True)
    batch, size, units, output_size = _lstm_sizes(c, form)
    steps, time_major, merge = c.integer(2, 5, "time steps"), c.boolean("time major"), c.boolean("merge outputs")
    with_states, activation = c.boolean("state outputs"), c.choice(_LSTM_ACTIVATIONS, "activation")
    case = _Recurrent(c, draw, type)
    x = case.data(_sequence_shape(time_major, steps, batch, size), "input")
    forward = _lstm_weights(case, form, units, size, output_size, "forward ")
    backward = _lstm_weights(case, form, units, size, output_size, "backward ")
    states = [case.data(shape, f"{name} state in") for name in ("forward output", "forward cell", "backward output",
                                                                   "backward cell")
              for shape in [(batch, output_size) if "output" in name else (batch, units)]]
    inputs = [x, *forward, *backward, *states, case.absent(), *(case.absent() for _ in range(8)),
              case.b.scalar(activation), *_clips(case, form), case.flag(merge), case.flag(time_major),
              *_layer_norm_weights(case, form, units, "forward "), *_layer_norm_weights(case, form, units, "backward ")]
    sequence = _sequence_shape(time_major, steps, batch, output_size)
    merged = _sequence_shape(time_major, steps, batch, 2 * output_size)
    shapes: list[tuple[int, ...]] = [merged] if merge else [sequence, sequence]
    if with_states:
        shapes += [(batch, output_size), (batch, units), (batch, output_size), (batch, units)]
    outputs = [(type, c.declared(shape, f"output {k}"), 0.0, 0) for k, shape in enumerate(shapes)]
    case.b.operation_outputs(op, inputs, outputs)
    return case.done(shapes, f"BIDIRECTIONAL_SEQUENCE_LSTM {type.name} {form.describe()}{' merged' if merge else ''}")


#: NeuralNetworks.h's quantization of QUANTIZED_16BIT_LSTM's input and output (scale, zeroPoint), and
#: its cell state's scale (four integer bits).
_ACTIVATION_QUANT = (1 / 128, 128)
_CELL_STATE_SCALE = 2.0 ** -11
#: The weights' scale: uint8 weights of about [-1/2, 1/2) (their zeroPoint near 128), so that each gate's sum of
#: at most 8 products and a bias stays inside the Q(3) range its accumulator is rescaled to (+-8),
#: where saturation would hide a wrong gate.  Its biases' scale is NNAPI's: the weights' over 128.
_WEIGHTS_SCALE = 2.0 ** -8


@st.composite
def quantized_16bit_lstm_models(draw, caps: Capabilities) -> ModelCase:
    """QUANTIZED_16BIT_LSTM: one step, batch 1 to 3, 1 to 4 inputs and units, the weights' zeroPoint
    drawn (the input's and output's are NNAPI's 128); biases of [-1, 1) and cell states of [-2, 2)."""
    c = _start(draw)
    op, type = _type(c, caps, "quantized_16bit_lstm")
    batch, size, units = c.integer(1, 3, "batch"), c.integer(1, 4, "input size"), c.integer(1, 4, "units")
    zero_point = c.choice((128, 112, 144), "weights zeroPoint")
    how = c.choice(_HOWS, "weights given as")
    case = _Case(c)
    weights_quant, bias_quant = (_WEIGHTS_SCALE, zero_point), (_WEIGHTS_SCALE / 128, 0)
    x = case.operand(QU8, draw(arrays(QU8, (batch, size)), label="input"), _ACTIVATION_QUANT, label="input")
    gates = ("input", "forget", "cell", "output")
    weights = [case.operand(QU8, draw(arrays(QU8, shape), label=f"{kind}-to-{g} weights"), weights_quant, how)
               for kind, shape in (("input", (units, size)), ("recurrent", (units, units))) for g in gates]
    # int16 raw values as int32 biases: [-1, 1) at the biases' scale of 2^-15
    biases = [case.operand(TI32,
                           draw(arrays(QSYMM16, (units,)), label=f"{g} gate bias").astype(np.int32), bias_quant, how)
              for g in gates]
    cell_state = (draw(arrays(QSYMM16, (batch, units)), label="cell state in") >> 3).astype(np.int16)
    states = [case.operand(QSYMM16, cell_state, (_CELL_STATE_SCALE, 0), label="cell state in"),
              case.operand(QU8, draw(arrays(QU8, (batch, units)), label="output in"), _ACTIVATION_QUANT,
                           label="output in")]
    shape = (batch, units)
    outputs = [(QSYMM16, c.declared(shape, "cell state out"), _CELL_STATE_SCALE, 0),
               (QU8, c.declared(shape, "output"), *_ACTIVATION_QUANT)]
    case.b.operation_outputs(op, [x, *weights, *biases, *states], outputs)
    return case.done([shape, shape], f"QUANTIZED_16BIT_LSTM weights zeroPoint {zero_point}")


#: QUANTIZED_LSTM's scales: int8 input and output of [-1, 1), weights of [-1/2, 1/2) (each gate's sum
#: of at most 8 products inside its Q(3) intermediate range of +-8), an int16 cell state of four
#: integer bits, the hidden state's 8 bits over [-1, 1); projection weights of [-1/4, 1/4), so that a
#: projected sum of up to 4 units stays inside the output's range.
_Q_ACTIVATION, _Q_WEIGHTS, _Q_CELL, _Q_INTERMEDIATE = 2.0 ** -7, 2.0 ** -8, 2.0 ** -11, 2.0 ** -12
_Q_PEEPHOLE, _Q_NORM, _Q_PROJECTION = 2.0 ** -12, 2.0 ** -12, 2.0 ** -8


class _QuantizedCase(_Case):
    """A model being built, with a quantized LSTM's kinds of values: raw integers."""

    def __init__(self, c: _Choices, draw) -> None:
        super().__init__(c)
        self.draw = draw
        # one way for all the weights of a model, as `_Recurrent`'s
        self.how = c.choice(_HOWS, "weights given as")

    def raw(self, type: OperandType, shape: tuple[int, ...], label: str, shift: int = 0) -> np.ndarray:
        """Raw integers of ``type`` over its whole range, shifted right by ``shift`` bits."""
        drawn = self.draw(arrays(type, shape), label=label)
        return (drawn.astype(np.int64) >> shift).astype(drawn.dtype)

    def weight(self, type: OperandType, shape: tuple[int, ...], label: str, scale: float, shift: int = 0) -> int:
        return self.operand(type, self.raw(type, shape, label, shift), (scale, 0), self.how)

    def bias(self, shape: tuple[int, ...], label: str, shift: int) -> int:
        """An int32 bias: int16 raw values moved left by ``shift`` bits (its scale is the operation's)."""
        raw = self.raw(QSYMM16, shape, label).astype(np.int32) << shift
        return self.operand(TI32, raw.astype(np.int32), how=self.how)


@st.composite
def quantized_lstm_models(draw, caps: Capabilities) -> ModelCase:
    """QUANTIZED_LSTM: one step, batch 1 to 3, each optional part given or omitted (CIFG, peepholes,
    layer normalization, projection with its bias or not, the clips), the input's and the output
    state's zeroPoints drawn.  A layer-normalized gate has at least two units (one unit's normalized
    sum is zero whatever its weights); without layer normalization each gate's bias joins its sum
    (scale: the input's times the weights'), with it the normalized sum (the norm weights' / 1024)."""
    c = _start(draw)
    op, _ = _type(c, caps, "quantized_lstm")
    cifg, peephole, layer_norm = c.boolean("CIFG"), c.boolean("peephole"), c.boolean("layer normalization")
    projection = c.boolean("projection")
    projection_bias = projection and c.boolean("projection bias")
    batch, size = c.integer(1, 3, "batch"), c.integer(1, 4, "input size")
    units = c.integer(2 if layer_norm else 1, 4, "units")
    outputs = c.integer(1, 4, "output size") if projection else units
    in_zero, out_zero = c.choice((0, 16, -16), "input zeroPoint"), c.choice((0, 16, -16), "output state zeroPoint")
    cell_clip = c.choice((0.0, 0.0, 1.0), "cell clip")
    projection_clip = c.choice((0.0, 0.0, 0.125), "projection clip") if projection else 0.0
    case = _QuantizedCase(c, draw)
    b = case.b
    x = case.operand(QS8, case.raw(QS8, (batch, size), "input"), (_Q_ACTIVATION, in_zero), label="input")
    gates = ("input", "forget", "cell", "output")
    given = lambda g: not (cifg and g == "input")  # noqa: E731  (CIFG: no input gate)
    to_gates = [case.weight(QSYMM8, (units, size), f"input-to-{g} weights", _Q_WEIGHTS) if given(g)
                else b.omitted(QSYMM8, scale=_Q_WEIGHTS) for g in gates]
    recurrent = [case.weight(QSYMM8, (units, outputs), f"recurrent-to-{g} weights", _Q_WEIGHTS) if given(g)
                 else b.omitted(QSYMM8, scale=_Q_WEIGHTS) for g in gates]
    peepholes = [case.weight(QSYMM16, (units,), f"cell-to-{g} weights", _Q_PEEPHOLE, 4) if peephole and given(g)
                 else b.omitted(QSYMM16, scale=_Q_PEEPHOLE) for g in ("input", "forget", "output")]
    # [-1, 1) at the bias's scale: 2^-15 beside the products, 2^-22 beside the normalized sums
    biases = [case.bias((units,), f"{g} gate bias", 7 if layer_norm else 0) if given(g) else b.omitted(TI32)
              for g in gates]
    projected = [case.weight(QSYMM8, (outputs, units), "projection weights", _Q_PROJECTION) if projection
                 else b.omitted(QSYMM8, scale=_Q_PROJECTION),
                 case.bias((outputs,), "projection bias", 0) if projection_bias else b.omitted(TI32)]
    states = [case.operand(QS8, case.raw(QS8, (batch, outputs), "output state in"), (_Q_ACTIVATION, out_zero),
                           label="output state in"),
              case.operand(QSYMM16, case.raw(QSYMM16, (batch, units), "cell state in", 3), (_Q_CELL, 0),
                           label="cell state in")]
    norms = [case.weight(QSYMM16, (units,), f"{g} layer norm weights", _Q_NORM, 3) if layer_norm and given(g)
             else b.omitted(QSYMM16, scale=_Q_NORM) for g in gates]
    scalars = [b.constant(OperandType.FLOAT32, cell_clip), b.constant(OperandType.FLOAT32, projection_clip),
               *(b.constant(OperandType.FLOAT32, _Q_INTERMEDIATE) for _ in gates),
               b.constant(INT32, 0), b.constant(OperandType.FLOAT32, _Q_ACTIVATION)]
    shapes = [(batch, outputs), (batch, units), (batch, outputs)]
    quants = [(_Q_ACTIVATION, out_zero), (_Q_CELL, 0), (_Q_ACTIVATION, out_zero)]
    result_types = (QS8, QSYMM16, QS8)
    declared = [(t, c.declared(shape, f"output {k}"), *q)
                for k, (t, shape, q) in enumerate(zip(result_types, shapes, quants))]
    b.operation_outputs(op, [x, *to_gates, *recurrent, *peepholes, *biases, *projected, *states, *norms, *scalars],
                        declared)
    form = " + ".join(name for name, on in (("CIFG", cifg), ("peephole", peephole), ("layer norm", layer_norm),
                                             ("projection", projection)) if on) or "plain"
    return case.done(shapes, f"QUANTIZED_LSTM {form}")


MAKERS: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    "rnn": rnn_models,
    "svdf": svdf_models,
    "unidirectional_sequence_rnn": unidirectional_sequence_rnn_models,
    "bidirectional_sequence_rnn": bidirectional_sequence_rnn_models,
    "lstm": lstm_models,
    "unidirectional_sequence_lstm": unidirectional_sequence_lstm_models,
    "bidirectional_sequence_lstm": bidirectional_sequence_lstm_models,
    "quantized_16bit_lstm": quantized_16bit_lstm_models,
    "quantized_lstm": quantized_lstm_models,
}


@functools.lru_cache(maxsize=256)
def single_operation_models(caps: Capabilities, op: OperationType) -> st.SearchStrategy[ModelCase]:
    """Models of ``op`` alone (of one of `FAMILIES`): the driver's declarations narrowed to it."""
    return _narrowed_to(op, FAMILIES, MAKERS, caps)


# --------------------------------------------------------------------------- STATE-1


@dataclass(frozen=True)
class StatefulCase:
    """A model of one operation of `STATE_INPUTS` run step by step: its first execution's inputs,
    the inputs of each later step (a new input; their state inputs to be replaced by the step
    before's state outputs), and where each state input is among the model's inputs and its state output among
    its outputs."""

    case: ModelCase
    later_steps: tuple[tuple[np.ndarray, ...], ...]
    feedback: tuple[tuple[int, int], ...]

    def step(self, number: int, states: dict[int, np.ndarray]) -> ModelCase:
        """The model with step ``number``'s inputs (1: the first's), ``states`` {input position: value} fed in."""
        inputs = list(self.case.inputs if number == 1 else self.later_steps[number - 2])
        for at, value in states.items():
            inputs[at] = value
        return replace(self.case, inputs=tuple(inputs), alternatives=())


#: The stateful makers, each with its state outputs present.
_STATEFUL: dict[OperationType, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    Op.RNN: rnn_models,
    Op.SVDF: svdf_models,
    Op.UNIDIRECTIONAL_SEQUENCE_RNN: functools.partial(unidirectional_sequence_rnn_models, state_outputs=True),
    Op.LSTM: lstm_models,
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: functools.partial(unidirectional_sequence_lstm_models, state_outputs=True),
    Op.QUANTIZED_16BIT_LSTM: quantized_16bit_lstm_models,
    Op.QUANTIZED_LSTM: quantized_lstm_models,
}


def stateful_operations(caps: Capabilities) -> tuple[OperationType, ...]:
    """The operations of `STATE_INPUTS` a model can be built of for this driver."""
    return tuple(op for op in STATE_INPUTS if op in caps.operations and operation_types(caps, op))


@functools.lru_cache(maxsize=64)
def stateful_models(caps: Capabilities, op: OperationType, steps: int = 3) -> st.SearchStrategy[StatefulCase]:
    """Models of ``op`` (of `STATE_INPUTS`) with the inputs of ``steps`` executions."""
    return _stateful_models(_STATEFUL[op](replace(caps, operations=frozenset({op}))), op, steps)


@st.composite
def _stateful_models(draw, models: st.SearchStrategy[ModelCase], op: OperationType, steps: int) -> StatefulCase:
    case = draw(models, label="model")
    operation = case.subgraph.operations[0]
    inputs = case.subgraph.input_indexes
    feedback = tuple((inputs.index(operation.inputs[at]), out) for at, out in STATE_INPUTS[op])
    # each later step a new sequence (or input) of the same shape, the weights the same
    data_at = inputs.index(operation.inputs[0])
    first = case.inputs[data_at]
    later = []
    for step in range(2, steps + 1):
        drawn = draw(arrays(case.subgraph.operands[operation.inputs[0]].type, first.shape), label=f"step {step} input")
        values = list(case.inputs)
        # a float input of [-2, 2) as the first step's; a quantized one over its whole range
        values[data_at] = (drawn * np.asarray(0.25, drawn.dtype)).astype(drawn.dtype) if drawn.dtype.kind == "f" else drawn
        later.append(tuple(values))
    return StatefulCase(case, tuple(later), feedback)
