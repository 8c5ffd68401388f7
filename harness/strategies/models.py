"""Models with their input values: one strategy per operation family, chained sometimes.

Each strategy returns a `ModelCase`: the model as data, the input values of this
example, and the shapes the outputs will have (known analytically, so that request
layouts can size output regions without running any driver).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Final, TypeVar

import numpy as np
from hypothesis import event, note, reject
from hypothesis import strategies as st
from hypothesis.control import current_build_context

from harness.judging.builders import ModelBuilder
from harness.api.hal import (Capabilities, OperandLifeTime, OperandType, OperationType, Subgraph,
                              SymmPerChannelQuantParams)

from .values import (FLOAT_TYPES, QUANT_TYPES, SCALES, ZERO_POINT_RANGE, arrays, declaration_codes, declared_by_code,
                     sampled, usable_types)

_T = TypeVar("_T")
I32 = OperandType.TENSOR_INT32
PER_CHANNEL = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
_HOW = ("input", "copy", "reference")
_CHANNEL_SCALES = (0.02, 0.05, 0.1, 0.25)
#: Scales for an output that must be above a product of two of SCALES (MUL): one past them all.
_OUTPUT_SCALES = SCALES + (2.0,)


@dataclass(frozen=True)
class ModelCase:
    subgraph: Subgraph
    operand_values: bytes
    pool_data: bytes
    inputs: tuple[np.ndarray, ...]
    output_shapes: tuple[tuple[int, ...], ...]
    label: str
    #: each small choice made for this model, under its label (printed when an example fails)
    choices: tuple[tuple[str, object], ...] = ()
    #: other values of the inputs, each with its outputs' shapes, that the same model takes: a
    #: parameter given as a request input (RESHAPE's shape, a fused activation) set otherwise
    alternatives: tuple[tuple[tuple[np.ndarray, ...], tuple[tuple[int, ...], ...]], ...] = ()
    #: the subgraphs its SUBGRAPH operands name (IF's branches, WHILE's condition and body), whose
    #: constants are in ``operand_values`` beside the main subgraph's
    referenced: tuple[Subgraph, ...] = ()

    def alternative(self, which: int = 0) -> ModelCase:
        """The same model with its ``which``-th other input values."""
        inputs, output_shapes = self.alternatives[which]
        return replace(self, inputs=inputs, output_shapes=output_shapes, alternatives=())


#: Where a quantized operand's zero point is drawn: anywhere in its type's range, or within
#: `_NEAR_AN_END` steps of either end, where a bound computed from it (RELU1's zeroPoint - 1/scale,
#: a clamp's limits, an offset added to the values) leaves the type's range: drawn anywhere alone,
#: 1 in 32 would be there.  The first is where all-zero bytes (shrinking) go.
_ZERO_POINT_PLACES = ("anywhere", "near the low end", "anywhere", "near the high end")
_NEAR_AN_END = 4
#: Bytes read by one model's choices; more than any family reads (running past them is an error).
_CHOICE_BYTES = 64
_CHOICE_DATA = st.binary(min_size=_CHOICE_BYTES, max_size=_CHOICE_BYTES)


class _Choices:
    """A model's small choices (operation, type, sizes, quantization, how each operand is given,
    how each shape is declared) read from one draw of bytes.

    Hypothesis charges about 20 µs per draw whatever its size, and these choices were most of a
    scenario's draws.  Each choice reads one byte (two for a range past 256) modulo its number of
    options, so all-zero bytes read as every choice's first option, which is where shrinking goes.
    A zero point's place (`quantization`) is read from the far end of the bytes, backwards."""

    def __init__(self, data: bytes) -> None:
        self._data, self._at, self._back = data, 0, 0
        self.made: list[tuple[str, object]] = []

    def _read(self, options: int) -> int:
        width = 1 if options <= 256 else 2
        self._check_room(width)
        raw = int.from_bytes(self._data[self._at : self._at + width], "little")
        self._at += width
        return raw % options

    def _read_from_end(self, options: int) -> int:
        self._check_room(1)
        self._back += 1
        return self._data[-self._back] % options

    def _check_room(self, width: int) -> None:
        if self._at + self._back + width > len(self._data):
            raise RuntimeError(f"a model read more than its {len(self._data)} choice bytes: raise _CHOICE_BYTES")

    def integer(self, low: int, high: int, label: str) -> int:
        value = low + self._read(high - low + 1)
        self.made.append((label, value))
        return value

    def boolean(self, label: str) -> bool:
        return bool(self.integer(0, 1, label))

    def choice(self, options: Sequence[_T], label: str) -> _T:
        value = options[self._read(len(options))]
        self.made.append((label, value))
        return value

    def shape(self, label: str, min_rank: int = 1, max_rank: int = 4, max_side: int = 4) -> tuple[int, ...]:
        rank = self.integer(min_rank, max_rank, f"{label} rank")
        return tuple(self.integer(1, max_side, f"{label} axis {axis}") for axis in range(rank))

    def type(self, family: str, caps: Capabilities, allowed: tuple[OperandType, ...] | None = None,
             label: str = "type") -> OperandType:
        """A tensor type the operation (``allowed``, by default its family's) and the driver both
        support, and whose companion types the driver declares too (`family_types`)."""
        usable = family_types(family, caps, allowed)
        if not usable:
            reject()  # this operation has no type the driver declares: not an example
        return self.choice(usable, label)

    def quantization(self, type: OperandType, label: str, *, scale_above: float = 0.0) -> tuple[float, int]:
        """(scale, zeroPoint): (0, 0) for non-quantized types; the scale above ``scale_above``; the
        zero point anywhere in its type's range, or near one end of it (`_ZERO_POINT_PLACES`)."""
        if type not in ZERO_POINT_RANGE:
            return (0.0, 0)
        low, high = ZERO_POINT_RANGE[type]
        scales = tuple(s for s in _OUTPUT_SCALES if s > scale_above) if scale_above else SCALES
        scale = self.choice(scales, f"{label} scale")
        offset = self._read(high - low + 1)
        # The place comes from the far end of the bytes and narrows the offset read in order: every
        # other choice reads the same bytes whatever the place, so a place changed (by shrinking, or a
        # mutation of the bytes) moves this zero point alone, never the rest of the model.
        place = _ZERO_POINT_PLACES[self._read_from_end(len(_ZERO_POINT_PLACES))]
        if place == "near the low end":
            zero_point = min(low + offset % _NEAR_AN_END, high)
        elif place == "near the high end":
            zero_point = max(high - offset % _NEAR_AN_END, low)
        else:
            zero_point = low + offset
        self.made += [(f"{label} zero point place", place), (f"{label} zero point", zero_point)]
        return scale, zero_point

    def declared(self, shape: tuple[int, ...], label: str) -> tuple[int, ...]:
        """How the model declares ``shape`` (see values.declared_dimensions)."""
        return declared_by_code(tuple(shape), self.integer(0, declaration_codes(len(shape)) - 1, f"{label} declared dims"))


class _Case:
    """A ModelBuilder that also records input values in order."""

    def __init__(self, choices: _Choices) -> None:
        self.choices = choices
        self.b = ModelBuilder()
        self.values: list[np.ndarray] = []

    def operand(self, type: OperandType, value: np.ndarray, quant=(0.0, 0), how: str = "input", label: str = "",
                channel_quant: SymmPerChannelQuantParams | None = None) -> int:
        if how == "input":
            dims = self.choices.declared(value.shape, label)
            self.values.append(value)
            return self.b.input(type, dims, *quant, channel_quant=channel_quant)
        return self.b.constant(type, value, *quant, by_reference=how == "reference", channel_quant=channel_quant)

    def output(self, op, inputs, type, shape, quant=(0.0, 0), *, final: bool = True, dims=None) -> int:
        """The operation, its output declared with ``dims`` (None: as drawn)."""
        if dims is None:
            dims = self.choices.declared(shape, f"{op.name} output")
        return self.b.operation(op, inputs, type, dims, *quant, output=final)

    def done(self, output_shapes, label: str, alternatives=()) -> ModelCase:
        event(f"model: {label}")
        return ModelCase(self.b.subgraph(), bytes(self.b.values), bytes(self.b.pool_data), tuple(self.values),
                         tuple(tuple(s) for s in output_shapes), label, tuple(self.choices.made), tuple(alternatives))

    def with_last_input(self, value: np.ndarray, output_shapes) -> tuple:
        """An alternative (`ModelCase.alternatives`): these inputs with the last one ``value``."""
        return (*self.values[:-1], value), tuple(tuple(s) for s in output_shapes)


def _start(draw) -> _Choices:
    return _Choices(draw(_CHOICE_DATA, label="model choices"))


def _operation_and_type_of(c: _Choices, ops: Sequence[OperationType],
                           types_of: Callable[[OperationType], Sequence[OperandType]]) -> tuple[OperationType, OperandType]:
    """One of a family's buildable ``ops`` and one of the data types ``types_of`` gives it."""
    if not ops:
        reject()  # nothing of this family the driver declares on a type it declares: not an example
    op = c.choice(tuple(ops), "operation")
    return op, c.choice(tuple(types_of(op)), "type")


def _narrowed_to(op: OperationType, families: dict[str, tuple[OperationType, ...]],
                 makers: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]],
                 caps: Capabilities) -> st.SearchStrategy[ModelCase]:
    """Models of ``op`` alone, by the maker of its family: the driver's declarations narrowed to it."""
    family = next(name for name, ops in families.items() if op in ops)
    return makers[family](replace(caps, operations=frozenset({op})))


@functools.lru_cache(maxsize=512)
def _small_ints(dtype: str, shape: tuple[int, ...], bound: int) -> st.SearchStrategy[np.ndarray]:
    """Integers in [-bound, bound] for operands whose own range differs from their type's (biases,
    per-channel filters): one draw of bytes, one or two per element, zero bytes decoding to 0."""
    width = 1 if 2 * bound + 1 <= 256 else 2
    size = int(np.prod(shape, dtype=np.int64)) * width
    return st.binary(min_size=size, max_size=size).map(functools.partial(_decode_small, dtype, shape, bound, width))


def _decode_small(dtype: str, shape: tuple[int, ...], bound: int, width: int, encoded: bytes) -> np.ndarray:
    k = np.frombuffer(encoded, "<u1" if width == 1 else "<u2").astype(np.int64) % (2 * bound + 1)
    return np.where(k <= bound, k, bound - k).astype(dtype).reshape(shape)


def _supported(caps: Capabilities, *ops: OperationType) -> tuple[OperationType, ...]:
    return tuple(op for op in ops if op in caps.operations)


def _broadcast_pair(choices: _Choices, ranks: tuple[int, int] | None):
    """Two shapes that broadcast together, and the result's shape.  With ``ranks``: shapes of
    those ranks, each the trailing axes (all longer than 1) of one full shape."""
    if ranks:
        full = tuple(choices.integer(2, 4, f"broadcast axis {axis}") for axis in range(max(ranks)))
        return tuple(full[len(full) - rank :] for rank in ranks), full
    full = choices.shape("broadcast result")
    if choices.boolean("long last axis"):  # past one vector block of 4 (or of 8), where a tail loop runs
        full = full[:-1] + (choices.integer(5, 9, "last axis"),)
    pair = []
    for name in "ab":
        rank = choices.integer(1, len(full), f"{name} rank")
        # an axis is the result's or 1 (broadcast), one time in four
        pair.append(tuple(1 if choices.integer(0, 3, f"{name} axis {axis} broadcast") == 3 else side
                          for axis, side in enumerate(full[len(full) - rank :])))
    return tuple(pair), tuple(np.broadcast_shapes(*pair))


_OPERAND_HOWS = (("input", "input"), ("input", "copy"), ("input", "reference"), ("copy", "input"), ("reference", "input"))


def _elementwise_types(op: OperationType, activation: int | None) -> tuple[OperandType, ...]:
    """The tensor types ``op`` takes with fused ``activation`` (None: any).  NNAPI: DIV has no
    quantized form, and an operation on TENSOR_INT32 takes no fused activation but NONE."""
    allowed = FLOAT_TYPES + (I32,) if op == OperationType.DIV else FLOAT_TYPES + QUANT_TYPES + (I32,)
    return tuple(t for t in allowed if t != I32) if activation else allowed


def elementwise_operations(caps: Capabilities, activation: int | None = None,
                           op: OperationType | None = None) -> tuple[OperationType, ...]:
    """The element-wise operations (``op`` alone, when given) that the driver declares on a type it
    declares, with fused ``activation``: what `elementwise_models` can build for it."""
    candidates = (op,) if op is not None else FAMILIES["elementwise"]
    return tuple(o for o in _supported(caps, *candidates)
                 if family_types("elementwise", caps, _elementwise_types(o, activation)))


@functools.lru_cache(maxsize=256, typed=True)
def elementwise_models(caps: Capabilities, activation: int | None = None, op: OperationType | None = None,
                       ranks: tuple[int, int] | None = None, activation_input: bool | None = None) -> st.SearchStrategy[ModelCase]:
    """ADD/SUB/MUL/DIV with broadcasting, a fused activation, constants by copy or reference,
    sometimes followed by RELU through a temporary of unknown shape.

    One strategy object per arguments: tests ask for one inside every example, and hypothesis
    validates each new object before its first draw."""
    # the operations to choose from, worked out once per strategy rather than in every example; a
    # fused activation to vary as a request input needs a type that takes one (not TENSOR_INT32)
    ops = elementwise_operations(caps, 1 if activation_input else activation) if op is None else ()
    return _elementwise_models(caps, activation, op, ops, ranks, activation_input)


@st.composite
def _elementwise_models(draw, caps: Capabilities, activation: int | None, op: OperationType | None,
                        ops: tuple[OperationType, ...], ranks: tuple[int, int] | None,
                        activation_input: bool | None) -> ModelCase:
    c = _start(draw)
    if op is None:
        if not ops:
            reject()  # no element-wise operation on a type the driver declares: not an example
        op = c.choice(ops, "operation")
    type = c.type("elementwise", caps, _elementwise_types(op, 1 if activation_input else activation))
    (shape_a, shape_b), result_shape = _broadcast_pair(c, ranks)
    how_a, how_b = c.choice(_OPERAND_HOWS, "operands")
    case = _Case(c)
    a_quant, b_quant = c.quantization(type, "a"), c.quantization(type, "b")
    a = case.operand(type, draw(arrays(type, shape_a), label="a"), a_quant, how_a, "a")
    b = case.operand(type, draw(arrays(type, shape_b, nonzero=op == OperationType.DIV), label="b"), b_quant, how_b, "b")
    if activation is None:
        activation = 0 if type == I32 else c.integer(0, 3, "activation")
    chain = type != I32 and OperationType.RELU in caps.operations and c.boolean("chain RELU")
    # NNAPI: a quantized MUL's output scale is above its input scales' product
    out_quant = c.quantization(type, "output", scale_above=a_quant[0] * b_quant[0] if op == OperationType.MUL else 0.0)
    alternatives = []
    if c.boolean("activation as a request input") if activation_input is None else activation_input:
        code = case.operand(OperandType.INT32, np.asarray(activation, np.int32), how="input", label="activation")
        if type != I32:  # NNAPI: TENSOR_INT32 takes NONE alone
            other = (activation + c.integer(1, 3, "other activation")) % 4
            alternatives.append(case.with_last_input(np.asarray(other, np.int32), [result_shape]))
    else:
        code = case.b.scalar(activation)
    result = case.output(op, [a, b, code], type, result_shape, out_quant, final=not chain)
    if chain:
        case.output(OperationType.RELU, [result], type, result_shape, out_quant)  # NNAPI: RELU keeps its input's
    return case.done([result_shape], f"{op.name}{'+RELU' if chain else ''} {type.name}", alternatives)


_RELUS = (OperationType.RELU, OperationType.RELU1, OperationType.RELU6)
_POOLS = (OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D, OperationType.L2_POOL_2D)
_RESIZES = (OperationType.RESIZE_BILINEAR, OperationType.RESIZE_NEAREST_NEIGHBOR)
#: The tensor types each family's models take (NNAPI's signatures, as the reference implements them;
#: the element-wise family's depend on the operation and activation: `_elementwise_types`).
_FAMILY_TYPES: dict[str, tuple[OperandType, ...]] = {
    "elementwise": FLOAT_TYPES + QUANT_TYPES + (I32,),
    "relu": FLOAT_TYPES + QUANT_TYPES,
    "reshape": FLOAT_TYPES + QUANT_TYPES + (I32,),
    "concatenation": FLOAT_TYPES + QUANT_TYPES + (I32,),
    "fully_connected": FLOAT_TYPES + QUANT_TYPES,
    "conv_2d": FLOAT_TYPES + QUANT_TYPES,
    # the convolutions and the pools (NNAPI: L2_POOL_2D on the float types alone)
    "depthwise_conv_2d": FLOAT_TYPES + QUANT_TYPES,
    "grouped_conv_2d": FLOAT_TYPES + QUANT_TYPES,
    "transpose_conv_2d": FLOAT_TYPES + QUANT_TYPES,
    "average_pool_2d": FLOAT_TYPES + QUANT_TYPES,
    "max_pool_2d": FLOAT_TYPES + QUANT_TYPES,
    "l2_pool_2d": FLOAT_TYPES,
    "resize_bilinear": FLOAT_TYPES + QUANT_TYPES,
    "resize_nearest_neighbor": FLOAT_TYPES + QUANT_TYPES,
}


#: The operand types a family's models need besides their data type (NNAPI's signatures): the INT32
#: scalar of a fused activation, an axis or a padding, and RESHAPE's TENSOR_INT32 shape.
_COMPANION_TYPES: dict[str, frozenset[OperandType]] = {
    "elementwise": frozenset({OperandType.INT32}),
    "relu": frozenset(),
    "reshape": frozenset({I32}),
    "concatenation": frozenset({OperandType.INT32}),
    "fully_connected": frozenset({OperandType.INT32}),
    "conv_2d": frozenset({OperandType.INT32}),
    # GROUPED_CONV_2D's and TRANSPOSE_CONV_2D's layout flag is not optional
    "depthwise_conv_2d": frozenset({OperandType.INT32}),
    "grouped_conv_2d": frozenset({OperandType.INT32, OperandType.BOOL}),
    "transpose_conv_2d": frozenset({OperandType.INT32, OperandType.BOOL}),
    **{op.name.lower(): frozenset({OperandType.INT32}) for op in _POOLS},
    # the output's size as INT32s (scale factors only when FLOAT32 or FLOAT16 is declared too)
    "resize_bilinear": frozenset({OperandType.INT32}),
    "resize_nearest_neighbor": frozenset({OperandType.INT32, OperandType.BOOL}),
}
#: The families whose quantized models have a TENSOR_INT32 bias (`_bias`).
_QUANTIZED_BIAS = ("fully_connected", "conv_2d", "depthwise_conv_2d", "grouped_conv_2d", "transpose_conv_2d")


def _companion_types(family: str, type: OperandType) -> frozenset[OperandType]:
    """The operand types a ``family``'s model on data of ``type`` needs besides it."""
    bias = frozenset({I32}) if family in _QUANTIZED_BIAS and type in QUANT_TYPES else frozenset()
    return _COMPANION_TYPES[family] | bias


@functools.lru_cache(maxsize=256)
def family_types(family: str, caps: Capabilities, allowed: tuple[OperandType, ...] | None = None) -> tuple[OperandType, ...]:
    """The data types a ``family``'s models can be built on for this driver: declared, taken by the
    operation (``allowed``, by default the family's), and with every companion type declared too
    (CHOICE-5: a scenario uses only what the driver declares; a driver may declare RESHAPE and
    no TENSOR_INT32, and then no RESHAPE model can be built for it)."""
    # a family takes the types its declared operations all take as their own too
    ops = [op for op in FAMILIES.get(family, ()) if op in caps.operations]
    declared = frozenset.intersection(*(caps.types_of(op) for op in ops)) if ops else caps.operand_types
    candidates = usable_types(_FAMILY_TYPES[family] if allowed is None else allowed, declared)
    return tuple(t for t in candidates if _companion_types(family, t) <= declared)


@st.composite
def relu_models(draw, caps: Capabilities) -> ModelCase:
    """RELU, RELU1 (clamp to [-1, 1]) and RELU6 (clamp to [0, 6]) as operations of their own."""
    c = _start(draw)
    op = c.choice(_supported(caps, *_RELUS), "operation")
    type = c.type("relu", caps)
    shape = c.shape("shape")
    case = _Case(c)
    quant = c.quantization(type, "x and output")  # NNAPI: the RELUs keep their input's scale and zeroPoint
    x = case.operand(type, draw(arrays(type, shape), label="x"), quant, label="x")
    case.output(op, [x], type, shape, quant)
    return case.done([shape], f"{op.name} {type.name}")


@st.composite
def reshape_models(draw, caps: Capabilities, shape_how: str | None = None) -> ModelCase:
    """RESHAPE with the target shape as a constant or as an input (output shape from values).
    ``shape_how`` given: always so, and with "input" the output of unknown rank, so that another
    shape input can give it another shape (`ModelCase.alternatives`)."""
    c = _start(draw)
    type = c.type("reshape", caps)
    source = c.shape("source shape")
    count = int(np.prod(source))
    target = _factor(count)
    for i in range(len(target) - 1, 0, -1):  # a permutation of the factors; zero bytes keep their order
        j = i - c.integer(0, i, f"target factor {i} swapped back")
        target[i], target[j] = target[j], target[i]
    target = target or [1]
    if len(target) > 4:  # NNAPI: RESHAPE's output has rank up to 4 (CHOICE-8)
        target = target[:3] + [int(np.prod(target[3:]))]
    if c.boolean("infer one axis"):
        target[c.integer(0, len(target) - 1, "inferred axis")] = -1
    resolved = tuple(count // -int(np.prod(target)) if d == -1 else d for d in target)
    case = _Case(c)
    quant = c.quantization(type, "x and output")
    x = case.operand(type, draw(arrays(type, source), label="x"), quant, label="x")
    varied = shape_how == "input"
    shape_how = shape_how or c.choice(_HOW, "shape operand")
    shape_operand = case.operand(I32, np.asarray(target, np.int32), how=shape_how, label="shape")
    case.output(OperationType.RESHAPE, [x, shape_operand], type, resolved, quant, dims=() if varied else None)
    alternatives = []
    if varied:  # another value of the shape input: another shape of as many elements
        other = _rearranged(resolved)
        alternatives.append(case.with_last_input(np.asarray(other, np.int32), [other]))
    return case.done([resolved], f"RESHAPE {type.name} shape-{shape_how}", alternatives)


def _rearranged(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Another shape of as many elements and rank at most 4: reversed, or with one more axis, or
    the first two merged (each shape of rank 1 to 4 has one of these)."""
    merged = (shape[0] * shape[1], *shape[2:]) if len(shape) > 1 else shape
    return next(other for other in (shape[::-1], (*shape, 1), merged) if other != shape and len(other) <= 4)


def _factor(n: int) -> list[int]:
    factors, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors + ([n] if n > 1 else [])


@st.composite
def concatenation_models(draw, caps: Capabilities) -> ModelCase:
    """CONCATENATION of one to five tensors of rank up to 4 (NNAPI: any number of inputs, one at
    least), each quantized as the output is or on its own."""
    c = _start(draw)
    type = c.type("concatenation", caps)
    if c.boolean("channels"):  # a rank-4 tensor's last axis: what real models join most, and kernels special-case
        base = c.shape("base shape", min_rank=4)
        axis = 3
    else:
        base = c.shape("base shape")  # NNAPI: rank up to 4 (CHOICE-8)
        axis = c.integer(0, len(base) - 1, "axis")
    sizes = [c.integer(1, 3, f"x{i} axis size") for i in range(c.integer(1, 5, "inputs"))]
    out_quant = c.quantization(type, "output")
    case = _Case(c)
    operands = []
    for i, size in enumerate(sizes):
        shape = base[:axis] + (size,) + base[axis + 1 :]
        # a driver may copy an input whose quantization is the output's as it is: both kinds, mixed
        quant = out_quant if type in QUANT_TYPES and c.boolean(f"x{i} as the output") else c.quantization(type, f"x{i}")
        operands.append(case.operand(type, draw(arrays(type, shape), label=f"x{i}"), quant,
                                     c.choice(_HOW, f"x{i} given as") if i else "input", f"x{i}"))
    out_shape = base[:axis] + (sum(sizes),) + base[axis + 1 :]
    # the axis from 0: NNAPI gives a negative one no meaning here (CHOICE-8)
    case.output(OperationType.CONCATENATION, [*operands, case.b.scalar(axis)], type, out_shape, out_quant)
    return case.done([out_shape], f"CONCATENATION {type.name}")


def _bias(draw, type, in_quant, w_quant, units):
    if type in QUANT_TYPES:
        return I32, draw(_small_ints("int32", (units,), 1000), label="bias"), (in_quant[0] * w_quant[0], 0)
    return type, draw(arrays(type, (units,)), label="bias"), (0.0, 0)


@st.composite
def fully_connected_models(draw, caps: Capabilities) -> ModelCase:
    c = _start(draw)
    type = c.type("fully_connected", caps)
    # Half the examples reach past one vector block (4 elements, up to two of 8) in both the dot
    # products and the units, where a blocked kernel runs its tail loop; the rest stay small.
    wide = c.boolean("wide")
    size = c.integer(5, 17, "input size") if wide else c.integer(1, 5, "input size")
    units = c.integer(5, 9, "units") if wide else c.integer(1, 4, "units")
    # NNAPI flattens an input of rank above 2 to [batch, input size]: the leading axes are the batch.
    leading = c.shape("batch axes", max_rank=3, max_side=3)
    batch = int(np.prod(leading))
    case = _Case(c)
    in_quant, w_quant = c.quantization(type, "input"), c.quantization(type, "weights")
    x = case.operand(type, draw(arrays(type, leading + (size,)), label="input"), in_quant, label="input")
    w = case.operand(type, draw(arrays(type, (units, size)), label="weights"), w_quant, c.choice(_HOW[1:], "weights given as"))
    bias_type, bias, bias_quant = _bias(draw, type, in_quant, w_quant, units)
    bias_operand = case.operand(bias_type, bias, bias_quant, c.choice(_HOW[1:], "bias given as"))
    act = case.b.scalar(c.integer(0, 3, "activation"))
    case.output(OperationType.FULLY_CONNECTED, [x, w, bias_operand, act], type, (batch, units),
                c.quantization(type, "output"))
    return case.done([(batch, units)], f"FULLY_CONNECTED {type.name}")


@functools.lru_cache(maxsize=16)
def same_padding_models(caps: Capabilities, dilated: bool = False) -> st.SearchStrategy[ModelCase]:
    """CONV_2D with the SAME padding scheme only, and strides above 1: its padding on each axis then
    depends on that axis's size (ceil(size / stride) outputs), which the other forms never exercise.
    ``dilated``: always with dilation factors (a path of its own in engines whose SAME auto-padding
    refuses dilation), which needs the layout flag, a BOOL operand the driver declares."""
    return conv_2d_models(caps, same_only=True, dilated_only=dilated)


@st.composite
def conv_2d_models(draw, caps: Capabilities, same_only: bool = False, dilated_only: bool = False) -> ModelCase:
    """CONV_2D in each NNAPI signature: explicit padding (10 inputs) or a padding scheme (7), each
    optionally with the layout flag (NHWC or NCHW tensors) and then dilation factors; a per-channel
    quantized filter when the driver declares TENSOR_QUANT8_SYMM_PER_CHANNEL.  ``same_only``: always
    the SAME scheme, with strides above 1, and ``dilated_only`` always the signature with dilation
    factors (`same_padding_models`)."""
    c = _start(draw)
    type = c.type("conv_2d", caps)
    implicit = same_only or c.boolean("implicit padding")
    # the layout flag is a BOOL operand: only for a driver that declares the type
    layouts: tuple[bool | None, ...] = (None, False, True) if OperandType.BOOL in caps.operand_types else (None,)
    if dilated_only:
        layouts = tuple(layout for layout in layouts if layout is not None)
    layout = c.choice(layouts, "layout flag (None: absent, True: NCHW)")
    # A dilation shows only over a filter longer than one pixel: a dilated example has one axis
    # dilated 2 or 3 times (past the 1 and 2 that kernels have their own code for) under such a
    # filter; the other axis draws its dilation from 1 to 3 freely.
    dilated = dilated_only or (layout is not None and c.boolean("dilation inputs"))
    long = c.choice(("w", "h"), "dilated axis") if dilated else None
    dil = {axis: c.integer(2 if axis == long else 1, 3, f"dilation {axis}") if dilated else 1 for axis in ("w", "h")}
    dil_w, dil_h = dil["w"], dil["h"]
    # Half the examples have up to 9 channels: past one and two blocks of 4 (or one of 8), where a
    # kernel that works in vector blocks runs its tail loop; the rest stay small and quick.
    channels = 9 if c.boolean("wide channels") else 3
    n = c.integer(1, 2, "batches")
    h, w = (c.integer(dil[axis] + 1 if axis == long else 1, 5, name) for axis, name in (("h", "height"), ("w", "width")))
    if same_only and h == w:  # SAME asked for alone: a non-square input, where its padding differs between the axes
        if long == "h":  # the dilated axis keeps its size (at least 3 here): the other one gives way
            w -= 1
        else:
            h = h - 1 if h > 1 else 2
    ch, d = (c.integer(1, channels, name) for name in ("input channels", "output channels"))
    # Explicit padding up to 3 (past the one-pixel border a kernel may have code for), narrower
    # than the dilated filter on its axis, which NNAPI's CPU implementation requires (CHOICE-8: a
    # driver may refuse it): drawn first, below the longest filter the input holds, and the filter
    # then drawn long enough.
    sizes = {"h": h, "w": w}
    longest = {axis: (sizes[axis] - 1) // dil[axis] * dil[axis] + 1 for axis in sizes}
    pads = {side: 0 if implicit else c.integer(0, min(3, longest[axis] - 1), f"pad {side}")
            for side, axis in (("left", "w"), ("right", "w"), ("top", "h"), ("bottom", "h"))}
    widest = {"h": max(pads["top"], pads["bottom"]), "w": max(pads["left"], pads["right"])}
    # the dilated filter fits the unpadded input, so every padding and scheme gives an output
    most = {axis: (sizes[axis] - 1) // dil[axis] + 1 for axis in sizes}
    shortest = {axis: max(2 if axis == long else 1, 1 - (-widest[axis] // dil[axis])) for axis in sizes}
    if same_only:  # a one-pixel filter needs no SAME padding at strides above 1: two pixels where the input has room
        shortest = {axis: min(most[axis], max(shortest[axis], 2)) for axis in sizes}
    kh, kw = (c.integer(shortest[axis], most[axis], f"filter {name}") for axis, name in (("h", "height"), ("w", "width")))
    span_h, span_w = (kh - 1) * dil_h + 1, (kw - 1) * dil_w + 1
    scheme = 1 if same_only else c.choice((1, 2), "padding scheme (1 SAME, 2 VALID)") if implicit else 0
    # Up to 3: past the strides 1 and 2 that kernels have their own code for.  Without SAME (whose
    # padding depends on the stride) a stride past the room the window has to move in gives one
    # output, the same for every stride: the stride stops at that room.
    room = {"h": h + pads["top"] + pads["bottom"] - span_h, "w": w + pads["left"] + pads["right"] - span_w}
    # SAME asked for alone: strides above 1, where its padding depends on the size
    least = 2 if same_only else 1
    strides = tuple(c.integer(least, 3 if scheme == 1 else max(1, min(3, room[axis])), f"stride {axis}") for axis in ("w", "h"))
    # NNAPI: SAME gives ceil(size / stride) outputs whatever the filter; VALID and explicit padding whole windows
    out_h, out_w = ((-(-h // strides[1]), -(-w // strides[0])) if scheme == 1 else
                    (room["h"] // strides[1] + 1, room["w"] // strides[0] + 1))
    padding: tuple[int, ...] = (scheme,) if implicit else (pads["left"], pads["right"], pads["top"], pads["bottom"])
    nchw = bool(layout)
    in_shape, out_shape = ((n, ch, h, w), (n, d, out_h, out_w)) if nchw else ((n, h, w, ch), (n, out_h, out_w, d))
    case = _Case(c)
    in_quant = c.quantization(type, "input")
    x = case.operand(type, draw(arrays(type, in_shape), label="input"), in_quant, label="input")
    per_channel = type in QUANT_TYPES and PER_CHANNEL in caps.operand_types and c.boolean("per-channel filter")
    if per_channel:
        scales = tuple(c.choice(_CHANNEL_SCALES, f"filter scale {i}") for i in range(d))
        filt = draw(_small_ints("int8", (d, kh, kw, ch), 127), label="filter")
        f = case.operand(PER_CHANNEL, filt, how=c.choice(_HOW[1:], "filter given as"), label="filter",
                         channel_quant=SymmPerChannelQuantParams(scales, 0))
        bias = draw(_small_ints("int32", (d,), 1000), label="bias")
        bias_operand = case.operand(I32, bias, how="copy")  # scale 0: input scale x each channel's scale
    else:
        f_quant = c.quantization(type, "filter")
        f = case.operand(type, draw(arrays(type, (d, kh, kw, ch)), label="filter"), f_quant,
                         c.choice(_HOW[1:], "filter given as"))
        bias_type, bias, bias_quant = _bias(draw, type, in_quant, f_quant, d)
        bias_operand = case.operand(bias_type, bias, bias_quant, "copy")
    scalars = [case.b.scalar(v) for v in (*padding, *strides, c.integer(0, 3, "activation"))]
    if layout is not None:
        scalars.append(case.b.constant(OperandType.BOOL, layout))
    if dilated:
        scalars += [case.b.scalar(dil_w), case.b.scalar(dil_h)]
    case.output(OperationType.CONV_2D, [x, f, bias_operand, *scalars], type, out_shape, c.quantization(type, "output"))
    form = (f"{'SAME' if padding == (1,) else 'VALID'}" if implicit else "explicit") + (" NCHW" if nchw else "")
    extras = (f" dilation {dil_w}x{dil_h}" if dilated else "") + (" per-channel" if per_channel else "")
    return case.done([out_shape], f"CONV_2D {type.name} {form} stride {strides}{extras}")


# --------------------------------------------------------------------------- convolutions, pools, resizes

def _layouts(c: _Choices, caps: Capabilities, required: bool = False) -> bool | None:
    """The layout flag (None: absent, True: NCHW): a BOOL operand, only for a driver that declares it."""
    options: tuple[bool | None, ...] = (False, True) if required else (
        (None, False, True) if OperandType.BOOL in caps.operand_types else (None,))
    return c.choice(options, "layout flag (None: absent, True: NCHW)")


def _same_padding(size: int, stride: int, span: int) -> tuple[int, int]:
    total = max((-(-size // stride) - 1) * stride + span - size, 0)
    return total // 2, total - total // 2


def _filter_size(c: _Choices, most: int, label: str) -> int:
    """1 to ``most``, 2 first (where it fits): a filter of one pixel has no padding to get wrong."""
    return c.choice(tuple(v for v in (2, 3, 1, 4, 5) if v <= most), label)


def _window_geometry(c: _Choices, implicit: bool, dilation: tuple[int, int] = (1, 1)) -> dict:
    """An input's height and width, a filter that fits it dilated, a padding (explicit: up to 3,
    narrower than the dilated filter, which NNAPI's CPU implementation requires of convolutions
    and pools; or a scheme), strides up to 3, and the output's height and width."""
    dil_w, dil_h = dilation
    h, w = c.integer(1, 5, "height"), c.integer(1, 5, "width")
    kh, kw = _filter_size(c, (h - 1) // dil_h + 1, "filter height"), _filter_size(c, (w - 1) // dil_w + 1, "filter width")
    span_h, span_w = (kh - 1) * dil_h + 1, (kw - 1) * dil_w + 1
    strides = (c.integer(1, 3, "stride w"), c.integer(1, 3, "stride h"))
    if implicit:
        scheme = c.choice((1, 2), "padding scheme (1 SAME, 2 VALID)")
        (left, right), (top, bottom) = ((_same_padding(w, strides[0], span_w), _same_padding(h, strides[1], span_h))
                                        if scheme == 1 else ((0, 0), (0, 0)))
        padding: tuple[int, ...] = (scheme,)
    else:
        # one pixel first (where the filter is wider): the windows over the padding are what padding bugs change
        left, right = (c.choice(tuple(v for v in (1, 0, 2, 3) if v < span_w), f"pad {side}") for side in ("left", "right"))
        top, bottom = (c.choice(tuple(v for v in (1, 0, 2, 3) if v < span_h), f"pad {side}") for side in ("top", "bottom"))
        padding = (left, right, top, bottom)
    out_h = (h + top + bottom - span_h) // strides[1] + 1
    out_w = (w + left + right - span_w) // strides[0] + 1
    return {"h": h, "w": w, "kh": kh, "kw": kw, "strides": strides, "padding": padding, "out": (out_h, out_w)}


def _shapes(n: int, depth: int, h: int, w: int, depth_out: int, out: tuple[int, int], nchw: bool):
    """The input's and the output's shapes in the layout."""
    if nchw:
        return (n, depth, h, w), (n, depth_out, *out)
    return (n, h, w, depth), (n, *out, depth_out)


def _conv_filter(draw, c: _Choices, case: _Case, caps: Capabilities, type: OperandType, in_quant, shape, channel_dim: int):
    """A convolution's filter and bias operands: the data type's, or a per-channel quantized filter
    (scales along ``channel_dim``, a bias of scale 0) when the driver declares the type."""
    depth_out = shape[channel_dim]
    if type in QUANT_TYPES and PER_CHANNEL in caps.operand_types and c.boolean("per-channel filter"):
        scales = tuple(c.choice(_CHANNEL_SCALES, f"filter scale {i}") for i in range(depth_out))
        filt = case.operand(PER_CHANNEL, draw(_small_ints("int8", shape, 127), label="filter"),
                            how=c.choice(_HOW[1:], "filter given as"), label="filter",
                            channel_quant=SymmPerChannelQuantParams(scales, channel_dim))
        bias = case.operand(I32, draw(_small_ints("int32", (depth_out,), 1000), label="bias"), how="copy")
        return filt, bias, " per-channel"
    f_quant = c.quantization(type, "filter")
    filt = case.operand(type, draw(arrays(type, shape), label="filter"), f_quant, c.choice(_HOW[1:], "filter given as"))
    bias_type, bias, bias_quant = _bias(draw, type, in_quant, f_quant, depth_out)
    return filt, case.operand(bias_type, bias, bias_quant, "copy"), ""


def _tail(case: _Case, activation: int, layout: bool | None, dilation: tuple[int, int] | None = None) -> list[int]:
    scalars = [case.b.scalar(activation)]
    if layout is not None:
        scalars.append(case.b.constant(OperandType.BOOL, layout))
    if dilation is not None:
        scalars += [case.b.scalar(dilation[0]), case.b.scalar(dilation[1])]
    return scalars


def _depths(c: _Choices, label: str) -> int:
    """Up to 9 half the time (past one and two vector blocks of 4, or one of 8), small otherwise."""
    return 9 if c.boolean(f"wide {label}") else c.integer(1, 3, label)


@st.composite
def depthwise_conv_2d_models(draw, caps: Capabilities) -> ModelCase:
    """DEPTHWISE_CONV_2D in each signature (explicit padding or a scheme, with the layout flag, then
    dilation factors), depth multipliers 1 to 3, a per-channel filter (scales along dimension 3)
    when declared."""
    c = _start(draw)
    type = c.type("depthwise_conv_2d", caps)
    implicit = c.boolean("implicit padding")
    layout = _layouts(c, caps)
    dilated = layout is not None and c.boolean("dilation inputs")
    dilation = (c.integer(1, 3, "dilation w"), c.integer(1, 3, "dilation h")) if dilated else (1, 1)
    depth = _depths(c, "input depth")
    # up to 18 output channels: a per-channel filter's scales are a choice each (`_CHOICE_BYTES`)
    multiplier, n = c.choice((2, 1, 3) if depth <= 3 else (2, 1), "depth multiplier"), c.integer(1, 2, "batches")
    geo = _window_geometry(c, implicit, dilation)
    in_shape, out_shape = _shapes(n, depth, geo["h"], geo["w"], depth * multiplier, geo["out"], bool(layout))
    case = _Case(c)
    in_quant = c.quantization(type, "input")
    x = case.operand(type, draw(arrays(type, in_shape), label="input"), in_quant, label="input")
    f, bias, per_channel = _conv_filter(draw, c, case, caps, type, in_quant, (1, geo["kh"], geo["kw"], depth * multiplier), 3)
    scalars = [case.b.scalar(v) for v in (*geo["padding"], *geo["strides"], multiplier)]
    scalars += _tail(case, c.integer(0, 3, "activation"), layout, dilation if dilated else None)
    case.output(OperationType.DEPTHWISE_CONV_2D, [x, f, bias, *scalars], type, out_shape, c.quantization(type, "output"))
    form = ("SAME" if geo["padding"] == (1,) else "VALID" if implicit else "explicit") + (" NCHW" if layout else "")
    return case.done([out_shape], f"DEPTHWISE_CONV_2D {type.name} {form} x{multiplier}"
                                  f"{f' dilation {dilation}' if dilated else ''}{per_channel}")


@st.composite
def grouped_conv_2d_models(draw, caps: Capabilities) -> ModelCase:
    """GROUPED_CONV_2D with 1 to 3 groups of 1 to 3 input and output channels each, explicit padding
    or a scheme, the layout flag (not optional), a per-channel filter when declared."""
    c = _start(draw)
    type = c.type("grouped_conv_2d", caps)
    implicit = c.boolean("implicit padding")
    layout = _layouts(c, caps, required=True)
    groups, depth_group = c.choice((2, 3, 1), "groups"), c.integer(1, 3, "input channels per group")
    per_group, n = c.choice((2, 1, 3), "output channels per group"), c.integer(1, 2, "batches")
    geo = _window_geometry(c, implicit)
    depth_out = groups * per_group
    in_shape, out_shape = _shapes(n, groups * depth_group, geo["h"], geo["w"], depth_out, geo["out"], bool(layout))
    case = _Case(c)
    in_quant = c.quantization(type, "input")
    x = case.operand(type, draw(arrays(type, in_shape), label="input"), in_quant, label="input")
    f, bias, per_channel = _conv_filter(draw, c, case, caps, type, in_quant, (depth_out, geo["kh"], geo["kw"], depth_group), 0)
    scalars = [case.b.scalar(v) for v in (*geo["padding"], *geo["strides"], groups)]
    scalars += _tail(case, c.integer(0, 3, "activation"), layout)
    case.output(OperationType.GROUPED_CONV_2D, [x, f, bias, *scalars], type, out_shape, c.quantization(type, "output"))
    form = ("SAME" if geo["padding"] == (1,) else "VALID" if implicit else "explicit") + (" NCHW" if layout else "")
    return case.done([out_shape], f"GROUPED_CONV_2D {type.name} {form} {groups} groups{per_channel}")


@st.composite
def transpose_conv_2d_models(draw, caps: Capabilities) -> ModelCase:
    """TRANSPOSE_CONV_2D with explicit padding (narrower than the filter, the output at least a
    pixel), or with an output shape and a scheme when the driver declares TENSOR_INT32: SAME for
    an output of stride x (size - 1) + 1 to stride x size pixels (its padding then follows the
    output's size), VALID for stride x (size - 1) + filter; the layout flag (not optional), strides
    up to 3, a per-channel filter when declared."""
    c = _start(draw)
    type = c.type("transpose_conv_2d", caps)
    implicit = I32 in caps.operand_types and c.boolean("output shape and padding scheme")
    layout = bool(_layouts(c, caps, required=True))
    depth, depth_out, n = _depths(c, "input depth"), c.integer(1, 3, "output depth"), c.integer(1, 2, "batches")
    h, w = c.integer(1, 4, "height"), c.integer(1, 4, "width")
    kh, kw = c.integer(1, 4, "filter height"), c.integer(1, 4, "filter width")
    strides = (c.integer(1, 3, "stride w"), c.integer(1, 3, "stride h"))
    out: list[int] = []
    padding: tuple[int, ...] = ()
    if implicit:
        scheme = c.choice((1, 2), "padding scheme (1 SAME, 2 VALID)")
        for size, kernel, stride, axis in ((h, kh, strides[1], "h"), (w, kw, strides[0], "w")):
            out.append(stride * (size - 1) + c.integer(1, stride, f"output {axis} past the last stride")
                       if scheme == 1 else stride * (size - 1) + kernel)
        padding = (scheme,)
    else:
        pads = []
        for size, kernel, stride, axis in ((w, kw, strides[0], "w"), (h, kh, strides[1], "h")):
            full = stride * (size - 1) + kernel
            start = c.integer(0, min(3, kernel - 1), f"pad {axis} head")
            end = c.integer(0, min(3, kernel - 1, full - start - 1), f"pad {axis} tail")
            pads.append((start, end))
        (left, right), (top, bottom) = pads
        padding = (left, right, top, bottom)
        out = [strides[1] * (h - 1) + kh - top - bottom, strides[0] * (w - 1) + kw - left - right]
    in_shape, out_shape = _shapes(n, depth, h, w, depth_out, (out[0], out[1]), layout)
    case = _Case(c)
    in_quant = c.quantization(type, "input")
    x = case.operand(type, draw(arrays(type, in_shape), label="input"), in_quant, label="input")
    f, bias, per_channel = _conv_filter(draw, c, case, caps, type, in_quant, (depth_out, kh, kw, depth), 0)
    head: list[int] = []
    if implicit:
        head.append(case.operand(I32, np.asarray(out_shape, np.int32), how=c.choice(_HOW, "output shape given as"),
                                 label="output shape"))
    head += [case.b.scalar(v) for v in (*padding, *strides)]
    scalars = head + _tail(case, c.integer(0, 3, "activation"), layout)
    case.output(OperationType.TRANSPOSE_CONV_2D, [x, f, bias, *scalars], type, out_shape, c.quantization(type, "output"))
    form = ("SAME" if padding == (1,) else "VALID" if implicit else "explicit") + (" NCHW" if layout else "")
    return case.done([out_shape], f"TRANSPOSE_CONV_2D {type.name} {form} stride {strides}{per_channel}")


@functools.lru_cache(maxsize=64)
def pooling_models(caps: Capabilities, op: OperationType) -> st.SearchStrategy[ModelCase]:
    """AVERAGE_POOL_2D, MAX_POOL_2D or L2_POOL_2D (``op``; each a family of its own, so each has its
    examples in every run) in each signature (explicit padding narrower than the filter, or a
    scheme; the layout flag when BOOL is declared), filters up to the input's size, strides up to
    3; a quantized output keeps the input's scale and zeroPoint (NNAPI)."""
    return _pooling_models(caps, op)


@st.composite
def _pooling_models(draw, caps: Capabilities, op: OperationType) -> ModelCase:
    c = _start(draw)
    type = c.type(op.name.lower(), caps)
    implicit = c.boolean("implicit padding")
    layout = _layouts(c, caps)
    depth, n = _depths(c, "depth"), c.integer(1, 2, "batches")
    geo = _window_geometry(c, implicit)
    in_shape, out_shape = _shapes(n, depth, geo["h"], geo["w"], depth, geo["out"], bool(layout))
    case = _Case(c)
    quant = c.quantization(type, "input and output")
    x = case.operand(type, draw(arrays(type, in_shape), label="input"), quant, label="input")
    scalars = [case.b.scalar(v) for v in (*geo["padding"], *geo["strides"], geo["kw"], geo["kh"])]
    scalars += _tail(case, c.integer(0, 3, "activation"), layout)
    case.output(op, [x, *scalars], type, out_shape, quant)
    form = ("SAME" if geo["padding"] == (1,) else "VALID" if implicit else "explicit") + (" NCHW" if layout else "")
    return case.done([out_shape], f"{op.name} {type.name} {form} filter {geo['kh']}x{geo['kw']}")


#: Scale factors a RESIZE model may be given: enlarging, shrinking, and not a power of two.
_RESIZE_SCALES = (2.0, 0.5, 1.5, 0.75, 3.0, 1.25)


@functools.lru_cache(maxsize=64)
def resize_models(caps: Capabilities, op: OperationType) -> st.SearchStrategy[ModelCase]:
    """RESIZE_BILINEAR or RESIZE_NEAREST_NEIGHBOR (``op``, a family each): to a size (INT32) or by
    scale factors (FLOAT32, FLOAT16 for a TENSOR_FLOAT16 input, when declared), the layout flag
    (RESIZE_NEAREST_NEIGHBOR's not optional), align_corners or half_pixel_centers (not both);
    inputs up to 5 pixels a side, outputs up to 9; a quantized output keeps the input's
    scale and zeroPoint (NNAPI)."""
    return _resize_models(caps, op)


@st.composite
def _resize_models(draw, caps: Capabilities, op: OperationType) -> ModelCase:
    c = _start(draw)
    type = c.type(op.name.lower(), caps)
    factor_type = OperandType.FLOAT16 if type == OperandType.TENSOR_FLOAT16 else OperandType.FLOAT32
    # align_corners or half_pixel_centers (each after the layout flag, a BOOL): half the time the one that
    # changes this operation's positions most (bilinear's half pixel, nearest's rounding), a quarter the other
    flags: tuple[bool, ...] = ()
    if OperandType.BOOL in caps.operand_types:
        half_first = op == OperationType.RESIZE_BILINEAR
        main, other = ((False, True), (True, False)) if half_first else ((True, False), (False, True))
        flags = c.choice((main, other, main, ()), "align_corners, half_pixel_centers")
        if flags == (True, False) and half_first and c.boolean("align_corners alone"):
            flags = (True,)  # the 5-input form
    layout = _layouts(c, caps, required=bool(flags) or op == OperationType.RESIZE_NEAREST_NEIGHBOR)
    depth, n = c.integer(1, 3, "depth"), c.integer(1, 2, "batches")
    h, w = c.integer(1, 5, "height"), c.integer(1, 5, "width")
    by_scale = factor_type in caps.operand_types and c.boolean("by scale factors")
    if by_scale:  # NNAPI: floor(size x factor), the product in float32 as its CPU implementation has it
        factors = []
        for size, axis in ((w, "width"), (h, "height")):
            usable = tuple(f for f in _RESIZE_SCALES if np.floor(np.float32(size) * np.float32(f)) >= 1)
            factors.append(c.choice(usable, f"{axis} factor"))
        out_w, out_h = (int(np.floor(np.float32(size) * np.float32(f))) for size, f in zip((w, h), factors))
    else:
        out_h, out_w = c.integer(1, 9, "output height"), c.integer(1, 9, "output width")
    in_shape, out_shape = _shapes(n, depth, h, w, depth, (out_h, out_w), bool(layout))
    case = _Case(c)
    quant = c.quantization(type, "input and output")
    x = case.operand(type, draw(arrays(type, in_shape), label="input"), quant, label="input")
    sizes = ([case.b.constant(factor_type, f) for f in factors] if by_scale else
             [case.b.scalar(out_w), case.b.scalar(out_h)])
    booleans = [case.b.constant(OperandType.BOOL, v) for v in ((layout, *flags) if layout is not None else ())]
    case.output(op, [x, *sizes, *booleans], type, out_shape, quant)
    named = dict(zip(("align_corners", "half_pixel_centers"), flags))
    return case.done([out_shape], f"{op.name} {type.name} {'by scale' if by_scale else 'to size'}"
                                  f"{' NCHW' if layout else ''}{''.join(f' {k}' for k, v in named.items() if v)}")


FAMILIES = {
    "elementwise": (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV),
    "relu": _RELUS,
    "reshape": (OperationType.RESHAPE,),
    "concatenation": (OperationType.CONCATENATION,),
    "fully_connected": (OperationType.FULLY_CONNECTED,),
    "conv_2d": (OperationType.CONV_2D,),
    # the convolutions and the pools
    "depthwise_conv_2d": (OperationType.DEPTHWISE_CONV_2D,),
    "grouped_conv_2d": (OperationType.GROUPED_CONV_2D,),
    "transpose_conv_2d": (OperationType.TRANSPOSE_CONV_2D,),
    **{op.name.lower(): (op,) for op in _POOLS},
    **{op.name.lower(): (op,) for op in _RESIZES},
}

_MAKERS: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    "elementwise": elementwise_models,
    "relu": relu_models,
    "reshape": reshape_models,
    "concatenation": concatenation_models,
    "fully_connected": fully_connected_models,
    "conv_2d": conv_2d_models,
    # the convolutions and the pools
    "depthwise_conv_2d": depthwise_conv_2d_models,
    "grouped_conv_2d": grouped_conv_2d_models,
    "transpose_conv_2d": transpose_conv_2d_models,
    **{op.name.lower(): functools.partial(pooling_models, op=op) for op in _POOLS},
    **{op.name.lower(): functools.partial(resize_models, op=op) for op in _RESIZES},
}


#: Families whose models may hold a tensor constant of the operation's own data (a filter, a bias,
#: a weight, an operand given as a constant), not only of its parameters (a shape, an axis): what a
#: test of constants draws from, since a driver that mishandles weights shows it there.
WEIGHTED_FAMILIES: Final = frozenset({"elementwise", "concatenation", "fully_connected", "conv_2d", "depthwise_conv_2d",
                                      "grouped_conv_2d", "transpose_conv_2d", "prelu", "binary_function", "comparison",
                                      "select"})


def weighted_families(caps: Capabilities) -> tuple[str, ...]:
    """The buildable families (`buildable_families`) of `WEIGHTED_FAMILIES`."""
    return tuple(name for name in buildable_families(caps) if name in WEIGHTED_FAMILIES)


def buildable_families(caps: Capabilities) -> tuple[str, ...]:
    """The families a model can be built of for this driver: one of its operations declared, on a
    declared type the operation takes.  A driver may declare an operation and no type it takes
    (RELU with TENSOR_INT32 alone): its models cannot be built, which is no example of anything."""
    def buildable(name: str) -> bool:
        if name == "elementwise":
            return bool(elementwise_operations(caps))
        if name in functions.FAMILIES:
            return bool(functions.operations(caps, name))
        if name in layout.FAMILIES:
            return bool(layout.operations(caps, name))
        if name in reductions.FAMILIES:
            return bool(reductions.operations(caps, name))
        if name in lookups.FAMILIES:
            return bool(lookups.operations(caps, name))
        if name in detection.FAMILIES:
            return bool(detection.operations(caps, name))
        if name in recurrent.FAMILIES:
            return bool(recurrent.operations(caps, name))
        return bool(_supported(caps, *FAMILIES[name])) and bool(family_types(name, caps))
    return tuple(name for name in FAMILIES if buildable(name))


@functools.lru_cache(maxsize=64)
def model_cases(caps: Capabilities, family: str = "") -> st.SearchStrategy[ModelCase]:
    """Any model the driver's declared operations and types allow (of one ``family`` if given);
    without a family, sometimes two of them side by side in one model with two outputs."""
    single = _single_cases(caps, family)
    if single is None:
        return st.nothing()
    if family:
        return single.map(_noted)
    return st.one_of(single, side_by_side_models(single)).map(_noted)


@functools.lru_cache(maxsize=16)
def several_output_cases(caps: Capabilities) -> st.SearchStrategy[ModelCase]:
    """Only models with two or three outputs (of any declared families, shapes and types)."""
    single = _single_cases(caps, "")
    return side_by_side_models(single).map(_noted) if single is not None else st.nothing()


def _single_cases(caps: Capabilities, family: str) -> st.SearchStrategy[ModelCase] | None:
    names = tuple(name for name in buildable_families(caps) if not family or name == family)
    if not names:
        return None
    if len(names) == 1:
        return _MAKERS[names[0]](caps)
    # A family's name, then its models: a strategy whose repr is one line.  Hypothesis writes the repr
    # of the strategy a draw came from into each exception a draw raises (each `assume` that rejects),
    # and one_of's, a dozen families each with the capabilities' repr, passed 30 kB (a HypothesisWarning).
    strategies = {name: _MAKERS[name](caps) for name in names}
    return sampled(names).flatmap(lambda name: strategies[name])


def parameter_input_families(caps: Capabilities) -> tuple[str, ...]:
    """The families whose models can take a parameter as a request input with another value the
    same model takes: RESHAPE's shape, and a fused activation on a type that takes one."""
    return (*(("reshape",) if "reshape" in buildable_families(caps) else ()),
            *(("elementwise",) if elementwise_operations(caps, activation=1) else ()))


@functools.lru_cache(maxsize=16)
def parameter_input_models(caps: Capabilities) -> st.SearchStrategy[ModelCase]:
    """Models with a parameter given as a request input (RESHAPE's shape, a fused activation), each
    with another value of it (`ModelCase.alternatives`); nothing when the driver can build neither."""
    families = parameter_input_families(caps)
    parts = ([reshape_models(caps, shape_how="input")] if "reshape" in families else []) + \
            ([elementwise_models(caps, activation_input=True)] if "elementwise" in families else [])
    return st.one_of(parts).map(_noted) if parts else st.nothing()


_THIRD_MODEL = st.booleans()


@st.composite
def side_by_side_models(draw, cases: st.SearchStrategy[ModelCase]) -> ModelCase:
    """Two independent models side by side, or three: one model with the inputs and outputs of
    all, so outputs of different shapes and types come back from one execution, sometimes more of
    them than a driver's fixed table of two would hold."""
    case = _side_by_side(draw(cases, label="first model"), draw(cases, label="second model"))
    third = draw(_THIRD_MODEL, label="a third model")
    if third:
        case = _side_by_side(case, draw(cases, label="third model"))
    event(f"{3 if third else 2} models side by side")
    return case


def _side_by_side(first: ModelCase, second: ModelCase) -> ModelCase:
    shift = len(first.subgraph.operands)
    values_at = len(first.operand_values) + (-len(first.operand_values) % 8)
    pool_at = len(first.pool_data) + (-len(first.pool_data) % 8)
    operands = list(first.subgraph.operands)
    for operand in second.subgraph.operands:
        loc = operand.location
        if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
            loc = replace(loc, offset=loc.offset + values_at)
        elif operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
            loc = replace(loc, offset=loc.offset + pool_at)
        operands.append(replace(operand, location=loc))
    operations = (*first.subgraph.operations,
                  *(replace(o, inputs=tuple(i + shift for i in o.inputs), outputs=tuple(i + shift for i in o.outputs))
                    for o in second.subgraph.operations))
    subgraph = Subgraph(tuple(operands), operations,
                        first.subgraph.input_indexes + tuple(i + shift for i in second.subgraph.input_indexes),
                        first.subgraph.output_indexes + tuple(i + shift for i in second.subgraph.output_indexes))
    values = first.operand_values + b"\0" * (values_at - len(first.operand_values)) + second.operand_values
    pool = first.pool_data + b"\0" * (pool_at - len(first.pool_data)) + second.pool_data if second.pool_data else first.pool_data
    return ModelCase(subgraph, values, pool, first.inputs + second.inputs, first.output_shapes + second.output_shapes,
                     f"{first.label} | {second.label}", first.choices + second.choices)


def twice_over(case: ModelCase) -> ModelCase:
    """The model beside itself: each of its operations twice, in one model (POOL-4: one answer
    per operation, not per kind of operation)."""
    return _side_by_side(case, case)


#: An operation outside every driver's kernels but its vendor's, that a model is easily made of, for
#: asking a driver about what it does not declare: the HAL's OEM_OPERATION, here on one
#: TENSOR_FLOAT32 input and an output of its shape, which the reference does not implement.
OUTSIDE_OPERATIONS = (OperationType.OEM_OPERATION,)


@functools.lru_cache(maxsize=16)
def outside_models(op: OperationType) -> st.SearchStrategy[ModelCase]:
    """Models of one `OUTSIDE_OPERATIONS` operation.  Only for POOL-4's question of what a driver
    reports and prepares: the reference runs none of them, so nothing judges their results."""
    if op not in OUTSIDE_OPERATIONS:
        raise ValueError(f"{op.name} is not one of {[o.name for o in OUTSIDE_OPERATIONS]}")
    return _outside_models(op)


@st.composite
def _outside_models(draw, op: OperationType) -> ModelCase:
    c = _start(draw)
    shape = tuple(c.integer(1, 4, f"dimension {axis}") for axis in range(c.integer(1, 3, "rank")))
    case = _Case(c)
    data = case.operand(OperandType.TENSOR_FLOAT32, draw(arrays(OperandType.TENSOR_FLOAT32, shape), label="input"),
                        label="input")
    case.output(op, [data], OperandType.TENSOR_FLOAT32, shape)
    return case.done([shape], f"{op.name} {OperandType.TENSOR_FLOAT32.name}")


def _noted(case: ModelCase) -> ModelCase:
    if current_build_context().is_final:  # the report of a failing example: worth the formatting
        note(f"model: {case.label}; inputs {[v.shape for v in case.inputs]}; outputs {case.output_shapes}")
        note("model choices: " + ", ".join(f"{label} {value!r}" for label, value in case.choices))
    return case


# the activations, element-wise functions, comparisons, logical operations and SELECT: their own module
from . import functions  # noqa: E402  (it builds on this module's helpers)
# the normalizations, reductions, ARGMAX/ARGMIN, CHANNEL_SHUFFLE, FILL and RANK: theirs
from . import reductions  # noqa: E402  (it builds on this module's helpers)

FAMILIES.update(functions.FAMILIES)
_MAKERS.update(functions.MAKERS)
# the shape and layout operations: their own module too
from . import layout  # noqa: E402

FAMILIES.update(layout.FAMILIES)
_MAKERS.update(layout.MAKERS)
FAMILIES.update(reductions.FAMILIES)
_MAKERS.update(reductions.MAKERS)
# the lookups (EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION): theirs
from . import lookups  # noqa: E402

FAMILIES.update(lookups.FAMILIES)
_MAKERS.update(lookups.MAKERS)
# the detection and region operations (NMS, proposals, box transforms, ROI_ALIGN, ROI_POOLING, keypoints): theirs
from . import detection  # noqa: E402

FAMILIES.update(detection.FAMILIES)
_MAKERS.update(detection.MAKERS)
# the recurrent operations (RNN, SVDF, the sequence RNNs, the LSTMs): theirs
from . import recurrent  # noqa: E402

FAMILIES.update(recurrent.FAMILIES)
_MAKERS.update(recurrent.MAKERS)
