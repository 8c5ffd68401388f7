"""The operations over windows of an image: CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D,
TRANSPOSE_CONV_2D, AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D, RESIZE_BILINEAR and
RESIZE_NEAREST_NEIGHBOR, translated to ONNX's Conv, ConvTranspose, pools and Resize (float32).

Resize in linear mode names NNAPI's three placements of RESIZE_BILINEAR's samples (asymmetric,
align_corners, half_pixel); onnxruntime works each position out as x / (out / in) or
x * (in - 1) / (out - 1), where NNAPI's CPU implementation multiplies x by the quotient rounded to
float32: a few ulps of a position apart, which CHOICE-7's bound for the operation counts
(`harness.judging.bounds.resize_bilinear_terms`).

ONNX works on NCHW: an NHWC input is transposed in and its result back out.  Every parameter
scalar must be a constant (it becomes an attribute); `check` raises `Unsupported` otherwise, or
where onnxruntime cannot express NNAPI's operation (a pool's padding as wide as its filter, a
transposed convolution's negative tail padding as long as its stride).  TRANSPOSE_CONV_2D's output
shape input may be a request input: its SAME padding is then worked out in the graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.api.hal import Operand, OperandLifeTime, OperandType, OperationType

from .functions import Builder, Unsupported

F32, I32, INT32, BOOL, FLOAT32 = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.INT32,
                                  OperandType.BOOL, OperandType.FLOAT32)
Op = OperationType
SAME, VALID = 1, 2
_PADS = ("left", "right", "top", "bottom")
_POOLS = {Op.AVERAGE_POOL_2D: "AveragePool", Op.MAX_POOL_2D: "MaxPool", Op.L2_POOL_2D: "AveragePool"}
_RESIZES = {Op.RESIZE_NEAREST_NEIGHBOR: 4, Op.RESIZE_BILINEAR: 3}  # the least number of inputs
CONVOLUTIONS = frozenset({Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D})
OPERATIONS = CONVOLUTIONS | frozenset(_POOLS) | frozenset(_RESIZES) | {Op.TRANSPOSE_CONV_2D}
QU8, QS8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
#: The convolutions' 8-bit form (``QLinearConv``): input, filter and output of one such type (one
#: scale per tensor), the bias TENSOR_INT32 of the input's scale times the filter's, zeroPoint 0;
#: the types the convolutions take beyond the driver's (`Capabilities.operation_types`).
OWN_TYPES: dict[OperationType, frozenset[OperandType]] = {op: frozenset({QU8, QS8})
                                                          for op in (*CONVOLUTIONS, Op.FULLY_CONNECTED)}
#: The 8-bit forms computed on the stored values themselves (``MaxPool``, ``Resize``), their output of
#: the input's scale and zeroPoint (NNAPI); a bilinear sample is rounded to a stored value, one step
#: at most from NNAPI's rounding (CHOICE-7).
_SAME_QUANTIZATION = (Op.MAX_POOL_2D, Op.RESIZE_NEAREST_NEIGHBOR, Op.RESIZE_BILINEAR)
OWN_TYPES.update({op: frozenset({QU8, QS8}) for op in _SAME_QUANTIZATION})
_STORED = {QU8: (np.uint8, 0, 255), QS8: (np.int8, -128, 127)}
#: A fused activation's real range (NONE, RELU, RELU1, RELU6).
_ACTIVATION_RANGE = ((-np.inf, np.inf), (0.0, np.inf), (-1.0, 1.0), (0.0, 6.0))

#: (operation, padding scheme signature) -> (where the parameters start, their names in order,
#: the numbers of inputs NeuralNetworks.h allows).
_SIGNATURES: dict[tuple[OperationType, bool], tuple[int, tuple[str, ...], tuple[int, ...]]] = {
    (Op.CONV_2D, True): (3, ("scheme", "stride_w", "stride_h", "activation", "layout", "dilation_w", "dilation_h"), (7, 8, 10)),
    (Op.CONV_2D, False): (3, (*_PADS, "stride_w", "stride_h", "activation", "layout", "dilation_w", "dilation_h"), (10, 11, 13)),
    (Op.DEPTHWISE_CONV_2D, True): (3, ("scheme", "stride_w", "stride_h", "groups", "activation", "layout", "dilation_w",
                                       "dilation_h"), (8, 9, 11)),
    (Op.DEPTHWISE_CONV_2D, False): (3, (*_PADS, "stride_w", "stride_h", "groups", "activation", "layout", "dilation_w",
                                        "dilation_h"), (11, 12, 14)),
    (Op.GROUPED_CONV_2D, True): (3, ("scheme", "stride_w", "stride_h", "groups", "activation", "layout"), (9,)),
    (Op.GROUPED_CONV_2D, False): (3, (*_PADS, "stride_w", "stride_h", "groups", "activation", "layout"), (12,)),
    # the scheme signature's output shape (input 3) is a tensor, checked on its own (`_check_transpose`)
    (Op.TRANSPOSE_CONV_2D, True): (4, ("scheme", "stride_w", "stride_h", "activation", "layout"), (9,)),
    (Op.TRANSPOSE_CONV_2D, False): (3, (*_PADS, "stride_w", "stride_h", "activation", "layout"), (11,)),
    **{(pool, True): (1, ("scheme", "stride_w", "stride_h", "filter_w", "filter_h", "activation", "layout"), (7, 8))
       for pool in _POOLS},
    **{(pool, False): (1, (*_PADS, "stride_w", "stride_h", "filter_w", "filter_h", "activation", "layout"), (10, 11))
       for pool in _POOLS},
}


def _constant(operand: Operand) -> bool:
    return operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def _need(condition: bool, why: str) -> None:
    if not condition:
        raise Unsupported(why)


def _implicit(kind: OperationType, ins: Sequence[Operand]) -> bool:
    """Whether the signature takes a padding scheme (NeuralNetworks.h tells them apart by count, and
    by the type of the input where an explicit signature has an INT32 and a scheme one the BOOL layout)."""
    if kind in _POOLS:
        return len(ins) in (7, 8)
    if kind == Op.CONV_2D:
        return len(ins) in (7, 8) or (len(ins) == 10 and ins[7].type == BOOL)
    if kind == Op.DEPTHWISE_CONV_2D:
        return len(ins) in (8, 9) or (len(ins) == 11 and ins[8].type == BOOL)
    return len(ins) == 9  # GROUPED_CONV_2D's and TRANSPOSE_CONV_2D's


def _slots(kind: OperationType, ins: Sequence[Operand]) -> dict[str, int]:
    """Parameter name -> the operation input that holds it, for the inputs present."""
    start, names, counts = _SIGNATURES[(kind, _implicit(kind, ins))]
    _need(len(ins) in counts, f"{kind.name}: {len(ins)} inputs")
    return {name: start + offset for offset, name in enumerate(names) if start + offset < len(ins)}


def check(kind: OperationType, ins: Sequence[Operand], outs: Sequence[Operand], values: Mapping[int, np.ndarray],
          indexes: Sequence[int]) -> None:
    """``values`` holds the constants' values by operand index, ``indexes`` the operation's inputs."""
    data, out = ins[0], outs[0]
    quantized = data.type in OWN_TYPES.get(kind, frozenset())
    _need(data.type == F32 and out.type == F32 or quantized and out.type == data.type,
          f"{kind.name}: float32 (or 8-bit quantized, for a convolution, MAX_POOL_2D or a resize) only")
    _need(not quantized or kind not in _SAME_QUANTIZATION or (out.scale, out.zero_point) == (data.scale, data.zero_point),
          f"{kind.name}: an 8-bit output of another scale or zeroPoint than its input's")
    _need(len(data.dimensions) in (0, 4) and len(out.dimensions) in (0, 4), f"{kind.name}: tensors of rank 4")
    if kind in _RESIZES:
        _check_resize(kind, ins, values, indexes)
        return
    slots = _slots(kind, ins)
    for name, at in slots.items():
        wanted = BOOL if name == "layout" else INT32
        _need(ins[at].type == wanted and _constant(ins[at]) and indexes[at] in values,
              f"{kind.name}: its {name} must be a constant {wanted.name}")
    if quantized and kind == Op.MAX_POOL_2D:
        _need(_constant(ins[slots["activation"]]), f"{kind.name}: an 8-bit fused activation given as a constant")
    elif quantized:
        _need(ins[1].type == data.type and ins[1].channel_quant is None and ins[2].type == I32,
              f"{kind.name}: a filter of the input's type, one scale, and a TENSOR_INT32 bias")
        _need(_constant(ins[slots["activation"]]), f"{kind.name}: an 8-bit fused activation given as a constant")
        _need(len(ins[1].dimensions) == 4 and 0 not in ins[1].dimensions, f"{kind.name}: a filter of known shape")
    elif kind in CONVOLUTIONS or kind == Op.TRANSPOSE_CONV_2D:
        _need(ins[1].type == F32 and ins[2].type == F32, f"{kind.name}: float32 filter and bias")
        _need(len(ins[1].dimensions) == 4 and 0 not in ins[1].dimensions, f"{kind.name}: a filter of known shape")
    scalars = {name: int(values[indexes[at]].reshape(-1)[0]) for name, at in slots.items()}
    if "scheme" in scalars:
        _need(scalars["scheme"] in (SAME, VALID), f"{kind.name}: padding scheme {scalars['scheme']}")
    _need(min(v for k, v in scalars.items() if k.startswith(("stride", "dilation", "filter", "groups"))) > 0,
          f"{kind.name}: strides, dilations, filter sizes and groups are positive")
    if kind == Op.DEPTHWISE_CONV_2D:
        _need(ins[1].dimensions[0] == 1 and ins[1].dimensions[3] % scalars["groups"] == 0,
              "DEPTHWISE_CONV_2D: filter depth a multiple of the depth multiplier")
    if kind in _POOLS and "left" in scalars:
        # onnxruntime's pools refuse padding as wide as the filter, which NNAPI allows
        _need(max(scalars["left"], scalars["right"]) < scalars["filter_w"]
              and max(scalars["top"], scalars["bottom"]) < scalars["filter_h"],
              f"{kind.name}: onnxruntime takes no padding as wide as the filter")
    if kind == Op.TRANSPOSE_CONV_2D:
        _check_transpose(ins, values, indexes, scalars)
    elif "left" in scalars:
        _need(min(scalars[p] for p in _PADS) >= 0, f"{kind.name}: negative padding")


def _check_transpose(ins: Sequence[Operand], values: Mapping[int, np.ndarray], indexes: Sequence[int],
                     scalars: Mapping[str, int]) -> None:
    """TRANSPOSE_CONV_2D: the head padding is not negative (NNAPI); a negative tail (which NNAPI's
    CPU implementation allows, the output then longer than the full transposed convolution)
    becomes ConvTranspose's output_padding, which ONNX keeps below the stride.  The scheme
    signature's output shape, a constant, sets the padding attributes; given as an input, its
    padding is worked out in the graph (`_transpose_conv_cropped`)."""
    if "scheme" in scalars:
        shape = ins[3]
        _need(shape.type == I32 and len(shape.dimensions) <= 1, "TRANSPOSE_CONV_2D: an output shape of TENSOR_INT32")
        if not (_constant(shape) and indexes[3] in values):
            return
        _need(values[indexes[3]].size == 4, "TRANSPOSE_CONV_2D: an output shape of 4 values")
    pads = _transpose_pads(ins[1].dimensions[1:3], values[indexes[3]].reshape(-1).tolist() if "scheme" in scalars else None,
                           scalars)
    top, left, bottom, right = pads
    _need(min(top, left) >= 0, "TRANSPOSE_CONV_2D: negative head padding")
    _need(-bottom < scalars["stride_h"] and -right < scalars["stride_w"],
          "TRANSPOSE_CONV_2D: a negative tail padding as long as the stride")


def _transpose_pads(kernel: Sequence[int], output_shape: list[int] | None, scalars: Mapping[str, int]) -> list[int]:
    """[top, left, bottom, right]: the explicit padding, or NNAPI's for the scheme and the output's
    height and width (the output shape input, NHWC or NCHW by the layout flag): SAME pads to
    ceil(size / stride) inputs, the head half the total rounded down, the tail the rest, negative
    where the total is."""
    if output_shape is None:
        return [scalars["top"], scalars["left"], scalars["bottom"], scalars["right"]]
    height, width = output_shape[2:4] if scalars["layout"] else output_shape[1:3]
    _need(min(height, width) > 0, f"TRANSPOSE_CONV_2D: output shape {output_shape}")
    pads = []
    for size, stride, extent in ((height, scalars["stride_h"], kernel[0]), (width, scalars["stride_w"], kernel[1])):
        total = 0 if scalars["scheme"] == VALID else (-(-size // stride) - 1) * stride + extent - size
        pads.append((max(total, 0) // 2, total - max(total, 0) // 2))
    (top, bottom), (left, right) = pads
    return [top, left, bottom, right]


def _check_resize(kind: OperationType, ins: Sequence[Operand], values: Mapping[int, np.ndarray],
                  indexes: Sequence[int]) -> None:
    _need(_RESIZES[kind] <= len(ins) <= 6, f"{kind.name}: {len(ins)} inputs")
    _need(ins[1].type in (INT32, FLOAT32) and ins[2].type == ins[1].type, f"{kind.name}: output size types")
    _need(all(_constant(o) and i in values for o, i in zip(ins[1:], indexes[1:])), f"{kind.name}: constant parameters")
    _need(all(o.type == BOOL for o in ins[3:]), f"{kind.name}: flags of type BOOL")
    flags = [bool(values[i].reshape(-1)[0]) for i in indexes[3:]]
    _need(not (len(flags) == 3 and flags[1] and flags[2]), f"{kind.name}: align_corners and half_pixel_centers both true")
    sizes = [float(values[i].reshape(-1)[0]) for i in indexes[1:3]]
    _need(min(sizes) > 0 and all(np.isfinite(sizes)), f"{kind.name}: positive output sizes")


def _flag(g: Builder, slots: Mapping[str, int], name: str) -> bool:
    return name in slots and bool(g.scalar(slots[name]))


def _nchw(data: str, nchw: bool, g: Builder) -> str:
    return data if nchw else g.node("Transpose", [data], perm=[0, 3, 1, 2])


def _finish(result: str, code_index: int, nchw: bool, target: str, g: Builder, output: Operand | None = None) -> None:
    """The fused activation (on stored values, for an 8-bit ``output``), then the result in the
    operation's layout."""
    if output is not None and output.type in _STORED:
        clipped = quantized_activation(result, output, int(g.scalar(code_index)), g)
        g.emit("Identity" if nchw else "Transpose", [clipped], target, **({} if nchw else {"perm": [0, 2, 3, 1]}))
        return
    if nchw:
        g.activation(result, code_index, target)
    else:
        clipped = f"{target}_nchw"
        g.activation(result, code_index, clipped)
        g.emit("Transpose", [clipped], target, perm=[0, 2, 3, 1])


def _same_padded(data: str, strides: list[int], spans: list[int], g: Builder,
                 fill: float | np.generic = np.float32(0.0)) -> str:
    """NNAPI's SAME padding of an NCHW tensor computed in the graph from its height and width (onnxruntime's
    SAME auto-padding refuses dilation, and the size may be known only at execution): enough for
    ceil(size / stride) outputs, the odd pixel at the end."""
    size = g.node("Gather", [g.node("Shape", [data]), g.const(np.asarray([2, 3], np.int64), "hw")])
    stride = g.const(np.asarray(strides, np.int64), "strides")
    one, zeros = g.const(np.int64(1), "one"), g.const(np.zeros(2, np.int64), "zeros")
    outputs = g.node("Div", [g.node("Sub", [g.node("Add", [size, stride]), one]), stride])
    needed = g.node("Sub", [g.node("Add", [g.node("Mul", [g.node("Sub", [outputs, one]), stride]),
                                           g.const(np.asarray(spans, np.int64), "spans")]), size])
    total = g.node("Max", [needed, zeros])
    before = g.node("Div", [total, g.const(np.full(2, 2, np.int64), "two")])
    after = g.node("Sub", [total, before])
    pads = g.node("Concat", [zeros, before, zeros, after], axis=0)  # batch and channel axes are not padded
    value = fill if isinstance(fill, np.generic) else np.float32(fill)  # the data's own type (a zeroPoint's)
    return g.node("Pad", [data, pads, g.const(value, "fill")])


def translate(kind: OperationType, ins: Sequence[int], out: int, operands: Sequence[Operand],
              values: Mapping[int, np.ndarray], g: Builder) -> None:
    if kind in _RESIZES:
        _resize(kind, ins, out, g)
        return
    slots = _slots(kind, [operands[i] for i in ins])
    slots = {name: ins[at] for name, at in slots.items()}
    scalars = {name: int(values[index].reshape(-1)[0]) for name, index in slots.items()}
    nchw = bool(scalars.get("layout", 0))
    data = _nchw(g.name[ins[0]], nchw, g)
    strides = [scalars["stride_h"], scalars["stride_w"]]
    attributes: dict = {"strides": strides}
    if kind in _POOLS:
        attributes["kernel_shape"] = [scalars["filter_h"], scalars["filter_w"]]
        dims = operands[ins[0]].dimensions
        size = (dims[2], dims[3]) if nchw and dims else (dims[1], dims[2]) if dims else (0, 0)
        if "scheme" in scalars and scalars["scheme"] == SAME and 0 not in size:
            # onnxruntime's SAME auto-padding fails where the window passes the input with padding to spare
            # (a negative total, which NNAPI makes 0): worked out here where the size is known
            (top, bottom), (left, right) = (_same(extent, stride, kernel) for extent, stride, kernel in
                                            ((size[0], scalars["stride_h"], scalars["filter_h"]),
                                             (size[1], scalars["stride_w"], scalars["filter_w"])))
            attributes["pads"] = [top, left, bottom, right]
        elif "scheme" in scalars and scalars["scheme"] == SAME and min(
                scalars["filter_h"] - scalars["stride_h"], scalars["filter_w"] - scalars["stride_w"]) < 0:
            _pool_padded_in_graph(kind, data, strides, attributes["kernel_shape"], slots["activation"], nchw, g.name[out], g,
                                  operands[out])
            return
        elif "scheme" in scalars:
            attributes["auto_pad"] = "SAME_UPPER" if scalars["scheme"] == SAME else "VALID"
        else:
            attributes["pads"] = [scalars["top"], scalars["left"], scalars["bottom"], scalars["right"]]
        if kind == Op.L2_POOL_2D:  # the root of the mean square over the window, padding not counted
            result = g.node("Sqrt", [g.node("AveragePool", [g.node("Mul", [data, data])], **attributes)])
        else:
            result = g.node(_POOLS[kind], [data], **attributes)
        _finish(result, slots["activation"], nchw, g.name[out], g, operands[out])
        return
    kernel = operands[ins[1]].dimensions
    if kind == Op.TRANSPOSE_CONV_2D:
        _transpose_conv(ins, kernel, scalars, values, data, nchw, slots["activation"], g.name[out], g)
        return
    dilations = [scalars.get("dilation_h", 1), scalars.get("dilation_w", 1)]
    attributes["dilations"] = dilations
    if kind == Op.DEPTHWISE_CONV_2D:  # [1, h, w, channels x multiplier] -> one group per input channel
        weights = g.node("Transpose", [g.name[ins[1]]], perm=[3, 0, 1, 2])
        attributes["group"] = kernel[3] // scalars["groups"]
    else:
        weights = g.node("Transpose", [g.name[ins[1]]], perm=[0, 3, 1, 2])  # OHWI -> OIHW
        attributes["group"] = scalars.get("groups", 1)
    if "scheme" in scalars:
        # SAME_UPPER: the odd pixel at the end, as NNAPI; with dilation, padded in the graph (_same_padded)
        same_dilated = scalars["scheme"] == SAME and dilations != [1, 1]
        attributes["auto_pad"] = "VALID" if scalars["scheme"] == VALID or same_dilated else "SAME_UPPER"
        if same_dilated:
            spans = [(kernel[1] - 1) * dilations[0] + 1, (kernel[2] - 1) * dilations[1] + 1]
            x = operands[ins[0]]
            data = _same_padded(data, strides, spans, g, _STORED[x.type][0](x.zero_point) if x.type in _STORED
                                else np.float32(0.0))
    else:
        attributes["pads"] = [scalars["top"], scalars["left"], scalars["bottom"], scalars["right"]]
    x, w, y = (operands[i] for i in (ins[0], ins[1], out))
    if x.type in _STORED:
        result = g.node("QLinearConv", [data, g.const(np.float32(x.scale), "x_scale"), _zero_point(x, g),
                                        weights, g.const(np.float32(w.scale), "w_scale"), _zero_point(w, g),
                                        g.const(np.float32(y.scale), "y_scale"), _zero_point(y, g), g.name[ins[2]]],
                        **attributes)
        clipped = quantized_activation(result, y, scalars["activation"], g)
        g.emit("Identity" if nchw else "Transpose", [clipped], g.name[out], **({} if nchw else {"perm": [0, 2, 3, 1]}))
        return
    result = g.node("Conv", [data, weights, g.name[ins[2]]], **attributes)
    _finish(result, slots["activation"], nchw, g.name[out], g)


def check_quantized_fully_connected(ins: Sequence[Operand], outs: Sequence[Operand]) -> None:
    """An 8-bit FULLY_CONNECTED: input, weights [units, size] (one scale) and output of one 8-bit type,
    a TENSOR_INT32 bias, a constant fused activation."""
    data = ins[0]
    _need(len(ins) == 4 and ins[1].type == data.type and ins[1].channel_quant is None and ins[2].type == I32
          and outs[0].type == data.type and ins[3].type == INT32 and _constant(ins[3]),
          "FULLY_CONNECTED: 8-bit input, weights and output of one type, a TENSOR_INT32 bias, a constant activation")
    _need(len(ins[1].dimensions) == 2 and 0 not in ins[1].dimensions and len(data.dimensions) != 1,
          "FULLY_CONNECTED: weights of known shape")


def quantized_fully_connected(ins: Sequence[int], out: int, operands: Sequence[Operand], g: Builder) -> None:
    """An 8-bit FULLY_CONNECTED as a 1 x 1 ``QLinearConv`` (which takes the bias, where ``QLinearMatMul``
    rounds before any could be added): the input's rows as [rows, size, 1, 1], the weights as
    [units, size, 1, 1], the result's [rows, units, 1, 1] as rows again."""
    x, w, y = (operands[i] for i in (ins[0], ins[1], out))
    units, size = w.dimensions
    rows = g.node("Reshape", [g.name[ins[0]], g.const(np.asarray([-1, size, 1, 1], np.int64), "fc_rows")])
    weights = g.node("Reshape", [g.name[ins[1]], g.const(np.asarray([units, size, 1, 1], np.int64), "fc_weights")])
    result = g.node("QLinearConv", [rows, g.const(np.float32(x.scale), "x_scale"), _zero_point(x, g),
                                    weights, g.const(np.float32(w.scale), "w_scale"), _zero_point(w, g),
                                    g.const(np.float32(y.scale), "y_scale"), _zero_point(y, g), g.name[ins[2]]])
    clipped = quantized_activation(result, y, int(g.scalar(ins[3])), g)
    g.emit("Reshape", [clipped, g.const(np.asarray([-1, units], np.int64), "fc_units")], g.name[out])


def _zero_point(operand: Operand, g: Builder) -> str:
    return g.const(_STORED[operand.type][0](operand.zero_point), "zero_point")


def quantized_activation(result: str, output: Operand, code: int, g: Builder) -> str:
    """The fused activation of an 8-bit result: its real range as stored values (the zeroPoint plus the
    bound over the scale, rounded half away from zero, within the type's range), a Clip on them."""
    dtype, least, most = _STORED[output.type]
    low, high = _ACTIVATION_RANGE[code]
    stored = [least if np.isinf(low) else max(least, output.zero_point + int(np.sign(low) * np.floor(abs(low) / output.scale + 0.5))),
              most if np.isinf(high) else min(most, output.zero_point + int(np.floor(high / output.scale + 0.5)))]
    if stored == [least, most]:
        return result
    return g.node("Clip", [result, g.const(dtype(stored[0]), "act_min"), g.const(dtype(stored[1]), "act_max")])


def _transpose_conv(ins: Sequence[int], kernel: Sequence[int], scalars: Mapping[str, int],
                    values: Mapping[int, np.ndarray], data: str, nchw: bool, code_index: int, target: str,
                    g: Builder) -> None:
    """ConvTranspose of the NCHW input: NNAPI's filter [depth_out, h, w, depth_in] becomes ONNX's
    [depth_in, depth_out, h, w]; a negative tail padding becomes output_padding (`_check_transpose`)."""
    weights = g.node("Transpose", [g.name[ins[1]]], perm=[3, 0, 1, 2])
    strides = [scalars["stride_h"], scalars["stride_w"]]
    if "scheme" in scalars and ins[3] not in values and scalars["scheme"] == SAME:
        result = _transpose_conv_cropped(ins, kernel, strides, data, weights, g)
    else:
        output_shape = values[ins[3]].reshape(-1).tolist() if "scheme" in scalars and scalars["scheme"] == SAME else None
        if "scheme" in scalars and output_shape is None:
            top = left = bottom = right = 0  # VALID: the full transposed convolution, whatever the output shape says
        else:
            top, left, bottom, right = _transpose_pads(kernel[1:3], output_shape, scalars)
        result = g.node("ConvTranspose", [data, weights, g.name[ins[2]]], strides=strides,
                        pads=[top, left, max(bottom, 0), max(right, 0)], output_padding=[max(-bottom, 0), max(-right, 0)])
    _finish(result, code_index, nchw, target, g)


def _transpose_conv_cropped(ins: Sequence[int], kernel: Sequence[int], strides: list[int], data: str, weights: str,
                            g: Builder) -> str:
    """SAME padding set by an output shape known only at execution: the full transposed convolution,
    then NNAPI's padding worked out in the graph from the output shape's height and width (as
    `_transpose_pads` does) and applied to it, a Slice for the head and a positive tail, a Pad for a
    negative tail; the bias is added after, so that a padded pixel holds it too."""
    from onnx import TensorProto

    int64 = g.node("Cast", [g.name[ins[3]]], to=TensorProto.INT64)
    layout = bool(g.scalar(ins[8]))
    size = g.node("Gather", [int64, g.const(np.asarray([2, 3] if layout else [1, 2], np.int64), "hw")])
    stride = g.const(np.asarray(strides, np.int64), "strides")
    extent = g.const(np.asarray(kernel[1:3], np.int64), "kernel")
    one, zeros = g.const(np.int64(1), "one"), g.const(np.zeros(2, np.int64), "zeros")
    inputs = g.node("Div", [g.node("Sub", [g.node("Add", [size, stride]), one]), stride])
    total = g.node("Sub", [g.node("Add", [g.node("Mul", [g.node("Sub", [inputs, one]), stride]), extent]), size])
    head = g.node("Div", [g.node("Max", [total, zeros]), g.const(np.full(2, 2, np.int64), "two")])
    tail = g.node("Sub", [total, head])
    given = g.node("Gather", [g.node("Shape", [data]), g.const(np.asarray([2, 3], np.int64), "hw")])
    full = g.node("Add", [g.node("Mul", [g.node("Sub", [given, one]), stride]), extent])
    conv = g.node("ConvTranspose", [data, weights], strides=strides)
    pads = g.node("Concat", [g.const(np.zeros(6, np.int64), "zeros"), g.node("Max", [g.node("Neg", [tail]), zeros])], axis=0)
    padded = g.node("Pad", [conv, pads])
    cropped = g.node("Slice", [padded, head, g.node("Sub", [full, tail]), g.const(np.asarray([2, 3], np.int64), "axes")])
    bias = g.node("Reshape", [g.name[ins[2]], g.const(np.asarray([1, -1, 1, 1], np.int64), "bias_shape")])
    return g.node("Add", [cropped, bias])


def _pool_padded_in_graph(kind: OperationType, data: str, strides: list[int], kernel: list[int], code_index: int,
                          nchw: bool, target: str, g: Builder, output: Operand) -> None:
    """A SAME pool of an input whose size is known only at execution, its filter narrower than its stride:
    onnxruntime's auto-padding then fails on a negative total (which NNAPI makes 0), so the padding is
    worked out in the graph.  The padding never wins a maximum (it is -inf); an average is the window's
    sum over its count of input pixels, both pooled over the zero-padded values and a padded tensor of ones."""
    attributes = {"kernel_shape": kernel, "strides": strides}
    if kind == Op.MAX_POOL_2D:  # the least stored value, for an 8-bit input
        least = _STORED[output.type][0](_STORED[output.type][1]) if output.type in _STORED else np.float32(-np.inf)
        result = g.node("MaxPool", [_same_padded(data, strides, kernel, g, least)], **attributes)
    else:
        values = g.node("Mul", [data, data]) if kind == Op.L2_POOL_2D else data
        ones = g.node("ConstantOfShape", [g.node("Shape", [values])], value=_one())
        total = g.node("AveragePool", [_same_padded(values, strides, kernel, g)], count_include_pad=1, **attributes)
        count = g.node("AveragePool", [_same_padded(ones, strides, kernel, g)], count_include_pad=1, **attributes)
        result = g.node("Div", [total, count])
        if kind == Op.L2_POOL_2D:
            result = g.node("Sqrt", [result])
    _finish(result, code_index, nchw, target, g, output)


def _one():
    from onnx import numpy_helper

    return numpy_helper.from_array(np.ones(1, np.float32))


def _same(size: int, stride: int, kernel: int) -> tuple[int, int]:
    """NNAPI's SAME padding of one extent: enough for ceil(size / stride) outputs, the odd pixel at the end."""
    total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def _resize(kind: OperationType, ins: Sequence[int], out: int, g: Builder) -> None:
    """Resize to sizes worked out in the graph: the batch and depth kept, the height and width given, or
    floor(size x factor) in float32 (NNAPI's CPU implementation); each output pixel then samples the
    input where NNAPI's does (ONNX's coordinate transformations name NNAPI's three placements)."""
    from onnx import TensorProto

    nchw, align, half = (len(ins) > at and bool(g.scalar(ins[at])) for at in (3, 4, 5))
    data = _nchw(g.name[ins[0]], nchw, g)
    shape = g.node("Shape", [data])
    kept = g.node("Slice", [shape, g.const(np.asarray([0], np.int64), "start"), g.const(np.asarray([2], np.int64), "end")])
    height, width = g.scalar(ins[2]), g.scalar(ins[1])
    if isinstance(height, (int, np.integer)):
        spatial = g.const(np.asarray([height, width], np.int64), "hw")
    else:
        given = g.node("Slice", [shape, g.const(np.asarray([2], np.int64), "start"), g.const(np.asarray([4], np.int64), "end")])
        scaled = g.node("Mul", [g.node("Cast", [given], to=TensorProto.FLOAT), g.const(np.asarray([height, width], np.float32),
                                                                                       "factors")])
        spatial = g.node("Cast", [g.node("Floor", [scaled])], to=TensorProto.INT64)
    sizes = g.node("Concat", [kept, spatial], axis=0)
    if kind == Op.RESIZE_BILINEAR:
        attributes = {"mode": "linear",
                      "coordinate_transformation_mode": "align_corners" if align else "half_pixel" if half else "asymmetric"}
    else:
        attributes = {"mode": "nearest", "nearest_mode": "round_prefer_ceil" if align else "floor",
                      "coordinate_transformation_mode": "align_corners" if align else "tf_half_pixel_for_nn" if half else "asymmetric"}
    result = g.node("Resize", [data, "", "", sizes], **attributes)
    if nchw:
        g.emit("Identity", [result], g.name[out])
    else:
        g.emit("Transpose", [result], g.name[out], perm=[0, 2, 3, 1])
