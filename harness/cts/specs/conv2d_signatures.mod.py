# driver-harness's own golden examples: CONV_2D in its implicit-padding and dilated signatures,
# explicit padding past one pixel and dilation past 2.


def ones_filter_conv(name, input_dims, output_dims, head, dilation=()):
    """A one-channel CONV_2D model whose 2x2 filter holds ones and whose bias is 0; ``head`` is
    the padding, stride and activation inputs, ``dilation`` the factors after the layout flag."""
    layout = BoolScalar("layout", False)
    i = Input("input", "TENSOR_FLOAT32", input_dims)
    f = Parameter("filter", "TENSOR_FLOAT32", "{1, 2, 2, 1}", [1, 1, 1, 1])
    b = Parameter("bias", "TENSOR_FLOAT32", "{1}", [0])
    o = Output("output", "TENSOR_FLOAT32", output_dims)
    Model(name).Operation("CONV_2D", i, f, b, *head, layout, *dilation).To(o)
    return layout, i, f, b, o


def unit_scale_quant8(i, f, b, o):
    """The model quantized with every scale 1 and zero point 0: its integers stored as they are."""
    return DataTypeConverter().Identify({
        i: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
        f: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
        b: ("TENSOR_INT32", 1.0, 0),
        o: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
    })


# Model 1: SAME padding, stride 2, input 3x3 holding 1..9, a 2x2 filter of ones, bias 0.
# SAME gives ceil(3 / 2) = 2 outputs per axis and pads one row and column at the end:
#   rows 0-1 x cols 0-1: 1+2+4+5 = 12   rows 0-1 x col 2: 3+6 = 9
#   row 2 x cols 0-1:    7+8 = 15        row 2 x col 2:    9
layout, i1, f1, b1, o1 = ones_filter_conv("same", "{1, 3, 3, 1}", "{1, 2, 2, 1}", (1, 2, 2, 0))
quant8 = unit_scale_quant8(i1, f1, b1, o1)
channel_quant8 = DataTypeConverter().Identify({
    i1: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
    f1: ("TENSOR_QUANT8_SYMM_PER_CHANNEL", 0, 0, SymmPerChannelQuantParams(channelDim=0, scales=[0.5])),
    b1: ("TENSOR_INT32", 0.0, 0),
    o1: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
})

Example({
    i1: [1, 2, 3, 4, 5, 6, 7, 8, 9],
    o1: [12, 9, 15, 9],
}).AddNchw(i1, o1, layout).AddVariations("relaxed", quant8, channel_quant8).AddInput(f1, b1)

# Model 2: explicit padding 0 with dilation 2: the 2x2 filter of ones spans the 3x3 input's
# corners, 1 + 3 + 7 + 9 = 20.
layout2, i2, f2, b2, o2 = ones_filter_conv("dilated", "{1, 3, 3, 1}", "{1, 1, 1, 1}", (0, 0, 0, 0, 1, 1, 0), (2, 2))

Example({
    i2: [1, 2, 3, 4, 5, 6, 7, 8, 9],
    o2: [20],
}).AddNchw(i2, o2, layout2)

# Model 4: SAME padding with dilation 2, stride 1: the 2x2 filter of ones spans 3x3, so SAME pads
# (4 - 1) + 3 - 4 = 2 rows and columns, one on each side.  Input 4x4 holding 1..16; output (y, x)
# sums rows y - 1 and y + 1 and columns x - 1 and x + 1 where they lie inside the input, e.g.
#   (0, 0): row 1 x col 1 = 6         (1, 1): rows 0, 2 x cols 0, 2 = 1 + 3 + 9 + 11 = 24
#   (3, 3): row 2 x col 2 = 11        (2, 2): rows 1, 3 x cols 1, 3 = 6 + 8 + 14 + 16 = 44
layout4, i4, f4, b4, o4 = ones_filter_conv("same_dilated", "{1, 4, 4, 1}", "{1, 4, 4, 1}", (1, 1, 1, 0), (2, 2))

Example({
    i4: list(range(1, 17)),
    o4: [6, 12, 14, 7, 12, 24, 28, 14, 20, 40, 44, 22, 10, 20, 22, 11],
}).AddNchw(i4, o4, layout4).AddVariations(unit_scale_quant8(i4, f4, b4, o4))

# Model 5: explicit padding 2 at the left and top, 1 at the right and bottom, dilation 3, stride 1:
# the padded input is 6x6 and the 2x2 filter of ones spans 4x4, so 3x3 outputs.  Output (y, x) sums
# padded rows y and y + 3 and columns x and x + 3, input rows and columns 2 fewer; one of each pair
# lies in the padding, so each output is one input element: rows (and columns) 1, 2, 0 for y = 0, 1, 2.
# Input 3x3 holding 1..9: output [5, 6, 4, 8, 9, 7, 2, 3, 1].
layout5, i5, f5, b5, o5 = ones_filter_conv("padded_dilated", "{1, 3, 3, 1}", "{1, 3, 3, 1}",
                                          (2, 1, 2, 1, 1, 1, 0), (3, 3))

Example({
    i5: list(range(1, 10)),
    o5: [5, 6, 4, 8, 9, 7, 2, 3, 1],
}).AddNchw(i5, o5, layout5).AddVariations(unit_scale_quant8(i5, f5, b5, o5))

# Model 3: two output channels with their own filter scales.  Input [2, 4]; filter rows [1, 1]
# and [1, -1]: outputs 2 + 4 = 6 and 2 - 4 = -2.  Quantized per channel with scales 0.5 and
# 0.25 the filter holds [2, 2] and [4, -4]; the output (scale 1, zero point 10) holds [16, 8].
i3 = Input("input", "TENSOR_FLOAT32", "{1, 1, 1, 2}")
f3 = Parameter("filter", "TENSOR_FLOAT32", "{2, 1, 1, 2}", [1, 1, 1, -1])
b3 = Parameter("bias", "TENSOR_FLOAT32", "{2}", [0, 0])
o3 = Output("output", "TENSOR_FLOAT32", "{1, 1, 1, 2}")
Model("two_channels").Operation("CONV_2D", i3, f3, b3, 2, 1, 1, 0).To(o3)

per_channel = DataTypeConverter().Identify({
    i3: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
    f3: ("TENSOR_QUANT8_SYMM_PER_CHANNEL", 0, 0, SymmPerChannelQuantParams(channelDim=0, scales=[0.5, 0.25])),
    b3: ("TENSOR_INT32", 0.0, 0),
    o3: ("TENSOR_QUANT8_ASYMM", 1.0, 10),
})
Example({i3: [2, 4], o3: [6, -2]}).AddVariations(per_channel, includeDefault=False)
