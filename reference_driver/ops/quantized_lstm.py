"""QUANTIZED_16BIT_LSTM (HAL 1.2) and QUANTIZED_LSTM (HAL 1.3), as NeuralNetworks.h defines them,
in the integer arithmetic of NNAPI's CPU implementation (whose golden examples a driver is
judged by): one LSTM step, with no floating point once the scales are turned into multipliers.

The arithmetic is 16- and 32-bit fixed point: a value of type Q(i) is an int16 (or int32) raw
integer r standing for r / 2^(bits - 1 - i), with i integer bits.  A product of Q(a) and Q(b) is
a Q(a + b) computed by the saturating rounding doubling high multiplication; a rescale to fewer
integer bits is a saturating left shift, to more a rounding right shift (halves away from zero);
the logistic and tanh functions take a Q(i) and give a Q(0) by the exp / Newton-Raphson scheme of
gemmlowp's fixed-point library, exactly.  Arrays hold these raw integers as int64, wrapped or
saturated to their width where the 16- and 32-bit arithmetic would be.

QUANTIZED_16BIT_LSTM: uint8 input and output (scale 1/128, zeroPoint 128), uint8 weights sharing
one scale and zeroPoint, int32 biases (scale weights/128), int16 cell state (scale 2^-11: four
integer bits).  Each gate's accumulator (the row [input | previous output] against the gate's
weights laid [recurrent | input-to], the pairing of NNAPI's CPU implementation that its golden
examples hold) is rescaled to Q(3); sigmoid gates, a tanh modulation, the
new state ``forget · state + input · modulation`` saturated in Q(4), and the output ``output gate ·
tanh(state)`` rounded to 8 bits.

QUANTIZED_LSTM: int8 input and output state, int8 symmetric weights, int16 cell state of scale 2^k
(-15 ≤ k ≤ -9), optional CIFG (no input gate: it is 1 - forget), peephole, layer normalization and
projection.  Each gate sums input and recurrent products rescaled to its intermediate scale (Q(3)
int16), adds the peephole term, applies layer normalization (which brings in the gate bias) and
its sigmoid or tanh; the hidden state is ``output gate · tanh(cell)`` at the hidden state's scale and
zero point, projected (when projection weights are given) to the output.  Without layer
normalization the gate bias joins the accumulator, as in TensorFlow Lite's integer LSTM (NNAPI's
CPU implementation leaves it out; no golden example has that form).  The peepholes of the input
and forget gates read the previous cell state, that of the output gate the new one.  The hidden
state's zero point is subtracted when it is stored and added back by the projection, as NNAPI's
CPU implementation does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from harness.api.hal import OPTIONAL_INPUTS, Operand, OperandLifeTime, OperandType, OperationType

from ._numeric import KernelError, Refusal, first
from .rnn import counts, given, omitted, ranks

QU8, QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
QSYMM8, QSYMM16, TI32 = OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_INT32
INT32, FLOAT32 = OperandType.INT32, OperandType.FLOAT32
I16_MAX = (1 << 15) - 1
#: raw fixed-point integers: arrays, or one value
Ints = np.ndarray | np.integer | int


# --------------------------------------------------------------------------- fixed-point arithmetic


def wrap(x: Ints, bits: int) -> np.ndarray:
    """Two's-complement wrap-around to ``bits``."""
    half = 1 << (bits - 1)
    return (np.asarray(x, np.int64) + half) % (1 << bits) - half


def saturate(x: Ints, bits: int) -> np.ndarray:
    half = 1 << (bits - 1)
    return np.clip(np.asarray(x, np.int64), -half, half - 1)


def truncating_divide(x: Ints, d: int) -> np.ndarray:
    """C's integer division (towards zero) by a positive ``d``."""
    x = np.asarray(x, np.int64)
    return np.sign(x) * (np.abs(x) // d)


def high_mul(a: Ints, b: Ints, bits: int) -> np.ndarray:
    """Saturating rounding doubling high multiplication: round(a · b / 2^(bits - 1)), the one
    overflowing case (both the minimum) saturated."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    low = -(1 << (bits - 1))
    product = a * b
    nudge = np.where(product >= 0, 1 << (bits - 2), 1 - (1 << (bits - 2)))
    return np.where((a == b) & (a == low), -low - 1, truncating_divide(product + nudge, 1 << (bits - 1)))


def divide_by_pot(x: Ints, exponent: int) -> np.ndarray:
    """x / 2^exponent rounded to nearest, halves away from zero."""
    x = np.asarray(x, np.int64)
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def multiply_by_pot(x: Ints, exponent: int, bits: int) -> np.ndarray:
    """x · 2^exponent: a saturating left shift, or a rounding right shift."""
    x = np.asarray(x, np.int64)
    if exponent < 0:
        return divide_by_pot(x, -exponent)
    if exponent == 0:
        return x
    threshold = (1 << (bits - 1 - exponent)) - 1
    shifted = x << exponent
    return np.where(x > threshold, (1 << (bits - 1)) - 1, np.where(x < -threshold, -(1 << (bits - 1)), shifted))


def constant(value: int, bits: int) -> int:
    """A Q0.31 constant at the precision of ``bits``-wide raw integers."""
    return int(divide_by_pot(np.int64(value), 32 - bits)) if bits < 32 else value


def rounding_half_sum(a: Ints, b: Ints) -> np.ndarray:
    total = np.asarray(a, np.int64) + b
    return truncating_divide(total + np.where(total >= 0, 1, -1), 2)


def _exp_quarter(a: Ints, bits: int) -> np.ndarray:
    """exp(a) for a Q(0) a in [-1/4, 0): a Taylor expansion around -1/8."""
    frac = bits - 1
    term, third = constant(1895147668, bits), constant(715827883, bits)  # exp(-1/8), 1/3
    x = wrap(a + (1 << (frac - 3)), bits)
    x2 = high_mul(x, x, bits)
    x3 = high_mul(x2, x, bits)
    x4 = high_mul(x2, x2, bits)
    inner = wrap(high_mul(wrap(multiply_by_pot(x4, -2, bits) + x3, bits), third, bits) + x2, bits)
    total = term + high_mul(term, wrap(x + multiply_by_pot(inner, -1, bits), bits), bits)
    return saturate(total, bits) if bits == 16 else wrap(total, bits)


#: exp(-2^k) for k = -2 … 4, as Q0.31: the factors of exp over a negative value's integer part.
_EXP_FACTORS = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
                (4, 242))


def exp_on_negative_values(a: Ints, integer_bits: int, bits: int) -> np.ndarray:
    """exp(a) as Q(0) for a Q(integer_bits) a ≤ 0."""
    frac = bits - 1 - integer_bits
    quarter = 1 << (frac - 2)
    reduced = wrap((a & (quarter - 1)) - quarter, bits)
    result = _exp_quarter(multiply_by_pot(reduced, integer_bits, bits), bits)
    remainder = wrap(reduced - a, bits)
    for exponent, factor in _EXP_FACTORS:
        if integer_bits > exponent:
            bit = (remainder & (1 << (frac + exponent))) != 0
            result = np.where(bit, high_mul(result, constant(factor, bits), bits), result)
    if integer_bits > 5:
        clamp = constant(-(1 << (36 - integer_bits)), bits)
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, (1 << (bits - 1)) - 1, result)


def _newton_reciprocal(a: Ints, bits: int) -> tuple[np.ndarray, int]:
    """x ≈ 1 / ((1 + a) / 2) as Q(2), for a Q(0) a in [0, 1]; and Q(2)'s one."""
    half_denominator = rounding_half_sum(a, (1 << (bits - 1)) - 1)
    one = 1 << (bits - 3)
    x = wrap(constant(1515870810, bits) + high_mul(half_denominator, constant(-1010580540, bits), bits), bits)
    for _ in range(3):  # 48/17 - 32/17 · d, then three Newton-Raphson steps
        error = wrap(one - high_mul(half_denominator, x, bits), bits)
        x = wrap(x + multiply_by_pot(high_mul(x, error, bits), 2, bits), bits)
    return x, one


def logistic(a: Ints, integer_bits: int, bits: int = 16) -> np.ndarray:
    """1 / (1 + exp(-a)) as Q(0), for a Q(integer_bits) a."""
    a = np.asarray(a, np.int64)
    positive = a > 0
    magnitude = np.where(positive, a, wrap(-a, bits))
    reciprocal, _ = _newton_reciprocal(exp_on_negative_values(wrap(-magnitude, bits), integer_bits, bits), bits)
    if_positive = multiply_by_pot(reciprocal, 1, bits)  # 1 / (1 + x) = (reciprocal of the half sum) / 2
    if_negative = wrap((1 << (bits - 1)) - 1 - if_positive, bits)
    return np.where(a == 0, constant(1 << 30, bits), np.where(positive, if_positive, if_negative))


def tanh(a: Ints, integer_bits: int, bits: int = 16) -> np.ndarray:
    """tanh(a) as Q(0), for a Q(integer_bits) a: (1 - exp(-2|a|)) / (1 + exp(-2|a|)), signed."""
    a = np.asarray(a, np.int64)
    negative = a < 0
    minus_magnitude = np.where(negative, a, wrap(-a, bits))
    # the raw -|a| read with one more integer bit is -2|a|
    reciprocal, one = _newton_reciprocal(exp_on_negative_values(minus_magnitude, integer_bits + 1, bits), bits)
    magnitude = multiply_by_pot(wrap(reciprocal - one, bits), 2, bits)
    return np.where(a == 0, 0, np.where(negative, wrap(-magnitude, bits), magnitude))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """A positive real multiplier as an int32 Q0.31 significand and a power-of-two shift."""
    if real == 0:
        return 0, 0
    significand, shift = math.frexp(real)
    fixed = int(math.floor(abs(significand) * (1 << 31) + 0.5)) * (1 if significand > 0 else -1)
    if fixed == 1 << 31:
        fixed, shift = fixed // 2, shift + 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def multiply_by_quantized(x: Ints, multiplier: int, shift: int) -> np.ndarray:
    """x · multiplier · 2^(shift - 31), rounded, in 32-bit arithmetic."""
    left, right = max(shift, 0), max(-shift, 0)
    return divide_by_pot(high_mul(wrap(np.asarray(x, np.int64) << left, 32), multiplier, 32), right)


# --------------------------------------------------------------------------- shared validation


def _quantization(operand: Operand, scale: float | None, zero_point: int, position: int, role: str,
                  output: bool = False) -> Refusal | None:
    if (scale is None or np.float32(operand.scale) == np.float32(scale)) and operand.zero_point == zero_point:
        return None
    wanted = f"scale {scale}, " if scale is not None else ""
    return Refusal(f"{role} of scale {operand.scale} and zeroPoint {operand.zero_point} (NNAPI: {wanted}"
                   f"zeroPoint {zero_point})", position, output)


def _types(operands: Sequence[Operand], wanted: Sequence[tuple[OperandType, str]], optional: Iterable[int] = (), *,
           output: bool = False) -> Refusal | None:
    skipped = frozenset(optional)
    for position, (kind, role) in enumerate(wanted):
        operand = operands[position]
        if omitted(operand):
            if position in skipped:
                continue
            return Refusal(f"{role} given no value (NNAPI: required)", position, output)
        if operand.type != kind:
            return Refusal(f"{role} of type {operand.type.name} (NNAPI: {kind.name})", position, output)
    return None


def _log2(scale: float) -> int | None:
    """The power of two a scale is (NNAPI's CPU check: within 1e-3 of an integer log2), or None."""
    if scale <= 0:
        return None
    exponent = math.log2(float(np.float32(scale)))
    return round(exponent) if abs(exponent - round(exponent)) < 1e-3 else None


def _shape(array: np.ndarray, shape: Sequence[int], role: str, operation: str) -> None:
    if tuple(np.shape(array)) != tuple(shape):
        raise KernelError(f"{operation}: {role} of shape {tuple(np.shape(array))} (NNAPI: {tuple(shape)})")


# --------------------------------------------------------------------------- QUANTIZED_16BIT_LSTM


_GATES = ("input", "forget", "cell", "output")
SIXTEEN_BIT_SIGNATURE = [(QU8, "input")] + [(QU8, f"input-to-{g} weights") for g in _GATES] + \
    [(QU8, f"recurrent-to-{g} weights") for g in _GATES] + [(TI32, f"{g} gate bias") for g in _GATES] + \
    [(QSYMM16, "previous cell state"), (QU8, "previous output")]
#: NeuralNetworks.h: the input's and the outputs' fixed quantization, and the cell state's scale (four integer bits).
ACTIVATION_QUANTIZATION = (1 / 128, 128)
CELL_STATE_SCALE = 2.0 ** -11


def validate_quantized_16bit_lstm(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    refusal = counts(ins, outs, 15, (2,), "input, 8 weights, 4 biases, previous cell state and output; "
                     "cell state and output") or first((
                         _types(ins, SIXTEEN_BIT_SIGNATURE),
                         _types(outs, [(QSYMM16, "cell state"), (QU8, "output")], output=True),
                         ranks(ins, {i: 2 for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 14)} | {i: 1 for i in range(9, 13)}),
                         ranks(outs, {0: 2, 1: 2}, output=True)))
    if refusal is not None:
        return refusal
    weights = ins[1]
    return first((
        _quantization(ins[0], *ACTIVATION_QUANTIZATION, 0, "input"),
        _quantization(ins[14], *ACTIVATION_QUANTIZATION, 14, "previous output"),
        _quantization(outs[1], *ACTIVATION_QUANTIZATION, 1, "output", True),
        Refusal("weights of scale 0 (NNAPI: positive)", 1) if weights.scale <= 0 else None,
        first(_quantization(ins[i], weights.scale, weights.zero_point, i, "weights (NNAPI: all as input-to-input's)")
              for i in range(2, 9)),
        first(_quantization(ins[i], float(np.float32(weights.scale)) / 128, 0, i, "bias") for i in range(9, 13)),
        _quantization(ins[13], CELL_STATE_SCALE, 0, 13, "previous cell state"),
        _quantization(outs[0], CELL_STATE_SCALE, 0, 0, "cell state", True),
    ))


def run_quantized_16bit_lstm(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                             out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    operation = "QUANTIZED_16BIT_LSTM"
    x = np.asarray(values[0], np.int64)
    prev_out, prev_state = np.asarray(values[14], np.int64), np.asarray(values[13], np.int64)
    if x.ndim != 2 or prev_out.ndim != 2:
        raise KernelError(f"{operation}: input and previous output of ranks {x.ndim}, {prev_out.ndim} (NNAPI: 2)")
    batches, size = x.shape
    units = prev_out.shape[1]
    _shape(prev_out, (batches, units), "previous output", operation)
    _shape(prev_state, (batches, units), "previous cell state", operation)
    zero = ins[1].zero_point
    multiplier, shift = quantize_multiplier(4096 * float(np.float32(ins[9].scale)))  # the accumulator as Q(3)
    # NNAPI's CPU implementation (and so its golden examples) lays the input and the previous output
    # side by side, [input | previous output], against each gate's weights laid [recurrent | input-to]:
    # a column of one meets a column of the other wherever the two sizes differ or the order does.
    side_by_side = np.concatenate((x, prev_out), axis=1) - 128
    gates = []
    for g in range(4):
        w_in, w_rec, bias = (np.asarray(values[i], np.int64) for i in (1 + g, 5 + g, 9 + g))
        _shape(w_in, (units, size), f"input-to-{_GATES[g]} weights", operation)
        _shape(w_rec, (units, units), f"recurrent-to-{_GATES[g]} weights", operation)
        _shape(bias, (units,), f"{_GATES[g]} gate bias", operation)
        accumulator = wrap(bias + side_by_side @ (np.concatenate((w_rec, w_in), axis=1) - zero).T, 32)
        gates.append(saturate(multiply_by_quantized(accumulator, multiplier, shift), 16))
    input_gate, forget_gate, output_gate = (logistic(gates[i], 3) for i in (0, 1, 3))
    modulation = tanh(gates[2], 3)
    state = saturate(multiply_by_pot(high_mul(input_gate, modulation, 16), -4, 16)  # Q(0) -> Q(4)
                     + high_mul(forget_gate, prev_state, 16), 16)
    activation = high_mul(output_gate, tanh(multiply_by_pot(state, 1, 16), 3), 16)  # tanh of the state as Q(3)
    output = np.clip(divide_by_pot(activation, 8), -128, 127) + 128
    return state.astype(np.int16), output.astype(np.uint8)


# --------------------------------------------------------------------------- QUANTIZED_LSTM


QLSTM_SIGNATURE = [(QS8, "input")] + [(QSYMM8, f"input-to-{g} weights") for g in _GATES] + \
    [(QSYMM8, f"recurrent-to-{g} weights") for g in _GATES] + \
    [(QSYMM16, f"cell-to-{g} weights") for g in ("input", "forget", "output")] + \
    [(TI32, f"{g} gate bias") for g in _GATES] + [(QSYMM8, "projection weights"), (TI32, "projection bias"),
                                                  (QS8, "previous output state"), (QSYMM16, "previous cell state")] + \
    [(QSYMM16, f"{g} layer normalization weights") for g in _GATES] + \
    [(FLOAT32, "cell clip"), (FLOAT32, "projection clip")] + \
    [(FLOAT32, f"{g} intermediate scale") for g in _GATES] + \
    [(INT32, "hidden state zeroPoint"), (FLOAT32, "hidden state scale")]
#: the inputs of QUANTIZED_LSTM that may be given no value: the input gate's (CIFG), the peepholes,
#: the input gate bias, the projection and the layer normalizations.
QLSTM_OPTIONAL = OPTIONAL_INPUTS[OperationType.QUANTIZED_LSTM]
#: NNAPI's CPU implementation: tanh of the cell state takes 0 to 6 integer bits (scale 2^-15 to 2^-9).
CELL_SHIFTS = range(-15, -8)


def _qlstm_structure(present: dict[int, bool]) -> Refusal | None:
    """NeuralNetworks.h's all-or-none rules on QUANTIZED_LSTM's optional inputs (True: given a value)."""
    cifg = not present[1]
    if present[1] != present[5]:
        return Refusal("input-to-input and recurrent-to-input weights not both given or both omitted", 5)
    peepholes = [present[i] for i in (9, 10, 11)]
    if any(peepholes) and not (present[10] and present[11] and (present[9] or cifg)):
        return Refusal("peephole weights not all given or all omitted", 9)
    if cifg and present[9]:
        return Refusal("cell-to-input weights with CIFG (NNAPI: omitted)", 9)
    if cifg == present[12]:
        return Refusal("input gate bias " + ("given with CIFG" if cifg else "omitted without CIFG"), 12)
    norms = [present[i] for i in ((21, 22, 23) if cifg else (20, 21, 22, 23))]
    if any(norms) != all(norms):
        return Refusal("layer normalization weights not all given or all omitted", 20)
    if cifg and present[20]:
        return Refusal("input layer normalization weights with CIFG (NNAPI: omitted)", 20)
    if present[17] and not present[16]:
        return Refusal("projection bias without projection weights", 17)
    return None


def validate_quantized_lstm(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    refusal = counts(ins, outs, 32, (3,), "32 inputs (input, weights, peepholes, biases, projection, states, "
                     "layer normalizations, clips, scales, hidden state quantization); output state, cell state "
                     "and output") or first((
                         _types(ins, QLSTM_SIGNATURE, QLSTM_OPTIONAL),
                         _types(outs, [(QS8, "output state"), (QSYMM16, "cell state"), (QS8, "output")], output=True),
                         ranks(ins, {0: 2, **{i: 2 for i in (1, 2, 3, 4, 5, 6, 7, 8, 16, 18, 19)},
                                     **{i: 1 for i in (9, 10, 11, 12, 13, 14, 15, 17, 20, 21, 22, 23)}},
                               optional=QLSTM_OPTIONAL),
                         ranks(outs, {0: 2, 1: 2, 2: 2}, output=True)))
    if refusal is not None:
        return refusal
    shift = _log2(ins[19].scale)
    known = all(ins[i].lifetime != OperandLifeTime.SUBGRAPH_INPUT for i in QLSTM_OPTIONAL)
    return first((
        Refusal(f"previous cell state of scale {ins[19].scale} (NNAPI: a power of two, 2^-15 to 2^-9)", 19)
        if shift not in CELL_SHIFTS else None,
        _qlstm_structure({i: not omitted(ins[i]) for i in QLSTM_OPTIONAL}) if known else None,
        _quantization(outs[1], ins[19].scale, 0, 1, "cell state (NNAPI: the previous cell state's)", True),
        _quantization(outs[0], ins[18].scale, ins[18].zero_point, 0, "output state (NNAPI: the previous one's)", True),
        _quantization(outs[2], ins[18].scale, ins[18].zero_point, 2, "output (NNAPI: the previous output state's)",
                      True),
    ))


def _f32(value: np.ndarray | float) -> np.float32:
    return np.float32(np.asarray(value).reshape(()))


def _layer_norm(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, multiplier: int, shift: int,
                variance_limit: int) -> np.ndarray:
    """Normalise each row of a Q(3) gate to mean 0 and deviation 1, scaled by ``weights`` and shifted
    by ``bias``, in NNAPI's integer arithmetic (means in units of 2^-10)."""
    n = x.shape[1]
    total, squares = x.sum(axis=1), (x * x).sum(axis=1)
    mean = wrap(truncating_divide(total * 1024, n), 32)
    variance = wrap(truncating_divide(squares * ((1 << 20) // n) - mean * mean, 1 << 20), 32)
    variance = np.where(variance < 1, variance_limit, variance)
    rows = []
    for row, (m, v) in enumerate(zip(mean.tolist(), variance.tolist())):
        inverse, inverse_shift = _inverse_sqrt(int(v))
        rescaled = multiply_by_quantized(wrap(1024 * x[row] - m, 32), inverse, inverse_shift)
        scaled = wrap(wrap(rescaled * weights, 32) + bias, 32)
        rounded = truncating_divide(np.where(scaled > 0, scaled + 512, scaled - 512), 1024)
        rows.append(saturate(multiply_by_quantized(wrap(rounded, 32), multiplier, shift + 12), 16))
    return np.array(rows, np.int64).reshape(x.shape)


def _inverse_sqrt(value: int) -> tuple[int, int]:
    """1 / sqrt(value) as a Q0.31 multiplier and a shift (a left shift when positive), by Newton-Raphson
    in Q(3) 32-bit fixed point."""
    if value <= 1:
        return (1 << 31) - 1, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = (32 - value.bit_length() - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    half_input = divide_by_pot(np.int64(value >> 1), 1)
    half_three = (1 << 28) + (1 << 27)
    x: Ints = np.int64(1 << 28)
    for _ in range(5):
        cube = multiply_by_pot(high_mul(high_mul(x, x, 32), x, 32), 6, 32)
        x = multiply_by_pot(wrap(high_mul(half_three, x, 32) - high_mul(half_input, cube, 32), 32), 3, 32)
    result = int(high_mul(x, 1518500250, 32))  # times sqrt(2) / 2
    if shift < 0:
        result, shift = int(wrap(np.int64(result) << -shift, 32)), 0
    return result, -shift


def _matmul(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, scale: float, out_zero: int,
            accumulated: np.ndarray, bits: int) -> np.ndarray:
    """``accumulated`` plus x · weightsᵀ + bias rescaled by ``scale`` (and ``out_zero``), saturated to ``bits``."""
    multiplier, shift = quantize_multiplier(scale)
    total = wrap(x @ weights.T + bias, 32)
    return saturate(multiply_by_quantized(total, multiplier, shift) + out_zero + accumulated, bits)


def run_quantized_lstm(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                       out: np.ndarray | None) -> tuple[np.ndarray, ...]:
    operation = "QUANTIZED_LSTM"
    present = {i: given(values[i]) for i in QLSTM_OPTIONAL}
    refusal = _qlstm_structure(present)
    if refusal is not None:
        raise KernelError(f"{operation}: {refusal.feature}")
    v = [np.asarray(value, np.int64) if not ins[i].type == FLOAT32 else value for i, value in enumerate(values)]
    x, prev_out, prev_cell = v[0], v[18], v[19]
    if x.ndim != 2:
        raise KernelError(f"{operation}: input of rank {x.ndim} (NNAPI: 2)")
    batches, size = x.shape
    units, outputs = v[4].shape[0] if v[4].ndim == 2 else -1, v[8].shape[1] if v[8].ndim == 2 else -1
    for i, shape in {2: (units, size), 3: (units, size), 4: (units, size), 6: (units, outputs), 7: (units, outputs),
                     8: (units, outputs), 13: (units,), 14: (units,), 15: (units,), 18: (batches, outputs),
                     19: (batches, units)}.items():
        _shape(v[i], shape, QLSTM_SIGNATURE[i][1], operation)
    for i, shape in {1: (units, size), 5: (units, outputs), 9: (units,), 10: (units,), 11: (units,), 12: (units,),
                     16: (outputs, units), 17: (outputs,), 20: (units,), 21: (units,), 22: (units,), 23: (units,)}.items():
        if present[i]:
            _shape(v[i], shape, QLSTM_SIGNATURE[i][1], operation)
    cifg, layer_norm = not present[1], present[21]
    cell_shift = _log2(ins[19].scale)
    if cell_shift is None or cell_shift not in CELL_SHIFTS:
        raise KernelError(f"{operation}: cell state scale {ins[19].scale} (NNAPI: 2^-15 to 2^-9)")
    cell_clip, projection_clip = _f32(values[24]), _f32(values[25])
    intermediate = [_f32(values[i]) for i in (26, 27, 28, 29)]
    hidden_zero, hidden_scale = int(np.asarray(values[30]).reshape(())), _f32(values[31])
    in_scale, out_scale = np.float32(ins[0].scale), np.float32(ins[18].scale)
    in_zero, out_zero = ins[0].zero_point, ins[18].zero_point

    def gate(g: int, cell: np.ndarray) -> np.ndarray:
        """Gate ``g`` (0 input, 1 forget, 2 cell, 3 output) before its sigmoid or tanh, as Q(3)."""
        w_in, w_rec, bias = v[1 + g], v[5 + g], v[12 + g]
        folded = np.zeros(units, np.int64) if layer_norm else bias  # without layer normalization the bias joins here
        acc = _matmul(x, w_in, folded + in_zero * -w_in.sum(axis=1), float(np.float32(ins[1 + g].scale) * in_scale
                                                                         / intermediate[g]), 0,
                      np.zeros((batches, units), np.int64), 16)
        acc = _matmul(prev_out, w_rec, out_zero * -w_rec.sum(axis=1),
                      float(np.float32(ins[5 + g].scale) * out_scale / intermediate[g]), 0, acc, 16)
        peephole = {0: 9, 1: 10, 3: 11}.get(g)
        if peephole is not None and present[peephole]:
            multiplier, shift = quantize_multiplier(
                float(np.float32(2.0 ** cell_shift * float(np.float32(ins[peephole].scale)) / float(intermediate[g]))))
            acc = saturate(acc + multiply_by_quantized(wrap(v[peephole] * cell, 32), multiplier, shift), 16)
        if layer_norm:
            norm = ins[20 + g]
            multiplier, shift = quantize_multiplier(float(np.float32(norm.scale)))
            limit = min(1, int(np.float32(10000) * np.float32(norm.scale)))
            acc = _layer_norm(acc, v[20 + g], bias, multiplier, shift, limit)
        return acc

    forget = logistic(gate(1, prev_cell), 3)
    modulation = tanh(gate(2, prev_cell), 3)
    input_gate = wrap(I16_MAX - forget, 16) if cifg else logistic(gate(0, prev_cell), 3)
    cell = saturate(wrap(divide_by_pot(forget * prev_cell, 15), 16)
                    + wrap(divide_by_pot(input_gate * modulation, 30 + cell_shift), 16), 16)
    cell_limit = int(np.clip(cell_clip / np.float32(ins[19].scale), -32768.0, 32767.0)) if cell_clip > 0 else 0
    if cell_limit > 0:  # a clip below one step of the state clips nothing (NNAPI's CPU implementation)
        cell = np.clip(cell, -cell_limit, cell_limit)
    output_gate = logistic(gate(3, cell), 3)
    hidden_multiplier, hidden_shift = quantize_multiplier(float(np.float32(2.0 ** -15 / float(hidden_scale) * 2.0 ** -15)))
    hidden = np.clip(multiply_by_quantized(output_gate * tanh(cell, cell_shift + 15), hidden_multiplier, hidden_shift)
                     - hidden_zero, -128, 127)
    if present[16]:
        weights = v[16]
        bias = (v[17] if present[17] else np.zeros(outputs, np.int64)) + hidden_zero * weights.sum(axis=1)
        output = _matmul(hidden, weights, bias, float(np.float32(ins[16].scale) * hidden_scale / out_scale), out_zero,
                         np.zeros((batches, outputs), np.int64), 8)
        limit = int(np.clip(projection_clip / np.float32(ins[16].scale), -128.0, 127.0)) if projection_clip > 0 else 0
        if limit > 0:
            output = np.clip(output, -limit, limit)
    else:
        if outputs != units:
            raise KernelError(f"{operation}: output size {outputs} differs from {units} units without a projection")
        output = hidden
    output = output.astype(np.int8)
    return output, cell.astype(np.int16), output.copy()


#: operation -> (validate, run), for the operation table (`reference_driver.ops.KERNELS`).
TABLE = {
    OperationType.QUANTIZED_16BIT_LSTM: (validate_quantized_16bit_lstm, run_quantized_16bit_lstm),
    OperationType.QUANTIZED_LSTM: (validate_quantized_lstm, run_quantized_lstm),
}
