"""Models with their input values: one strategy per operation family, chained sometimes.

Each strategy returns a `ModelCase`: the model as data, the input values of this
example, and the shapes the outputs will have (known analytically, so that request
layouts can size output regions without running any driver).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.judging.builders import ModelBuilder
from harness.api.hal import (Capabilities, OperandLifeTime, OperandType, OperationType, Subgraph,
                              SymmPerChannelQuantParams)

from .values import (BOOLEANS, FLOAT_TYPES, QUANT_TYPES, arrays, declared_dimensions, integers, operand_types, quantization,
                     sampled, shapes)

I32 = OperandType.TENSOR_INT32
PER_CHANNEL = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
_HOW = ("input", "copy", "reference")
_ONE_OR_TWO_PAIRS = st.tuples(integers(1, 2), integers(1, 2))
_PADS = st.tuples(*[integers(0, 1)] * 4)
_BROADCASTABLE = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4, max_side=4)


@dataclass(frozen=True)
class ModelCase:
    subgraph: Subgraph
    operand_values: bytes
    pool_data: bytes
    inputs: tuple[np.ndarray, ...]
    output_shapes: tuple[tuple[int, ...], ...]
    label: str


class _Case:
    """A ModelBuilder that also records input values in order."""

    def __init__(self, draw) -> None:
        self.draw = draw
        self.b = ModelBuilder()
        self.values: list[np.ndarray] = []

    def operand(self, type: OperandType, value: np.ndarray, quant=(0.0, 0), how: str = "input", label: str = "",
                channel_quant: SymmPerChannelQuantParams | None = None) -> int:
        if how == "input":
            dims = self.draw(declared_dimensions(value.shape), label=f"{label} declared dims")
            self.values.append(value)
            return self.b.input(type, dims, *quant, channel_quant=channel_quant)
        return self.b.constant(type, value, *quant, by_reference=how == "reference", channel_quant=channel_quant)

    def output(self, op, inputs, type, shape, quant=(0.0, 0), *, final: bool = True) -> int:
        dims = self.draw(declared_dimensions(shape), label=f"{op.name} output declared dims")
        return self.b.operation(op, inputs, type, dims, *quant, output=final)

    def done(self, output_shapes, label: str) -> ModelCase:
        event(f"model: {label}")
        return ModelCase(self.b.subgraph(), bytes(self.b.values), bytes(self.b.pool_data), tuple(self.values),
                         tuple(tuple(s) for s in output_shapes), label)


@functools.lru_cache(maxsize=512)
def _int_arrays(dtype: str, shape: tuple[int, ...], low: int, high: int) -> st.SearchStrategy[np.ndarray]:
    """Element-wise arrays for operands whose own range differs from their type's (biases,
    per-channel filters), one strategy object per shape and range."""
    return hnp.arrays(np.dtype(dtype), shape, elements=integers(low, high))


@functools.lru_cache(maxsize=64)
def _int_lists(low: int, high: int, min_size: int, max_size: int) -> st.SearchStrategy[list[int]]:
    return st.lists(integers(low, high), min_size=min_size, max_size=max_size)


@functools.lru_cache(maxsize=16)
def _channel_scales(channels: int) -> st.SearchStrategy[tuple[float, ...]]:
    return st.tuples(*[sampled((0.02, 0.05, 0.1, 0.25))] * channels)


def _supported(caps: Capabilities, *ops: OperationType) -> tuple[OperationType, ...]:
    return tuple(op for op in ops if op in caps.operations)


@functools.lru_cache(maxsize=64)
def _shapes_of_ranks(ranks: tuple[int, int]) -> st.SearchStrategy:
    """Two shapes of the given ranks, each the trailing axes (all longer than 1) of one full shape."""

    @st.composite
    def pair(draw):
        full = tuple(draw(_int_lists(2, 4, max(ranks), max(ranks)), label="broadcast shape"))
        return hnp.BroadcastableShapes(tuple(full[len(full) - rank :] for rank in ranks), full)

    return pair()


@st.composite
def elementwise_models(draw, caps: Capabilities, activation: int | None = None,
                       op: OperationType | None = None, ranks: tuple[int, int] | None = None) -> ModelCase:
    """ADD/SUB/MUL/DIV with broadcasting, a fused activation, constants by copy or reference,
    sometimes followed by RELU through a temporary of unknown shape."""
    if op is None:
        op = draw(sampled(_supported(caps, OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV)), label="operation")
    # NNAPI: DIV has no quantized form; on TENSOR_INT32 it rounds toward minus infinity.
    allowed = FLOAT_TYPES + (I32,) if op == OperationType.DIV else FLOAT_TYPES + QUANT_TYPES + (I32,)
    type = draw(operand_types(allowed, caps.operand_types), label="type")
    shapes = _shapes_of_ranks(ranks) if ranks else _BROADCASTABLE
    pair = draw(shapes, label="shapes")
    how_a, how_b = draw(sampled((("input", "input"), ("input", "copy"), ("input", "reference"), ("copy", "input"), ("reference", "input"))), label="operands")
    case = _Case(draw)
    a = case.operand(type, draw(arrays(type, pair.input_shapes[0]), label="a"), draw(quantization(type)), how_a, "a")
    b = case.operand(type, draw(arrays(type, pair.input_shapes[1], nonzero=op == OperationType.DIV), label="b"),
                     draw(quantization(type)), how_b, "b")
    if activation is None:
        activation = 0 if type == I32 else draw(integers(0, 3), label="activation")
    elif type == I32:
        type = draw(operand_types([t for t in allowed if t != I32], caps.operand_types), label="non-integer type")
    chain = type != I32 and OperationType.RELU in caps.operations and draw(BOOLEANS, label="chain RELU")
    out_quant = draw(quantization(type), label="output quantization")
    if draw(BOOLEANS, label="activation as a request input"):
        code = case.operand(OperandType.INT32, np.asarray(activation, np.int32), how="input", label="activation")
    else:
        code = case.b.scalar(activation)
    result = case.output(op, [a, b, code], type, pair.result_shape, out_quant, final=not chain)
    if chain:
        case.output(OperationType.RELU, [result], type, pair.result_shape, draw(quantization(type)))
    return case.done([pair.result_shape], f"{op.name}{'+RELU' if chain else ''} {type.name}")


_RELUS = (OperationType.RELU, OperationType.RELU1, OperationType.RELU6)


@st.composite
def relu_models(draw, caps: Capabilities) -> ModelCase:
    """RELU, RELU1 (clamp to [-1, 1]) and RELU6 (clamp to [0, 6]) as operations of their own."""
    op = draw(sampled(_supported(caps, *_RELUS)), label="operation")
    type = draw(operand_types(FLOAT_TYPES + QUANT_TYPES, caps.operand_types), label="type")
    shape = draw(shapes(), label="shape")
    case = _Case(draw)
    x = case.operand(type, draw(arrays(type, shape), label="x"), draw(quantization(type)))
    case.output(op, [x], type, shape, draw(quantization(type)))
    return case.done([shape], f"{op.name} {type.name}")


@st.composite
def reshape_models(draw, caps: Capabilities) -> ModelCase:
    """RESHAPE with the target shape as a constant or as an input (output shape from values)."""
    type = draw(operand_types(FLOAT_TYPES + QUANT_TYPES + (I32,), caps.operand_types), label="type")
    source = draw(shapes(), label="source shape")
    count = int(np.prod(source))
    target = list(draw(st.permutations([d for d in _factor(count)]), label="target factors")) or [1]
    if len(target) > 4:  # NNAPI: RESHAPE's output has rank up to 4 (CHOICE-8)
        target = target[:3] + [int(np.prod(target[3:]))]
    if draw(BOOLEANS, label="infer one axis"):
        target[draw(integers(0, len(target) - 1))] = -1
    resolved = tuple(count // -int(np.prod(target)) if d == -1 else d for d in target)
    case = _Case(draw)
    quant = draw(quantization(type))
    x = case.operand(type, draw(arrays(type, source), label="x"), quant)
    shape_how = draw(sampled(_HOW), label="shape operand")
    shape_operand = case.operand(I32, np.asarray(target, np.int32), how=shape_how, label="shape")
    case.output(OperationType.RESHAPE, [x, shape_operand], type, resolved, quant)
    return case.done([resolved], f"RESHAPE {type.name} shape-{shape_how}")


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
    type = draw(operand_types(FLOAT_TYPES + QUANT_TYPES + (I32,), caps.operand_types), label="type")
    base = draw(shapes(max_rank=3), label="base shape")
    axis = draw(integers(0, len(base) - 1), label="axis")
    sizes = draw(_int_lists(1, 3, 2, 3), label="axis sizes")
    case = _Case(draw)
    operands = []
    for i, size in enumerate(sizes):
        shape = base[:axis] + (size,) + base[axis + 1 :]
        operands.append(case.operand(type, draw(arrays(type, shape), label=f"x{i}"), draw(quantization(type)),
                                     draw(sampled(_HOW)) if i else "input", f"x{i}"))
    out_shape = base[:axis] + (sum(sizes),) + base[axis + 1 :]
    negative = draw(BOOLEANS, label="negative axis")
    axis_value = axis - len(base) if negative else axis
    case.output(OperationType.CONCATENATION, [*operands, case.b.scalar(axis_value)], type, out_shape, draw(quantization(type)))
    return case.done([out_shape], f"CONCATENATION {type.name}")


def _bias(draw, type, in_quant, w_quant, units):
    if type in QUANT_TYPES:
        return I32, draw(_int_arrays("int32", (units,), -1000, 1000), label="bias"), (in_quant[0] * w_quant[0], 0)
    return type, draw(arrays(type, (units,)), label="bias"), (0.0, 0)


@st.composite
def fully_connected_models(draw, caps: Capabilities) -> ModelCase:
    type = draw(operand_types(FLOAT_TYPES + QUANT_TYPES, caps.operand_types), label="type")
    size, units = draw(integers(1, 5), label="input size"), draw(integers(1, 4), label="units")
    # NNAPI flattens an input of rank above 2 to [batch, input size]: the leading axes are the batch.
    leading = tuple(draw(_int_lists(1, 3, 1, 3), label="batch axes"))
    batch = int(np.prod(leading))
    case = _Case(draw)
    in_quant, w_quant = draw(quantization(type)), draw(quantization(type))
    x = case.operand(type, draw(arrays(type, leading + (size,)), label="input"), in_quant)
    w = case.operand(type, draw(arrays(type, (units, size)), label="weights"), w_quant, draw(sampled(_HOW[1:])))
    bias_type, bias, bias_quant = _bias(draw, type, in_quant, w_quant, units)
    bias_operand = case.operand(bias_type, bias, bias_quant, draw(sampled(_HOW[1:])))
    act = case.b.scalar(draw(integers(0, 3), label="activation"))
    case.output(OperationType.FULLY_CONNECTED, [x, w, bias_operand, act], type, (batch, units), draw(quantization(type)))
    return case.done([(batch, units)], f"FULLY_CONNECTED {type.name}")


@st.composite
def conv_2d_models(draw, caps: Capabilities) -> ModelCase:
    """CONV_2D in each NNAPI signature: explicit padding (10 inputs) or a padding scheme (7), each
    optionally with the layout flag (NHWC or NCHW tensors) and then dilation factors; a per-channel
    quantized filter when the driver declares TENSOR_QUANT8_SYMM_PER_CHANNEL."""
    type = draw(operand_types(FLOAT_TYPES + QUANT_TYPES, caps.operand_types), label="type")
    implicit = draw(BOOLEANS, label="implicit padding")
    # the layout flag is a BOOL operand: only for a driver that declares the type
    layouts = (None, False, True) if OperandType.BOOL in caps.operand_types else (None,)
    layout = draw(sampled(layouts), label="layout flag (None: absent, True: NCHW)")
    dilation = (draw(_ONE_OR_TWO_PAIRS, label="dilation w h")
                if layout is not None and draw(BOOLEANS, label="dilation inputs") else None)
    dil_w, dil_h = dilation or (1, 1)
    n, h, w, c, d = (draw(integers(1, hi)) for hi in (2, 5, 5, 3, 3))
    # the dilated filter fits the unpadded input, so every padding and scheme gives an output
    kh, kw = draw(integers(1, (h - 1) // dil_h + 1)), draw(integers(1, (w - 1) // dil_w + 1))
    span_h, span_w = (kh - 1) * dil_h + 1, (kw - 1) * dil_w + 1
    strides = draw(_ONE_OR_TWO_PAIRS, label="strides w h")
    if implicit:
        scheme = draw(sampled((1, 2)), label="padding scheme (1 SAME, 2 VALID)")
        padding: tuple[int, ...] = (scheme,)
        # NNAPI: SAME gives ceil(size / stride) outputs whatever the filter; VALID only whole windows
        out_h, out_w = ((-(-h // strides[1]), -(-w // strides[0])) if scheme == 1 else
                        ((h - span_h) // strides[1] + 1, (w - span_w) // strides[0] + 1))
    else:
        left, right, top, bottom = draw(_PADS, label="pads l r t b")
        padding = (left, right, top, bottom)
        out_h = (h + top + bottom - span_h) // strides[1] + 1
        out_w = (w + left + right - span_w) // strides[0] + 1
    nchw = bool(layout)
    in_shape, out_shape = ((n, c, h, w), (n, d, out_h, out_w)) if nchw else ((n, h, w, c), (n, out_h, out_w, d))
    case = _Case(draw)
    in_quant = draw(quantization(type))
    x = case.operand(type, draw(arrays(type, in_shape), label="input"), in_quant)
    per_channel = (type in QUANT_TYPES and PER_CHANNEL in caps.operand_types
                   and draw(BOOLEANS, label="per-channel filter"))
    if per_channel:
        scales = draw(_channel_scales(d), label="filter scales")
        filt = draw(_int_arrays("int8", (d, kh, kw, c), -127, 127), label="filter")
        f = case.operand(PER_CHANNEL, filt, how=draw(sampled(_HOW[1:])), label="filter",
                         channel_quant=SymmPerChannelQuantParams(scales, 0))
        bias = draw(_int_arrays("int32", (d,), -1000, 1000), label="bias")
        bias_operand = case.operand(I32, bias, how="copy")  # scale 0: input scale x each channel's scale
    else:
        f_quant = draw(quantization(type))
        f = case.operand(type, draw(arrays(type, (d, kh, kw, c)), label="filter"), f_quant, draw(sampled(_HOW[1:])))
        bias_type, bias, bias_quant = _bias(draw, type, in_quant, f_quant, d)
        bias_operand = case.operand(bias_type, bias, bias_quant, "copy")
    scalars = [case.b.scalar(v) for v in (*padding, *strides, draw(integers(0, 3), label="activation"))]
    if layout is not None:
        scalars.append(case.b.constant(OperandType.BOOL, layout))
    if dilation is not None:
        scalars += [case.b.scalar(dil_w), case.b.scalar(dil_h)]
    case.output(OperationType.CONV_2D, [x, f, bias_operand, *scalars], type, out_shape, draw(quantization(type)))
    form = (f"{'SAME' if padding == (1,) else 'VALID'}" if implicit else "explicit") + (" NCHW" if nchw else "")
    extras = (" dilation %dx%d" % dilation if dilation else "") + (" per-channel" if per_channel else "")
    return case.done([out_shape], f"CONV_2D {type.name} {form} stride {strides}{extras}")


FAMILIES = {
    "elementwise": (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV),
    "relu": _RELUS,
    "reshape": (OperationType.RESHAPE,),
    "concatenation": (OperationType.CONCATENATION,),
    "fully_connected": (OperationType.FULLY_CONNECTED,),
    "conv_2d": (OperationType.CONV_2D,),
}

_FAMILIES = [
    ((OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV), elementwise_models),
    (_RELUS, relu_models),
    ((OperationType.RESHAPE,), reshape_models),
    ((OperationType.CONCATENATION,), concatenation_models),
    ((OperationType.FULLY_CONNECTED,), fully_connected_models),
    ((OperationType.CONV_2D,), conv_2d_models),
]


@functools.lru_cache(maxsize=64)
def model_cases(caps: Capabilities, family: str = "") -> st.SearchStrategy[ModelCase]:
    """Any model the driver's declared operations and types allow (of one ``family`` if given);
    without a family, sometimes two of them side by side in one model with two outputs."""
    single = _single_cases(caps, family)
    if single is None:
        return st.nothing()
    if family:
        return single.map(_noted)
    return st.one_of(single, two_output_models(single)).map(_noted)


@functools.lru_cache(maxsize=16)
def several_output_cases(caps: Capabilities) -> st.SearchStrategy[ModelCase]:
    """Only models with two outputs (of any declared families, shapes and types)."""
    single = _single_cases(caps, "")
    return two_output_models(single).map(_noted) if single is not None else st.nothing()


def _single_cases(caps: Capabilities, family: str) -> st.SearchStrategy[ModelCase] | None:
    wanted = FAMILIES.get(family, ())
    families = [make(caps) for ops, make in _FAMILIES if any(op in caps.operations for op in ops)
                and (not family or ops == wanted)]
    return st.one_of(families) if families else None


@st.composite
def two_output_models(draw, cases: st.SearchStrategy[ModelCase]) -> ModelCase:
    """Two independent models side by side: one model with the inputs and outputs of both, so
    outputs of different shapes and types come back from one execution."""
    first, second = draw(cases, label="first model"), draw(cases, label="second model")
    event("two models side by side")
    return _side_by_side(first, second)


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
                     f"{first.label} | {second.label}")


def _noted(case: ModelCase) -> ModelCase:
    note(f"model: {case.label}; inputs {[v.shape for v in case.inputs]}; outputs {case.output_shapes}")
    return case
