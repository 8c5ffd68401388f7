# driver-harness's own golden example: CONV_2D mixing two channels into two, so that every tensor of
# rank 4 has more than one channel and more than one pixel (a layout mistake shows in the bytes).
#
# A 1x1 filter, SAME padding, stride 1: output channel 0 is input channel 0, channel 1 the sum of
# both, plus bias [1, -1]. Pixels (h, w) hold input channels [1, 2], [3, 4], [5, 6], [7, 8]:
#   (0, 0): 1 + 1 = 2,  1 + 2 - 1 = 2      (0, 1): 3 + 1 = 4,  3 + 4 - 1 = 6
#   (1, 0): 5 + 1 = 6,  5 + 6 - 1 = 10     (1, 1): 7 + 1 = 8,  7 + 8 - 1 = 14
layout = BoolScalar("layout", False)
i1 = Input("input", "TENSOR_FLOAT32", "{1, 2, 2, 2}")
f1 = Parameter("filter", "TENSOR_FLOAT32", "{2, 1, 1, 2}", [1, 0, 1, 1])
b1 = Parameter("bias", "TENSOR_FLOAT32", "{2}", [1, -1])
o1 = Output("output", "TENSOR_FLOAT32", "{1, 2, 2, 2}")
Model("mix").Operation("CONV_2D", i1, f1, b1, 1, 1, 1, 0, layout).To(o1)

quant8 = DataTypeConverter().Identify({
    i1: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
    f1: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
    b1: ("TENSOR_INT32", 1.0, 0),
    o1: ("TENSOR_QUANT8_ASYMM", 1.0, 0),
})

Example({
    i1: [1, 2, 3, 4, 5, 6, 7, 8],
    o1: [2, 2, 4, 6, 6, 10, 8, 14],
}).AddNchw(i1, o1, layout).AddVariations("relaxed", "float16", quant8)
