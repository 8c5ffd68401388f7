"""How many rounded terms make up one output element of a recurrent operation (SPEC CHOICE-7).

One step of a cell sums, for each gate, the input's and the previous output's products with their
weights (and an auxiliary input's), a bias and a peephole term, then applies a sigmoid or a tanh a
correct driver computes a few ulps from the exact value; an LSTM multiplies gates together and
projects its output.  The error of one step's result reaches every later step through the state, so
the count grows with the time steps.  Sizes the model leaves unknown count as `_UNKNOWN_SIDE`.

A layer-normalized LSTM divides each gate's centred sums by their standard deviation over the units,
which the values decide: an error in the sums grows by |sum| / deviation, unbounded when the units'
sums are close.  Its steps count `_LAYER_NORM_TERMS` more: a float32 driver (the variant
`recurrent-in-own-precision`) needed a quarter of them at worst over 600 drawn models.  In a relaxed
or float16 model that leaves its values all but unjudged; its float32 models judge it.
"""

from __future__ import annotations

from harness.api.hal import OperandLifeTime, Operation, OperationType, Subgraph

Op = OperationType
#: Where each recurrent operation's activation code is among its inputs (the magnitude run turns it off).
ACTIVATION_INPUT = {Op.RNN: 5, Op.UNIDIRECTIONAL_SEQUENCE_RNN: 5, Op.BIDIRECTIONAL_SEQUENCE_RNN: 12, Op.SVDF: 6,
                    Op.LSTM: 20, Op.UNIDIRECTIONAL_SEQUENCE_LSTM: 20, Op.BIDIRECTIONAL_SEQUENCE_LSTM: 48}
RECURRENT = frozenset(ACTIVATION_INPUT)
#: A step's terms besides its products: bias, peephole, the gates' functions (4 ulps each, as
#: `bounds.TRANSCENDENTAL_TERMS` counts LOGISTIC and TANH) and the products of gates and states.
_STEP_TERMS = 24
#: A product's length: the input, the previous output, the auxiliary input and the projection.
_SUMS_PER_STEP = 4
#: The layer-normalized LSTMs' inputs of their (output gate's) layer norm weights.
_LAYER_NORM_AT = {Op.LSTM: (26,), Op.UNIDIRECTIONAL_SEQUENCE_LSTM: (27,), Op.BIDIRECTIONAL_SEQUENCE_LSTM: (56, 60)}
_UNKNOWN_SIDE = 64
#: A layer-normalized step's terms besides the others: the mean and variance over the units, and the
#: division by the deviation, an error's amplification the model alone does not bound (see above).
_LAYER_NORM_TERMS = 2048


def _side(side: int) -> int:
    return side if side > 0 else _UNKNOWN_SIDE


def terms(subgraph: Subgraph, operation: Operation) -> int:
    """Terms of one output element of ``operation`` (of `RECURRENT`), over all its time steps."""
    operands = subgraph.operands
    shapes = [operands[i].dimensions for i in operation.inputs]
    data = shapes[0]
    steps = max(_side(data[0]), _side(data[1])) if len(data) == 3 else 1
    # the longest product any gate sums: over the weights' rows (and the states', one of their lengths)
    longest = max((_side(shape[1]) for shape in shapes[1:] if len(shape) == 2), default=_UNKNOWN_SIDE)
    per_step = _SUMS_PER_STEP * longest + _STEP_TERMS
    if any(at < len(shapes) and operands[operation.inputs[at]].lifetime != OperandLifeTime.NO_VALUE
           for at in _LAYER_NORM_AT.get(operation.type, ())):
        per_step += _LAYER_NORM_TERMS
    return steps * per_step
