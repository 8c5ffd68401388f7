"""How far a correct driver's arithmetic may be from the reference's (SPEC CHOICE-7).

The reference computes every operation in float64 and rounds once to the output type.  A
correct driver may sum in float32 in any order, fuse multiply-adds, or compute FLOAT16 in
float16; its error then grows with the number and the magnitude of the terms that make up
each element, not with the result, which cancellation can make arbitrarily small.  So:

- Floats: ``|driver - reference| <= n * eps(type) * M + eps(type) * |reference|`` per element,
  with float16's eps for TENSOR_FLOAT32 in a relaxed model (`float_format`),
  where ``M`` is the sum of the magnitudes of the terms.  ``M`` is computed by running the
  same model on the reference with every float value replaced by its magnitude, SUB by ADD and
  fused activations off (`magnitude_scenario`): the same kernels then add up ``|terms|``.
  ``n`` counts the terms along the model (`terms_in_model`).
- Quantized: 1 step per element at the output, plus what 1 step of rounding in each quantized
  intermediate can become at the output (`quantized_tolerances`): a tie rounded the other way
  in an intermediate with a coarser scale than the output is several output steps.  Over a
  tensor with at least `BIAS_MIN_ELEMENTS` unsaturated elements computed from a uniform sample of
  values (`Scenario.sampled_values`) the mean signed error (each element's error clipped to one
  step) stays within `BIAS_LIMIT` steps, so truncation fails.  Over values a search chose the mean
  is not judged: a correct driver a step off at one value (a fixed-point multiplier, a tie rounded
  up) shows a mean of a whole step over a tensor of that value's copies.
- Integers: exact (wrap-around at 32 bits included).
- Transcendental functions (CHOICE-7: a bound of their own): a driver's ``exp``, ``tanh`` or
  ``pow`` is a few ulps from the exact value, more than one rounding, so each counts the terms
  of `TRANSCENDENTAL_TERMS`.  The functions whose values stay within 1 (TANH, SIN, ELU's negative
  side, SOFTMAX) are judged absolutely, as a formula such as ``exp(x) - 1`` computes them: in the
  magnitude run they become LOGISTIC of their input, whose value is in [0.5, 1).  POW's base
  becomes max(|b|, 1/|b|) there, so that ``b ** |e|`` is at least as large as ``|b ** e|``, and
  LOG_SOFTMAX becomes EXP of its input, at least 1 and growing with |x|.
- RESIZE_BILINEAR weighs four pixels at a position a correct driver may compute a few ulps otherwise
  (`resize_bilinear_terms`): the terms count the input's height and width, and the magnitude run
  gives each pixel the largest magnitude around it (`_neighbourhood_maxima`).
- The recurrent operations (RNN, SVDF, the LSTMs, over their time steps) count the terms of
  each step's gates times the steps (`recurrent_terms`); in the magnitude run their activation is
  off (|tanh z| <= |z|, and the clamps add no error) and their gates' sigmoids of magnitudes are
  at least 1/2, above their slope of 1/4.
- INSTANCE_NORMALIZATION centres and divides, so its error grows with its plane's statistics, not
  with sums of magnitudes: the magnitude run replaces it by RELU of its bound's own ``M``, computed
  here from its input (`instance_normalization_magnitudes`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from harness.api.hal import (
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    conv_2d_has_padding_scheme,
    dimensions_at_execution,
    is_fully_specified,
    is_quantized_type,
    numpy_dtype,
)
from harness.judging import recurrent_terms
from harness.judging.scenario import MemorySpec, Scenario

__all__ = ["BIAS_LIMIT", "BIAS_MIN_ELEMENTS", "FLOAT_TYPES", "float_format", "instance_normalization_magnitudes",
           "magnitude_scenario", "quantized_tolerances", "terms_in_model"]

FLOAT_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)
BIAS_MIN_ELEMENTS = 32
BIAS_LIMIT = 0.25

_ELEMENTWISE = (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV)
#: Where an operation's fused activation code is, among its inputs (CONV_2D: see `_activation_input`).
_ACTIVATION_INPUT = {OperationType.ADD: 2, OperationType.SUB: 2, OperationType.MUL: 2, OperationType.DIV: 2,
                     OperationType.FULLY_CONNECTED: 3, **recurrent_terms.ACTIVATION_INPUT}
#: Clamps: on magnitudes (never negative) RELU is the identity, and so is every clamp the magnitude
#: run stands for, since clamping never adds error.
_CLAMPS = (OperationType.RELU1, OperationType.RELU6)


#: Ulps a correct driver's function may be from the exact value, counted as terms (`terms_in_model`).
TRANSCENDENTAL_TERMS = {OperationType.LOGISTIC: 4, OperationType.TANH: 4, OperationType.ELU: 4, OperationType.EXP: 4,
                        OperationType.LOG: 4, OperationType.SIN: 8, OperationType.SQRT: 2, OperationType.RSQRT: 4,
                        OperationType.POW: 16, OperationType.HARD_SWISH: 2, OperationType.PRELU: 1,
                        OperationType.SOFTMAX: 16, OperationType.LOG_SOFTMAX: 32}
#: Bounded functions judged absolutely: LOGISTIC of their input stands for them in the magnitude run.
#: Operations that decide (a threshold, a maximum, NMS) and transform boxes with an exponential: on
#: magnitudes they would decide otherwise, so the magnitude run keeps their inputs and their bound is
#: relative to their outputs.  Their models keep every decision a margin from its threshold and every
#: box coordinate at least 1/8 of its terms (|centre| + half its size; `harness.strategies.detection`),
#: so a coordinate's error of a few roundings of its terms is within this many roundings of itself.
DECIDING_TERMS = {OperationType.AXIS_ALIGNED_BBOX_TRANSFORM: 64, OperationType.BOX_WITH_NMS_LIMIT: 1,
                  OperationType.GENERATE_PROPOSALS: 64, OperationType.DETECTION_POSTPROCESSING: 64,
                  OperationType.HEATMAP_MAX_KEYPOINT: 64}
#: ROI_ALIGN: 4 pixels per bilinear sample, up to 2 x 2 samples per bin (its models draw sampling
#: ratios and bins so), and the average's division; on magnitudes it sums |terms| like any weighted sum.
ROI_ALIGN_TERMS = 4 * 4 + 2
_ABSOLUTE = (OperationType.TANH, OperationType.SIN, OperationType.ELU, OperationType.SOFTMAX)
#: What an input's quantization step can become at the output of these (the largest slope).
_SLOPES = {OperationType.LOGISTIC: 0.25, OperationType.TANH: 1.0, OperationType.HARD_SWISH: 1.5, OperationType.SOFTMAX: 1.0}

_QUANT_RANGE = {OperandType.TENSOR_QUANT8_ASYMM: (0, 255), OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
                OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127)}


def float_format(operand_type: OperandType, relaxed: bool) -> np.finfo:
    """The float format a correct driver may compute an output of ``operand_type`` in: its own, or
    float16 for TENSOR_FLOAT32 in a model with relaxComputationFloat32toFloat16 (NeuralNetworks.h:
    "the range and precision of the IEEE 754 16-bit floating-point format")."""
    if relaxed and operand_type == OperandType.TENSOR_FLOAT32:
        return np.finfo(np.float16)
    return np.finfo(numpy_dtype(operand_type))


def _activation_input(scenario: Scenario, operation: Operation) -> int | None:
    inputs = [scenario.subgraph.operands[i] for i in operation.inputs]
    if operation.type in _WINDOWED:
        return _windowed_activation_input(operation.type, inputs)
    if operation.type != OperationType.CONV_2D:
        return _ACTIVATION_INPUT.get(operation.type)
    return 6 if conv_2d_has_padding_scheme(inputs) else 9


# --------------------------------------------------------------------------- convolutions and pools

_POOLS = (OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D, OperationType.L2_POOL_2D)
_WINDOWED = (OperationType.DEPTHWISE_CONV_2D, OperationType.GROUPED_CONV_2D, OperationType.TRANSPOSE_CONV_2D, *_POOLS)


def _windowed_activation_input(kind: OperationType, inputs) -> int:
    """Where NeuralNetworks.h puts the fused activation of each signature of these operations."""
    count = len(inputs)
    if kind == OperationType.DEPTHWISE_CONV_2D:
        implicit = count == 8 or (count in (9, 11) and inputs[8].type == OperandType.BOOL)
        return 7 if implicit else 10
    if kind == OperationType.GROUPED_CONV_2D:
        return 7 if count == 9 else 10
    if kind == OperationType.TRANSPOSE_CONV_2D:
        return 7 if count == 9 else 9
    return 6 if count in (7, 8) else 9  # the pools


def _windowed_terms(scenario: Scenario, operation: Operation) -> int:
    """Rounded terms of one output element: the filter's taps (times the depth a tap sums over)
    and the bias, or a pool's window and its division (and L2's square root)."""
    operands = scenario.subgraph.operands
    if operation.type in _POOLS:
        at = 4 if len(operation.inputs) in (7, 8) else 7  # the filter width, then its height
        window = 1
        for i in (at, at + 1):
            size = operand_value(scenario, operation.inputs[i]) if i < len(operation.inputs) else None
            window *= int(size[0]) if size is not None and size.size else 32  # a size given by no value the scenario holds
        return max(window, 1) + (2 if operation.type == OperationType.L2_POOL_2D else 1)
    filt = operands[operation.inputs[1]].dimensions
    if len(filt) != 4 or not all(filt[1:]):
        return 1025
    taps = filt[1] * filt[2]
    return taps * (1 if operation.type == OperationType.DEPTHWISE_CONV_2D else filt[3]) + 1


def _location_of(scenario: Scenario, index: int) -> tuple[str, int, int, int] | None:
    """Where operand ``index``'s bytes are: ("values" | "constant" | "request", pool, offset, length)."""
    operand = scenario.subgraph.operands[index]
    loc = operand.location
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        return ("values", 0, loc.offset, loc.length)
    if operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        return ("constant", loc.pool_index, loc.offset, loc.length)
    if operand.lifetime == OperandLifeTime.SUBGRAPH_INPUT:
        position = scenario.subgraph.input_indexes.index(index)
        argument = scenario.inputs[position] if position < len(scenario.inputs) else None
        if argument is None or argument.has_no_value:
            return None
        pool = argument.location.pool_index
        if not 0 <= pool < len(scenario.request_pools) or not isinstance(scenario.request_pools[pool], MemorySpec):
            return None  # a driver-managed buffer: its bytes are not in the scenario
        return ("request", pool, argument.location.offset, argument.location.length)
    return None


def operand_value(scenario: Scenario, index: int) -> np.ndarray | None:
    """The value of a constant or input operand as stored (None when the scenario does not hold it)."""
    where = _location_of(scenario, index)
    if where is None:
        return None
    kind, pool, offset, length = where
    source = (scenario.operand_values if kind == "values" else
              scenario.constant_pools[pool].content if kind == "constant" else
              scenario.request_pools[pool].content)  # type: ignore[union-attr]
    raw = source[offset: offset + length]
    dtype = np.dtype(numpy_dtype(scenario.subgraph.operands[index].type))
    if len(raw) % dtype.itemsize:
        return None
    return np.frombuffer(raw, dtype)


def magnitude_scenario(scenario: Scenario) -> Scenario | None:
    """The same model on magnitudes: float values made absolute, SUB turned into ADD, fused
    activations off.  Run on the reference, each output element is the sum of the magnitudes
    of its terms.  None when some float value is not in the scenario (a driver-managed buffer)."""
    values = bytearray(scenario.operand_values)
    constants = [bytearray(p.content) for p in scenario.constant_pools]
    requests = [bytearray(p.content) if isinstance(p, MemorySpec) else bytearray() for p in scenario.request_pools]
    stores = {"values": lambda pool: values, "constant": lambda pool: constants[pool], "request": lambda pool: requests[pool]}

    def rewrite(index: int, transform) -> bool:
        where = _location_of(scenario, index)
        if where is None:
            return False
        kind, pool, offset, length = where
        store = stores[kind](pool)
        dtype = np.dtype(numpy_dtype(scenario.subgraph.operands[index].type))
        old = np.frombuffer(bytes(store[offset: offset + length]), dtype)
        store[offset: offset + length] = transform(old).astype(dtype).tobytes()
        return True

    operations = []
    # a deciding operation's inputs stay as they are: on magnitudes its decisions would differ
    as_they_are = {i for operation in scenario.subgraph.operations if operation.type in DECIDING_TERMS
                   for i in operation.inputs}
    for operation in scenario.subgraph.operations:
        if operation.type == OperationType.INSTANCE_NORMALIZATION:
            # its magnitudes are not a run on magnitudes: computed from its input, then passed on as they are
            magnitudes = instance_normalization_magnitudes(scenario, operation)
            if magnitudes is None or not rewrite(operation.inputs[0], lambda old, m=magnitudes: m.reshape(-1)):
                return None
            operations.append(replace(operation, type=OperationType.RELU, inputs=operation.inputs[:1]))
            continue
        if operation.type == OperationType.RESIZE_BILINEAR and _location_of(scenario, operation.inputs[0]) is not None:
            # (an input computed by another operation keeps its magnitudes: the weighted ones bound it less tightly)
            rewrite(operation.inputs[0], lambda old, op=operation: _neighbourhood_maxima(scenario, op, old))
        code = _activation_input(scenario, operation)
        if code is not None and code < len(operation.inputs):
            if not rewrite(operation.inputs[code], np.zeros_like):
                return None
        # on magnitudes the largest stands for the smallest too: it bounds whichever element is picked
        kind = {OperationType.SUB: OperationType.ADD, OperationType.REDUCE_MIN: OperationType.REDUCE_MAX,
                **{c: OperationType.RELU for c in _CLAMPS}}.get(operation.type)
        if operation.type in _ABSOLUTE:
            operation = replace(operation, type=OperationType.LOGISTIC, inputs=operation.inputs[:1])
        elif operation.type == OperationType.LOG_SOFTMAX:  # its error grows with |beta * x| and the log of the sum
            operation = replace(operation, type=OperationType.EXP, inputs=operation.inputs[:1])
        elif operation.type == OperationType.POW and not rewrite(operation.inputs[0], _away_from_one):
            return None
        operations.append(replace(operation, type=kind) if kind is not None else operation)
    for index, operand in enumerate(scenario.subgraph.operands):
        if operand.type in FLOAT_TYPES and index not in as_they_are and operand.lifetime in (
                OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE, OperandLifeTime.SUBGRAPH_INPUT):
            if not rewrite(index, np.abs):
                return None
    return replace(
        scenario,
        subgraph=replace(scenario.subgraph, operations=tuple(operations)),
        operand_values=bytes(values),
        constant_pools=tuple(replace(p, content=bytes(c)) for p, c in zip(scenario.constant_pools, constants)),
        request_pools=tuple(replace(p, content=bytes(c)) if isinstance(p, MemorySpec) else p
                            for p, c in zip(scenario.request_pools, requests)),
    )


# --------------------------------------------------------------------------- RESIZE_BILINEAR

#: Input pixels a bilinear output's position may be off by before counting it (an unknown size).
_UNKNOWN_SIDE = 64


def resize_bilinear_terms(scenario: Scenario, operation: Operation) -> int:
    """Rounded terms of one RESIZE_BILINEAR output element (CHOICE-7).

    Four weighted pixels, and the position they are weighed at: NNAPI places output y at
    ``y * scale`` with the scale rounded to float32, and a correct driver may compute it otherwise
    (``y / (out / in)``, in float32), a few ulps of a position up to the input's size apart.  That
    moves the result by the same fraction of the difference of two neighbours, up to about
    ``4 * eps * (height + width)`` times the largest neighbour, which the magnitude run gives
    (`_neighbourhood_maxima`)."""
    dims = scenario.subgraph.operands[operation.inputs[0]].dimensions
    nchw = _flag_value(scenario, operation, 3)
    sides = (dims[2:4] if nchw else dims[1:3]) if len(dims) == 4 else ()
    side_sum = sum(sides) if len(sides) == 2 and all(sides) else 2 * _UNKNOWN_SIDE
    return 4 + 4 * side_sum


def _flag_value(scenario: Scenario, operation: Operation, position: int) -> bool:
    if len(operation.inputs) <= position:
        return False
    value = operand_value(scenario, operation.inputs[position])
    return bool(value is not None and value.size and value.reshape(-1)[0])


def _neighbourhood_maxima(scenario: Scenario, operation: Operation, old: np.ndarray) -> np.ndarray:
    """RESIZE_BILINEAR's input on the magnitude run: each pixel's magnitude replaced by the largest
    in the 3 x 3 pixels around it, so that each of the four pixels an output weighs holds the largest
    of the four, and their weighted sum bounds what a shifted weight can move."""
    dims = scenario.subgraph.operands[operation.inputs[0]].dimensions
    if len(dims) != 4 or not all(dims) or old.size != math.prod(dims):
        return np.abs(old)
    image = np.abs(old.astype(np.float64)).reshape(dims)
    axes = (2, 3) if _flag_value(scenario, operation, 3) else (1, 2)
    padded = np.pad(image, [(1, 1) if a in axes else (0, 0) for a in range(4)])
    largest = np.zeros_like(image)
    for dy in range(3):
        for dx in range(3):
            index = [slice(None)] * 4
            index[axes[0]] = slice(dy, dy + dims[axes[0]])
            index[axes[1]] = slice(dx, dx + dims[axes[1]])
            np.maximum(largest, padded[tuple(index)], out=largest)
    return largest.reshape(-1).astype(old.dtype)


def _away_from_one(base: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        magnitude = np.abs(base.astype(np.float64))
        return np.maximum(magnitude, 1 / magnitude)


def terms_in_model(scenario: Scenario) -> int:
    """How many rounded terms can make up one output element, summed over the operations."""
    operands = scenario.subgraph.operands
    total = 0
    for operation in scenario.subgraph.operations:
        if operation.type in _ELEMENTWISE:
            total += 1
        elif operation.type in TRANSCENDENTAL_TERMS:
            total += TRANSCENDENTAL_TERMS[operation.type]
        elif operation.type == OperationType.FULLY_CONNECTED:
            weights = operands[operation.inputs[1]].dimensions
            total += (weights[1] if len(weights) == 2 and weights[1] else 1024) + 1
        elif operation.type == OperationType.CONV_2D:
            filt = operands[operation.inputs[1]].dimensions
            total += (math.prod(filt[1:]) if len(filt) == 4 and all(filt[1:]) else 1024) + 1
        elif operation.type in _WINDOWED:
            total += _windowed_terms(scenario, operation)
        elif operation.type == OperationType.RESIZE_BILINEAR:
            total += resize_bilinear_terms(scenario, operation)
        elif operation.type in DECIDING_TERMS:
            total += DECIDING_TERMS[operation.type]
        elif operation.type == OperationType.ROI_ALIGN:
            total += ROI_ALIGN_TERMS
        elif operation.type in recurrent_terms.RECURRENT:
            total += recurrent_terms.terms(scenario.subgraph, operation)
        elif operation.type in _NORMALIZATIONS or operation.type in _REDUCTIONS or \
                operation.type == OperationType.INSTANCE_NORMALIZATION:
            total += normalization_terms(scenario, operation)
    return max(total, 1)


# --------------------------------------------------------------------------- normalizations and reductions

#: On magnitudes these give |reference| (L2: |x| / |x|'s norm; LRN, its bias and alpha positive: |x| /
#: (bias + alpha * s) ** beta), so the magnitude run's output is the M of their bound.
_NORMALIZATIONS = (OperationType.L2_NORMALIZATION, OperationType.LOCAL_RESPONSE_NORMALIZATION)
#: MEAN and REDUCE_SUM on magnitudes give the (averaged) sum of |terms|, REDUCE_PROD |product|.
_SUMMING = (OperationType.MEAN, OperationType.REDUCE_SUM, OperationType.REDUCE_PROD)
_REDUCTIONS = (*_SUMMING, OperationType.REDUCE_MAX, OperationType.REDUCE_MIN)
#: Terms for an unknown count (a shape or parameter not in the scenario).
_UNKNOWN_TERMS = 1024


def _reduced_count(scenario: Scenario, operation: Operation) -> int:
    """How many elements one output element of a reduction takes (every element, when unknown)."""
    dims = scenario.subgraph.operands[operation.inputs[0]].dimensions
    if not dims or not all(dims):
        return _UNKNOWN_TERMS
    axes = operand_value(scenario, operation.inputs[1])
    if axes is None:
        return math.prod(dims)
    named = {int(a) % len(dims) for a in axes if -len(dims) <= int(a) < len(dims)}
    return math.prod(dims[a] for a in named)


def _axis_length(scenario: Scenario, operation: Operation, position: int) -> int:
    """The length of a normalization's axis (its optional axis input at ``position``; the last by default)."""
    dims = scenario.subgraph.operands[operation.inputs[0]].dimensions
    axis_value = operand_value(scenario, operation.inputs[position]) if len(operation.inputs) > position else None
    axis = int(axis_value[0]) if axis_value is not None and axis_value.size else -1
    if not dims or not -len(dims) <= axis < len(dims) or not dims[axis]:
        return _UNKNOWN_TERMS
    return dims[axis]


def normalization_terms(scenario: Scenario, operation: Operation) -> int:
    """Rounded terms of one output element of a normalization or a reduction (CHOICE-7).

    L2_NORMALIZATION: the n squares summed along the axis (relative error n ulps: all positive),
    the square root (half that, and its own rounding) and the division: n + 3 relative to |x| /
    norm.  LOCAL_RESPONSE_NORMALIZATION: its window of w = min(2 * radius + 1, n) squares gives the
    base (bias + alpha * s) a relative error of w + 1 ulps, which pow multiplies by beta, plus pow's
    own ulps (as `TRANSCENDENTAL_TERMS`) and the division.  MEAN and REDUCE_SUM: k terms summed in
    any order (k ulps of the sum of magnitudes) and MEAN's division; REDUCE_PROD: k products, k
    ulps relative.  REDUCE_MAX and REDUCE_MIN pick a value: no rounding of their own.
    """
    kind = operation.type
    if kind == OperationType.L2_NORMALIZATION:
        return _axis_length(scenario, operation, 1) + 3
    if kind == OperationType.LOCAL_RESPONSE_NORMALIZATION:
        radius, beta = (operand_value(scenario, operation.inputs[i]) for i in (1, 4))
        window = min(2 * int(radius[0]) + 1, _axis_length(scenario, operation, 5)) if radius is not None and radius.size \
            else _UNKNOWN_TERMS
        exponent = abs(float(beta[0])) if beta is not None and beta.size else 4.0
        return math.ceil(max(exponent, 1.0) * (window + 1)) + 16 + 1
    if kind == OperationType.INSTANCE_NORMALIZATION:
        return _plane_size(scenario, operation) + 3
    if kind in _SUMMING:
        return _reduced_count(scenario, operation) + 1
    return 0


def _plane_axes(scenario: Scenario, operation: Operation) -> tuple[int, int] | None:
    """The axes of INSTANCE_NORMALIZATION's planes: H and W of NHWC or of NCHW by its layout flag."""
    layout = operand_value(scenario, operation.inputs[4]) if len(operation.inputs) > 4 else None
    if layout is None or not layout.size:
        return None
    return (2, 3) if bool(layout[0]) else (1, 2)


def _input_dimensions(scenario: Scenario, index: int) -> tuple[int, ...]:
    """Operand ``index``'s dimensions, those a request gives filling the model's unknown ones."""
    operand = scenario.subgraph.operands[index]
    if operand.lifetime != OperandLifeTime.SUBGRAPH_INPUT or is_fully_specified(operand.type, operand.dimensions):
        return tuple(operand.dimensions)
    position = scenario.subgraph.input_indexes.index(index)
    if position >= len(scenario.inputs):
        return tuple(operand.dimensions)
    return dimensions_at_execution(operand.dimensions, scenario.inputs[position].dimensions)


def _plane_size(scenario: Scenario, operation: Operation) -> int:
    """Elements in one of INSTANCE_NORMALIZATION's planes (the largest two axes' when the layout is unknown)."""
    dims = _input_dimensions(scenario, operation.inputs[0])
    if len(dims) != 4 or not all(dims):
        return _UNKNOWN_TERMS
    axes = _plane_axes(scenario, operation)
    return dims[axes[0]] * dims[axes[1]] if axes is not None else math.prod(sorted(dims)[2:])


def instance_normalization_magnitudes(scenario: Scenario, operation: Operation) -> np.ndarray | None:
    """The ``M`` of INSTANCE_NORMALIZATION's bound (CHOICE-7), per element: what, times its
    `normalization_terms` ``n + 3`` and eps (twice the unit roundoff u), bounds a correct driver's
    error beyond the final rounding.  None when its input or parameters are not in the scenario,
    or its input feeds another operation or is an output (its values are replaced).

    Per plane of n elements x with mean mu, centred c = x - mu, variance v, mean of squares Q and
    mean magnitude A, and r = 1 / sqrt(v + epsilon):

    - the mean, n terms summed in any order, is off by d <= (n + 1) u A; each centred value by
      d + u |c| (the subtraction's rounding);
    - the variance, two-pass (mean of the centred squares: d cancels to first order) or one-pass
      (mean of squares minus the squared mean, which cancels: 2 A d more), is off by at most
      V = ((3n + 6) u + ((n + 1) u) ** 2) Q;
    - so v + epsilon is off by t = (V + u (v + epsilon)) / (v + epsilon) relative, and while
      t <= 1/2, 1 / sqrt of it by at most t (0.83 t at worst, where linearising says t / 2),
      plus a few ulps of the square root and the division;
    - the output, c * (gamma * r) + beta, is then off by |gamma| r (d + |c| (t + 8 u)) besides its
      final rounding, which the oracle's eps * |reference| covers.

    So M = |gamma| r (A + |c| (t / u + 8) / (n + 3)): times (n + 3) and eps = 2u it is twice that,
    the slack taking in the second-order terms (the computed r is up to 1.5 r) and a relaxed model's
    inputs rounded to float16.  Where t > 1/2 (a plane whose squares dwarf its variance plus
    epsilon: one-pass variance may lose every digit) M is infinite, and the element is not judged.
    Epsilon at least 1e-3 keeps that to nearly constant planes far from 0 (`reductions`).
    """
    operands = scenario.subgraph.operands
    x_index = operation.inputs[0]
    if len(operation.inputs) != 5 or x_index in scenario.subgraph.output_indexes or sum(
            x_index in other.inputs for other in scenario.subgraph.operations) != 1:
        return None
    dims = _input_dimensions(scenario, x_index)
    stored = operand_value(scenario, x_index)
    gamma, _, epsilon = (operand_value(scenario, i) for i in operation.inputs[1:4])
    axes = _plane_axes(scenario, operation)
    if stored is None or gamma is None or epsilon is None or axes is None or not gamma.size or not epsilon.size or \
            len(dims) != 4 or stored.size != math.prod(dims):
        return None
    u = float(float_format(operands[x_index].type, scenario.relaxed).eps) / 2
    x = stored.astype(np.float64).reshape(dims)
    if x.size == 0:
        return x
    n = dims[axes[0]] * dims[axes[1]]
    with np.errstate(all="ignore"):
        mean = x.mean(axis=axes, keepdims=True)
        centred = x - mean
        variance = np.mean(centred * centred, axis=axes, keepdims=True)
        squares = np.mean(x * x, axis=axes, keepdims=True)
        absolute = np.mean(np.abs(x), axis=axes, keepdims=True)
        denominator = variance + float(epsilon[0])
        variance_error = ((3 * n + 6) * u + ((n + 1) * u) ** 2) * squares
        relative = (variance_error + u * denominator) / denominator
        scale = abs(float(gamma[0])) / np.sqrt(denominator)
        magnitudes = scale * (absolute + np.abs(centred) * (relative / u + 8) / (n + 3))
        sane = (denominator > 0) & (relative <= 0.5)
        return np.where(np.broadcast_to(sane, x.shape) & np.isfinite(magnitudes), magnitudes, np.inf)


def _largest_real(scenario: Scenario, index: int) -> float:
    """A bound on |real value| of a quantized operand: from its values when the scenario has
    them, otherwise from its type's range."""
    operand = scenario.subgraph.operands[index]
    value = operand_value(scenario, index)
    if value is not None and value.size:
        return float(np.max(np.abs(value.astype(np.float64) - operand.zero_point)) * operand.scale)
    low, high = _QUANT_RANGE.get(operand.type, (0, 0))
    scale = max(operand.channel_quant.scales) if operand.channel_quant is not None else operand.scale
    return max(abs(low - operand.zero_point), abs(high - operand.zero_point)) * scale


def quantized_tolerances(scenario: Scenario) -> dict[int, int]:
    """Per quantized output operand: how many steps a correct driver may be from the reference.

    Every quantized operation may round its result one step away; that step, in a temporary,
    reaches the output scaled by what the later operations do to it.
    """
    operands = scenario.subgraph.operands
    error: dict[int, float] = {}  # real-valued error bound of each computed operand
    for operation in scenario.subgraph.operations:
        ins = [i for i in operation.inputs if is_quantized_type(operands[i].type)]
        carried = [error.get(i, 0.0) for i in operation.inputs]
        if operation.type in (OperationType.ADD, OperationType.SUB):
            propagated = sum(carried[:2])
        elif operation.type == OperationType.MUL:
            a, b = operation.inputs[:2]
            propagated = carried[0] * _largest_real(scenario, b) + carried[1] * _largest_real(scenario, a) + carried[0] * carried[1]
        elif operation.type in (OperationType.FULLY_CONNECTED, OperationType.CONV_2D, OperationType.GROUPED_CONV_2D,
                                OperationType.TRANSPOSE_CONV_2D, OperationType.DEPTHWISE_CONV_2D):
            weights = operation.inputs[1]
            value = operand_value(scenario, weights)
            w = operands[weights]
            # the output channel's axis: 0, but DEPTHWISE_CONV_2D's filter [1, h, w, depth_out] has it last
            # (a transposed convolution's output sums over part of its row: the row bounds it)
            axis = 3 if operation.type == OperationType.DEPTHWISE_CONV_2D else 0
            # a per-channel filter (a scale per output channel) and its input scale set the bias scale of
            # each channel; a rounding step of the input grows by each channel's weight sum
            row_scales = (np.asarray(w.channel_quant.scales, np.float64)[:, None] if w.channel_quant is not None
                          else w.scale)
            if value is not None and value.size and len(w.dimensions) > axis and all(w.dimensions):
                rows = np.moveaxis(value.astype(np.float64).reshape(w.dimensions), axis, 0).reshape(w.dimensions[axis], -1)
                gain = float((np.abs(rows - w.zero_point) * row_scales).sum(axis=1).max())
            else:
                others = [d for i, d in enumerate(w.dimensions) if i != axis and d]
                gain = _largest_real(scenario, weights) * max(math.prod(others) or 1, 1)
            propagated = carried[0] * gain
        elif operation.type == OperationType.PRELU:
            propagated = carried[0] * max(_largest_real(scenario, operation.inputs[1]), 1.0) + carried[1] * _largest_real(
                scenario, operation.inputs[0])
        elif operation.type == OperationType.L2_NORMALIZATION:
            # a step of the input moves x / |x| by a step over the slice's norm, which can be as small as a
            # step: an input that carries error leaves any output in [-1, 1] possible
            propagated = 2.0 if carried[0] else 0.0
        else:  # RELU, RELU1, RELU6, RESHAPE, CONCATENATION, MAXIMUM, SELECT, the pools, the resizes
            # (weights summing to 1), CHANNEL_SHUFFLE, MEAN (an average of errors), REDUCE_MAX and
            # REDUCE_MIN (a value picked)...: an input's error passes through
            propagated = max(carried, default=0.0) * _SLOPES.get(operation.type, 1.0)
        for out in operation.outputs:  # each output of SPLIT or TOPK_V2 carries what its input did
            own = operands[out].scale if is_quantized_type(operands[out].type) else 0.0
            error[out] = propagated + own if ins or own else 0.0
    tolerances = {}
    for index in scenario.subgraph.output_indexes:
        operand = operands[index]
        if is_quantized_type(operand.type) and operand.scale > 0:
            tolerances[index] = max(1, math.ceil(error.get(index, operand.scale) / operand.scale - 1e-9))
    return tolerances
