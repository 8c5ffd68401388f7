# driver-harness's own golden example: DIV on TENSOR_INT32 rounds toward negative infinity.
# -7 / 2 = -4 (not -3), 7 / -2 = -4, -6 / 4 = -2, 5 / 5 = 1.
i1 = Input("a", "TENSOR_INT32", "{4}")
i2 = Input("b", "TENSOR_INT32", "{4}")
o1 = Output("quotient", "TENSOR_INT32", "{4}")
Model().Operation("DIV", i1, i2, 0).To(o1)

Example({i1: [-7, 7, -6, 5], i2: [2, -2, 4, 5], o1: [-4, -4, -2, 1]})
