# driver-harness's own golden examples: DIV by zero.  As in NNAPI CTS (div.mod.py, "by_zero"), the
# quotient is undefined, so the output is not compared; the driver must complete the execution.
# On TENSOR_INT32 this is what a native driver dividing as C does gets wrong: x86 traps (SIGFPE).
a = Input("a", "TENSOR_FLOAT32", "{3}")
b = Input("b", "TENSOR_FLOAT32", "{3}")
quotient = IgnoredOutput("quotient", "TENSOR_FLOAT32", "{3}")
Model("by_zero").Operation("DIV", a, b, 0).To(quotient)
Example({a: [6, -1, 0], b: [2, 0, 0], quotient: [0, 0, 0]}).AddVariations("relaxed", "float16")

a32 = Input("a", "TENSOR_INT32", "{3}")
b32 = Input("b", "TENSOR_INT32", "{3}")
quotient32 = IgnoredOutput("quotient", "TENSOR_INT32", "{3}")
Model("int32_by_zero").Operation("DIV", a32, b32, 0).To(quotient32)
Example({a32: [6, -1, 0], b32: [2, 0, 0], quotient32: [0, 0, 0]})
