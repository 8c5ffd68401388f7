# driver-harness's own golden examples: RELU, RELU1 and RELU6 as operations.
x = Input("x", "TENSOR_FLOAT32", "{1, 4}")
relu = Output("relu", "TENSOR_FLOAT32", "{1, 4}")
relu1 = Output("relu1", "TENSOR_FLOAT32", "{1, 4}")
relu6 = Output("relu6", "TENSOR_FLOAT32", "{1, 4}")
Model().Operation("RELU", x).To(relu).Operation("RELU1", x).To(relu1).Operation("RELU6", x).To(relu6)

quant8 = DataTypeConverter().Identify({
    x: ("TENSOR_QUANT8_ASYMM", 0.5, 128),
    relu: ("TENSOR_QUANT8_ASYMM", 0.5, 128),
    relu1: ("TENSOR_QUANT8_ASYMM", 0.5, 128),
    relu6: ("TENSOR_QUANT8_ASYMM", 0.5, 128),
})
Example({
    x: [-2, -0.5, 0.5, 7],
    relu: [0, 0, 0.5, 7],
    relu1: [-1, -0.5, 0.5, 1],
    relu6: [0, 0, 0.5, 6],
}).AddVariations("float16", quant8)
