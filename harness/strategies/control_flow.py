"""Models of control flow: IF and WHILE (NeuralNetworks.h, HAL 1.3) with referenced subgraphs.

The subgraphs are built of element-wise operations other families draw (ADD, SUB, MUL on
TENSOR_INT32, LESS for a loop's condition), so that every value is exact (CHOICE-7: integers
compare exactly) and a wrong branch or a wrong number of iterations shows in the outputs.

- IF: a condition given as a request input, its byte any value (a non-zero byte other than 1, or
  of 128 or more, is true too), choosing between two branches that compute differently.
- WHILE: a counter from its start to a bound, both request inputs, so a loop runs 0 to 5 times;
  the counter is an input-output operand or a state-only one (then it is not output), and the
  bound and the step are input-only operands.
- Nested two deep: an IF inside a WHILE's body (its condition an input-only operand of the
  loop), and a WHILE inside an IF's then branch.

Every operand passed into a subgraph is declared there with dimensions drawn apart from the
outer operand's (known, or of unknown extent or rank, which agree with any), and so are outputs,
so some outputs have a shape only the execution gives.  The subgraphs' constants (fused
activations, the counter's step of 1) are copies in the model's operandValues.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st

from harness.api.hal import Capabilities, Operand, OperandLifeTime, OperandType, OperationType, Subgraph
from harness.judging.builders import ModelBuilder

from .models import ModelCase, _Case, _small_ints, _start

Op = OperationType
I32, BOOL8 = OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
#: The operations a branch or a body computes with, on TENSOR_INT32.
ARITHMETIC = (Op.ADD, Op.SUB, Op.MUL)
#: Condition bytes: false, the canonical true, and other true bytes (NNAPI: any non-zero is true).
CONDITION_BYTES = (0, 1, 2, 127, 128, 255)
#: The kinds of model, each a strategy below.
KINDS = ("if", "while", "if_in_while", "while_in_if")
#: The largest input value: small, so that a failure reads easily; a loop of MULs may still pass
#: 2**31, and wraps around, which is exact too (CHOICE-7: integer results wrap at 32 bits).
_VALUE_BOUND = 9
#: Constant activation NONE (NeuralNetworks.h: the only one a TENSOR_INT32 ADD, SUB or MUL takes).
_NO_ACTIVATION = 0


def arithmetic(caps: Capabilities) -> tuple[OperationType, ...]:
    """The element-wise operations the driver declares on TENSOR_INT32."""
    return tuple(op for op in ARITHMETIC if op in caps.operations and I32 in caps.types_of(op))


def buildable(caps: Capabilities, op: OperationType) -> bool:
    """Whether models of IF (``op``) or WHILE can be built of what the driver declares: the
    operation, TENSOR_BOOL8 conditions, and the arithmetic (and for WHILE, LESS) on TENSOR_INT32."""
    if op not in caps.operations or BOOL8 not in caps.types_of(op) or I32 not in caps.types_of(op):
        return False
    if op == Op.WHILE and not (Op.LESS in caps.operations and I32 in caps.types_of(Op.LESS)):
        return False
    return bool(arithmetic(caps))


class _Graphs:
    """A model's main subgraph (a `_Case`) and its referenced subgraphs, whose constants share the
    main one's operandValues."""

    def __init__(self, draw, caps: Capabilities) -> None:
        self.draw, self.c = draw, _start(draw)
        self.case = _Case(self.c)
        self.referenced: list[Subgraph] = []
        self.ops = arithmetic(caps)

    def subgraph(self) -> ModelBuilder:
        builder = ModelBuilder()
        builder.values = self.case.b.values  # one operandValues for every subgraph of the model
        return builder

    def add(self, builder: ModelBuilder) -> int:
        self.referenced.append(builder.subgraph())
        return len(self.referenced) - 1

    def inputs(self, builder: ModelBuilder, shapes: Sequence[tuple[int, ...]], label: str) -> list[int]:
        """Subgraph inputs of TENSOR_INT32 of these shapes, each declared as drawn."""
        return [builder.input(I32, self.c.declared(shape, f"{label} input {n}")) for n, shape in enumerate(shapes)]

    def arithmetic(self, builder: ModelBuilder, a: int, b: int, shape: tuple[int, ...], label: str,
                   *, output: bool) -> tuple[int, OperationType]:
        op = self.c.choice(self.ops, f"{label} operation")
        dims = self.c.declared(shape, f"{label} output") if output else shape
        return builder.operation(op, [a, b, builder.scalar(_NO_ACTIVATION)], I32, dims, output=output), op

    def data(self, shape: tuple[int, ...], label: str) -> tuple[int, np.ndarray]:
        value = self.draw(_small_ints("int32", shape, _VALUE_BOUND), label=label)
        return self.case.operand(I32, value, label=label), value

    def condition(self, label: str) -> tuple[int, np.ndarray]:
        """A TENSOR_BOOL8 [1] request input (NNAPI: a condition's shape is fully specified)."""
        value = np.asarray([self.c.choice(CONDITION_BYTES, f"{label} byte")], np.uint8)
        self.case.values.append(value)
        return self.case.b.input(BOOL8, (1,)), value

    def counter(self, label: str, low: int, high: int) -> tuple[int, np.ndarray]:
        value = np.asarray([self.c.integer(low, high, label)], np.int32)
        self.case.values.append(value)
        return self.case.b.input(I32, (1,)), value

    def done(self, shapes, label: str) -> ModelCase:
        model = self.case.done(shapes, label)
        return ModelCase(model.subgraph, model.operand_values, model.pool_data, model.inputs, model.output_shapes,
                         model.label, model.choices, model.alternatives, tuple(self.referenced))


def _branches(g: _Graphs, shape: tuple[int, ...], inner: Callable[[ModelBuilder, int, int], int] | None = None
              ) -> tuple[int, int]:
    """A then and an else branch of inputs (x, y) and output f(x, y): the then branch one operation
    (or ``inner``'s), the else branch two, so that they differ for any operations drawn."""
    then = g.subgraph()
    x, y = g.inputs(then, (shape, shape), "then")
    if inner is None:
        g.arithmetic(then, x, y, shape, "then", output=True)
    else:
        inner(then, x, y)
    otherwise = g.subgraph()
    x, y = g.inputs(otherwise, (shape, shape), "else")
    first, _ = g.arithmetic(otherwise, x, y, shape, "else first", output=False)
    g.arithmetic(otherwise, first, y, shape, "else second", output=True)
    return g.add(then), g.add(otherwise)


def _loop(g: _Graphs, shape: tuple[int, ...], counter_output: bool, extra: Sequence[OperandType] = (),
          update: Callable[[ModelBuilder, int, int, list[int]], int] | None = None) -> tuple[int, int]:
    """A WHILE's condition and body over (carried: the counter i and the data x, in the order
    ``counter_output`` gives; input-only: the bound n, the step s and ``extra`` operands): while
    i < n, i += 1 and x = update(x, s) (one arithmetic operation unless ``update`` is given)."""
    def inputs(builder: ModelBuilder, label: str) -> tuple[int, int, int, int, list[int]]:
        carried = g.inputs(builder, ((1,), shape) if counter_output else (shape, (1,)), f"{label} carried")
        i, x = carried if counter_output else carried[::-1]
        n, s = g.inputs(builder, ((1,), shape), f"{label} input-only")
        others = [builder.input(t, (1,)) for t in extra]
        return i, x, n, s, others

    cond = g.subgraph()
    i, x, n, s, _ = inputs(cond, "condition")
    cond.operation(Op.LESS, [i, n], BOOL8, (1,))
    body = g.subgraph()
    i, x, n, s, others = inputs(body, "body")
    one = body.constant(I32, np.asarray([1], np.int32))
    step = body.operation(Op.ADD, [i, one, body.scalar(_NO_ACTIVATION)], I32, (1,), output=False)
    data = update(body, x, s, others) if update is not None else g.arithmetic(body, x, s, shape, "body", output=False)[0]
    for operand, full in (((step, (1,)), (data, shape)) if counter_output else ((data, shape), (step, (1,)))):
        body.operands[operand] = _as_output(body.operands[operand], g.c.declared(full, "body output"))
        body.outputs.append(operand)
    return g.add(cond), g.add(body)


def _as_output(operand: Operand, dims: tuple[int, ...]) -> Operand:
    return Operand(operand.type, dims, operand.scale, operand.zero_point, OperandLifeTime.SUBGRAPH_OUTPUT)


def _require(caps: Capabilities, *ops: OperationType) -> None:
    if not all(buildable(caps, op) for op in ops):
        reject()  # the driver does not declare what these models are built of: not an example


@st.composite
def if_models(draw, caps: Capabilities) -> ModelCase:
    """IF on a condition byte between a branch of one arithmetic operation and one of two."""
    _require(caps, Op.IF)
    g = _Graphs(draw, caps)
    c = g.c
    shape = c.shape("data", min_rank=1, max_rank=3, max_side=3)
    condition, _ = g.condition("condition")
    x, _ = g.data(shape, "x")
    y, _ = g.data(shape, "y")
    then, otherwise = _branches(g, shape)
    main = g.case.b
    main.operation_outputs(Op.IF, [condition, main.reference(then), main.reference(otherwise), x, y],
                           [(I32, c.declared(shape, "IF output"), 0.0, 0)])
    return g.done([shape], f"IF of {len(shape)}-D TENSOR_INT32")


def _while(g: _Graphs, main: ModelBuilder, shape: tuple[int, ...], extra: Sequence[int] = (),
           extra_types: Sequence[OperandType] = (),
           update: Callable[[ModelBuilder, int, int, list[int]], int] | None = None,
           loop_inputs: tuple[int, int, int, int] | None = None, output: bool = True) -> list[int]:
    """A WHILE in ``main`` over a counter from a start to a bound (0 to 5 iterations); its outputs
    (the counter, when it is an input-output operand, and the data)."""
    c = g.c
    counter_output = c.boolean("counter is an output")
    if loop_inputs is None:
        start, _ = g.counter("counter start", 0, 2)
        bound, _ = g.counter("counter bound", 0, 5)
        x, _ = g.data(shape, "x")
        s, _ = g.data(shape, "step")
    else:
        start, x, bound, s = loop_inputs
    cond, body = _loop(g, shape, counter_output, extra_types, update)
    carried = [start, x] if counter_output else [x, start]
    outputs = [(I32, c.declared((1,), "counter output"), 0.0, 0)] if counter_output else []
    outputs.append((I32, c.declared(shape, "WHILE output"), 0.0, 0))
    return main.operation_outputs(Op.WHILE, [main.reference(cond), main.reference(body), *carried, bound, s,
                                             *extra], outputs, output=output)


@st.composite
def while_models(draw, caps: Capabilities) -> ModelCase:
    """WHILE counting from a start of 0 to 2 to a bound of 0 to 5, the data updated by one arithmetic
    operation with an input-only step each iteration."""
    _require(caps, Op.WHILE)
    g = _Graphs(draw, caps)
    c = g.c
    shape = c.shape("data", min_rank=1, max_rank=3, max_side=3)
    outputs = _while(g, g.case.b, shape)
    return g.done([(1,)] * (len(outputs) - 1) + [shape], f"WHILE of {len(shape)}-D TENSOR_INT32")


@st.composite
def if_in_while_models(draw, caps: Capabilities) -> ModelCase:
    """WHILE whose body updates the data with an IF on a condition the loop passes as input-only."""
    _require(caps, Op.IF, Op.WHILE)
    g = _Graphs(draw, caps)
    c = g.c
    shape = c.shape("data", min_rank=1, max_rank=3, max_side=2)
    then, otherwise = _branches(g, shape)
    flag, _ = g.condition("inner condition")

    def update(body: ModelBuilder, x: int, s: int, others: list[int]) -> int:
        return body.operation_outputs(Op.IF, [others[0], body.reference(then), body.reference(otherwise), x, s],
                                      [(I32, c.declared(shape, "inner IF output"), 0.0, 0)], output=False)[0]

    outputs = _while(g, g.case.b, shape, extra=[flag], extra_types=[BOOL8], update=update)
    return g.done([(1,)] * (len(outputs) - 1) + [shape], f"IF in a WHILE's body, {len(shape)}-D TENSOR_INT32")


@st.composite
def while_in_if_models(draw, caps: Capabilities) -> ModelCase:
    """IF whose then branch is a WHILE (the data as it ends) and whose else branch two arithmetic
    operations, on the loop's inputs."""
    _require(caps, Op.IF, Op.WHILE)
    g = _Graphs(draw, caps)
    c = g.c
    shape = c.shape("data", min_rank=1, max_rank=3, max_side=2)
    condition, _ = g.condition("condition")
    start, _ = g.counter("counter start", 0, 2)
    x, _ = g.data(shape, "x")
    bound, _ = g.counter("counter bound", 0, 5)
    s, _ = g.data(shape, "step")
    # the branches take (start, x, bound, step) and give the data
    then = g.subgraph()
    t_start, t_x, t_bound, t_s = (then.input(I32, (1,)), then.input(I32, c.declared(shape, "then x")),
                                  then.input(I32, (1,)), then.input(I32, c.declared(shape, "then step")))
    outputs = _while(g, then, shape, loop_inputs=(t_start, t_x, t_bound, t_s), output=False)
    last = outputs[-1]
    then.operands[last] = _as_output(then.operands[last], c.declared(shape, "then output"))
    then.outputs.append(last)
    otherwise = g.subgraph()
    e_start, e_x, e_bound, e_s = (otherwise.input(I32, (1,)), otherwise.input(I32, c.declared(shape, "else x")),
                                  otherwise.input(I32, (1,)), otherwise.input(I32, c.declared(shape, "else step")))
    first, _ = g.arithmetic(otherwise, e_x, e_s, shape, "else first", output=False)
    g.arithmetic(otherwise, first, e_s, shape, "else second", output=True)
    then_index, else_index = g.add(then), g.add(otherwise)
    main = g.case.b
    main.operation_outputs(Op.IF, [condition, main.reference(then_index), main.reference(else_index),
                                   start, x, bound, s], [(I32, c.declared(shape, "IF output"), 0.0, 0)])
    return g.done([shape], f"WHILE in an IF's branch, {len(shape)}-D TENSOR_INT32")


MAKERS: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    "if": if_models,
    "while": while_models,
    "if_in_while": if_in_while_models,
    "while_in_if": while_in_if_models,
}


@functools.lru_cache(maxsize=64)
def control_flow_models(caps: Capabilities, kind: str) -> st.SearchStrategy[ModelCase]:
    """Models of one of `KINDS` for this driver (one strategy object per pair: see layouts)."""
    return MAKERS[kind](caps)
