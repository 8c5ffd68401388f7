# driver-harness's own golden example: FULLY_CONNECTED then RELU6, weights and bias as inputs too.
# [1, 2] x [[1, 1], [2, -1]]^T + [0.5, 0] = [3.5, 0]; times 2 in the second batch row: [7, 0] -> RELU6 [6, 0].
x = Input("x", "TENSOR_FLOAT32", "{2, 2}")
w = Parameter("weights", "TENSOR_FLOAT32", "{2, 2}", [1, 1, 2, -1])
bias = Parameter("bias", "TENSOR_FLOAT32", "{2}", [0.5, 0])
hidden = Internal("hidden", "TENSOR_FLOAT32", "{2, 2}")
y = Output("y", "TENSOR_FLOAT32", "{2, 2}")
Model().Operation("FULLY_CONNECTED", x, w, bias, 0).To(hidden).Operation("RELU6", hidden).To(y)

Example({x: [1, 2, 2, 4], y: [3.5, 0, 6, 0]}).AddInput(w, bias).AddVariations("relaxed", "float16")
