# driver-harness's own golden examples: CONV_2D in its implicit-padding and dilated signatures.
#
# Model 1: SAME padding, stride 2, input 3x3 holding 1..9, a 2x2 filter of ones, bias 0.
# SAME gives ceil(3 / 2) = 2 outputs per axis and pads one row and column at the end:
#   rows 0-1 x cols 0-1: 1+2+4+5 = 12   rows 0-1 x col 2: 3+6 = 9
#   row 2 x cols 0-1:    7+8 = 15        row 2 x col 2:    9
layout = BoolScalar("layout", False)
i1 = Input("input", "TENSOR_FLOAT32", "{1, 3, 3, 1}")
f1 = Parameter("filter", "TENSOR_FLOAT32", "{1, 2, 2, 1}", [1, 1, 1, 1])
b1 = Parameter("bias", "TENSOR_FLOAT32", "{1}", [0])
o1 = Output("output", "TENSOR_FLOAT32", "{1, 2, 2, 1}")
Model("same").Operation("CONV_2D", i1, f1, b1, 1, 2, 2, 0, layout).To(o1)

quant8 = DataTypeConverter().Identify({
    i1: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
    f1: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
    b1: ("TENSOR_INT32", 1.0, 0),
    o1: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
})
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
layout2 = BoolScalar("layout", False)
i2 = Input("input", "TENSOR_FLOAT32", "{1, 3, 3, 1}")
f2 = Parameter("filter", "TENSOR_FLOAT32", "{1, 2, 2, 1}", [1, 1, 1, 1])
b2 = Parameter("bias", "TENSOR_FLOAT32", "{1}", [0])
o2 = Output("output", "TENSOR_FLOAT32", "{1, 1, 1, 1}")
Model("dilated").Operation("CONV_2D", i2, f2, b2, 0, 0, 0, 0, 1, 1, 0, layout2, 2, 2).To(o2)

Example({
    i2: [1, 2, 3, 4, 5, 6, 7, 8, 9],
    o2: [20],
}).AddNchw(i2, o2, layout2)

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
