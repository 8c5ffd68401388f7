# driver-harness's own golden examples: two operations through an internal operand, and an
# invalid model.
#
# CONCATENATION of [1, 2] and [3] on axis 0 gives [1, 2, 3]; RESHAPE makes it 3x1.
a = Input("a", "TENSOR_FLOAT32", "{2}")
b = Input("b", "TENSOR_FLOAT32", "{1}")
joined = Internal("joined", "TENSOR_FLOAT32", "{3}")
column = Output("column", "TENSOR_FLOAT32", "{3, 1}")
Model("chain").Operation("CONCATENATION", a, b, 0).To(joined).Operation("RESHAPE", joined, [3, 1]).To(column)
Example({a: [1, 2], b: [3], column: [1, 2, 3]}, name="chain").AddVariations("float16")

# Shapes that differ off the concatenation axis: NNAPI forbids it, so a driver must refuse it.
c = Input("c", "TENSOR_FLOAT32", "{1, 2}")
d = Input("d", "TENSOR_FLOAT32", "{1, 3}")
bad = Output("bad", "TENSOR_FLOAT32", "{2, 2}")
Model("mismatched").Operation("CONCATENATION", c, d, 0).To(bad)
Example({c: [1, 2], d: [3, 4, 5], bad: [0, 0, 0, 0]}, name="mismatched").ExpectFailure()
