# driver-harness's own golden example: ADD with broadcasting and every fused activation.
# [[1, 2], [3, 4]] + [10, -20] = [[11, -18], [13, -16]]; RELU, RELU1 and RELU6 clamp that.
i1 = Input("a", "TENSOR_FLOAT32", "{2, 2}")
i2 = Input("b", "TENSOR_FLOAT32", "{2}")
act = Int32Scalar("act", 0)
o1 = Output("sum", "TENSOR_FLOAT32", "{2, 2}")
Model().Operation("ADD", i1, i2, act).To(o1)

quant8 = DataTypeConverter().Identify({
    i1: ("TENSOR_QUANT8_ASYMM", 0.5, 128),
    i2: ("TENSOR_QUANT8_ASYMM", 0.5, 128),
    o1: ("TENSOR_QUANT8_ASYMM", 0.5, 128),
})
quant8_signed = DataTypeConverter().Identify({
    i1: ("TENSOR_QUANT8_ASYMM_SIGNED", 0.5, 0),
    i2: ("TENSOR_QUANT8_ASYMM_SIGNED", 0.5, 0),
    o1: ("TENSOR_QUANT8_ASYMM_SIGNED", 0.5, 0),
})

Example({
    i1: [1, 2, 3, 4],
    i2: [10, -20],
    o1: [11, -18, 13, -16],
}).AddVariations("relaxed", "float16", quant8, quant8_signed).AddAllActivations(o1, act)
