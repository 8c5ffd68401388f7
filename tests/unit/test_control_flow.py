"""The reference's IF and WHILE against NeuralNetworks.h's definitions written out here: IF runs
the branch its condition picks, WHILE runs its body while its condition says true (counting,
nested two deep, shapes growing from one iteration to the next); a WHILE that never ends is cut
off by the loop timeout; and the prepare-time refusals of the rules on subgraph operands."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pytest

from harness.api.hal import (DataLocation, DriverError, ErrorStatus, Model, Operand, OperandLifeTime, OperandType,
                             OperationType, Subgraph, numpy_dtype,
                             operand_byte_size)
from harness.judging.builders import ModelBuilder, pack_request
from reference_driver import ReferenceDevice
from reference_driver.ops import KERNELS, control_flow

F32, I32, BOOL8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8
Op = OperationType


def reference(b: ModelBuilder, index: int) -> int:
    """A SUBGRAPH operand of ``b`` naming referenced subgraph ``index``."""
    b.operands.append(Operand(OperandType.SUBGRAPH, (), lifetime=OperandLifeTime.SUBGRAPH,
                              location=DataLocation(0, index, 0)))
    return len(b.operands) - 1


def inner(main: ModelBuilder) -> ModelBuilder:
    """A builder for a referenced subgraph whose constants go into ``main``'s operandValues."""
    b = ModelBuilder()
    b.values = main.values
    return b


def model_of(main: ModelBuilder, *referenced: ModelBuilder) -> Model:
    return Model(main.subgraph(), bytes(main.values), (), tuple(r.subgraph() for r in referenced))


def add_constant(b: ModelBuilder, x_type: OperandType, dims, step, dtype=F32) -> ModelBuilder:
    """Subgraph: z = x + step (``step`` a constant of the subgraph's own)."""
    x = b.input(x_type, dims)
    b.operation(Op.ADD, [x, b.constant(dtype, [step]), b.scalar(0)], x_type, dims)
    return b


def run(model: Model, inputs, capacities=None):
    """Execute ``model``; each output's value, shaped as reported."""
    prepared = ReferenceDevice().prepare_model(model)
    operands = model.main.operands
    # an output of known shape gets a region of its exact size (REQ-2), one of unknown shape room to spare
    capacities = capacities or [operand_byte_size(operands[i].type, operands[i].dimensions) or 256
                                for i in model.main.output_indexes]
    request, _, out = pack_request(model, inputs, output_capacity=capacities)
    shapes = prepared.execute(request).output_shapes
    data = out.read()
    results = []
    for number, (index, shape) in enumerate(zip(model.main.output_indexes, shapes)):
        results.append(np.frombuffer(data, numpy_dtype(operands[index].type), count=math.prod(shape.dimensions),
                                     offset=request.outputs[number].location.offset).reshape(shape.dimensions))
    return results


def if_model(out_dims=(3,)) -> Model:
    """z = IF (c) THEN y + 10 ELSE y - 10, as NeuralNetworks.h's IF example has it."""
    main = ModelBuilder()
    c, then_, else_, y = main.input(BOOL8, [1]), reference(main, 0), reference(main, 1), main.input(F32, [3])
    main.operation(Op.IF, [c, then_, else_, y], F32, out_dims)
    then_b = add_constant(inner(main), F32, [3], 10.0)
    else_b = inner(main)
    x = else_b.input(F32, [3])
    else_b.operation(Op.SUB, [x, else_b.constant(F32, [10.0]), else_b.scalar(0)], F32, [3])
    return model_of(main, then_b, else_b)


@pytest.mark.parametrize("condition", [True, False])
def test_if_runs_the_branch_its_condition_picks(condition) -> None:
    y = np.array([1.5, -2.0, 7.0], np.float32)
    got, = run(if_model(), [np.array([condition]), y])
    want = [v + 10 if condition else v - 10 for v in y.tolist()]
    assert got.tolist() == want


def test_if_output_of_unknown_shape_takes_the_branch_shape_and_reports_short_regions() -> None:
    model = if_model(out_dims=(0,))
    got, = run(model, [np.array([True]), np.array([1, 2, 3], np.float32)])
    assert got.shape == (3,) and got.tolist() == [11, 12, 13]
    prepared = ReferenceDevice().prepare_model(model)
    request, _, _ = pack_request(model, [np.array([False]), np.array([1, 2, 3], np.float32)], output_capacity=[8])
    with pytest.raises(DriverError) as raised:
        prepared.execute(request)
    assert raised.value.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert raised.value.output_shapes[0].dimensions == (3,) and not raised.value.output_shapes[0].is_sufficient


def counting_model(out_dims=(1,)) -> Model:
    """i = 0; s = 0; WHILE i < n: s = s + i * i; i = i + 1 -- outputs i and s (input-output), n input-only."""
    main = ModelBuilder()
    cond_ref, body_ref = reference(main, 0), reference(main, 1)
    i0, s0, n = main.constant(I32, [0]), main.constant(I32, [0]), main.input(I32, [1])
    main.operation_outputs(Op.WHILE, [cond_ref, body_ref, i0, s0, n], [(I32, out_dims, 0.0, 0), (I32, out_dims, 0.0, 0)])
    cond = inner(main)
    ci, _cs, cn = cond.input(I32, [1]), cond.input(I32, [1]), cond.input(I32, [1])
    cond.operation(Op.LESS, [ci, cn], BOOL8, [1])
    body = inner(main)
    bi, bs, _bn = body.input(I32, [1]), body.input(I32, [1]), body.input(I32, [1])
    square = body.operation(Op.MUL, [bi, bi, body.scalar(0)], I32, [1], output=False)
    next_i = body.operation(Op.ADD, [bi, body.constant(I32, [1]), body.scalar(0)], I32, [1], output=False)
    next_s = body.operation(Op.ADD, [bs, square, body.scalar(0)], I32, [1], output=False)
    # the body's outputs in the order of its inputs: i, then s
    outs = [body.operation(Op.ADD, [t, body.constant(I32, [0]), body.scalar(0)], I32, [1]) for t in (next_i, next_s)]
    assert body.outputs == outs
    return model_of(main, cond, body)


@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_while_counts_to_n_summing_squares(n) -> None:
    i, s = run(counting_model(), [np.array([n], np.int32)])
    want_s = 0
    for k in range(n):  # the loop as written out
        want_s += k * k
    assert i.tolist() == [n] and s.tolist() == [want_s]


def fib_model() -> Model:
    """fib = [1, 1]; i = 2; WHILE i < n: fib = concat(fib, fib[i-1] + fib[i-2]); i = i + 1 (fib grows)."""
    main = ModelBuilder()
    cond_ref, body_ref = reference(main, 0), reference(main, 1)
    fib0, i0, n = main.constant(F32, [1.0, 1.0]), main.constant(I32, [2]), main.input(I32, [1])
    main.operation_outputs(Op.WHILE, [cond_ref, body_ref, fib0, i0, n], [(F32, [0], 0.0, 0), (I32, [1], 0.0, 0)])
    cond = inner(main)
    _cf, ci, cn = cond.input(F32, [0]), cond.input(I32, [1]), cond.input(I32, [1])
    cond.operation(Op.LESS, [ci, cn], BOOL8, [1])
    body = inner(main)
    bf, bi, _bn = body.input(F32, [0]), body.input(I32, [1]), body.input(I32, [1])
    start = body.operation(Op.ADD, [bi, body.constant(I32, [-2]), body.scalar(0)], I32, [1], output=False)
    last2 = body.operation(Op.SLICE, [bf, start, body.constant(I32, [2])], F32, [2], output=False)
    new = body.operation(Op.REDUCE_SUM, [last2, body.constant(I32, [0]), body.constant(OperandType.BOOL, True)],
                         F32, [1], output=False)
    body.operation(Op.CONCATENATION, [bf, new, body.scalar(0)], F32, [0])
    body.operation(Op.ADD, [bi, body.constant(I32, [1]), body.scalar(0)], I32, [1])
    return model_of(main, cond, body)


@pytest.mark.parametrize("n", [2, 3, 6])
def test_while_state_grows_and_the_output_takes_its_final_shape(n) -> None:
    fib, i = run(fib_model(), [np.array([n], np.int32)])
    want = [1.0, 1.0]
    while len(want) < n:
        want.append(want[-1] + want[-2])
    assert fib.tolist() == want and i.tolist() == [max(n, 2)]


def nested_model() -> Model:
    """Two deep: WHILE i < n: (i, s) = (i + 1, IF (i < h) THEN s + 1 ELSE s + 100)."""
    main = ModelBuilder()
    cond_ref, body_ref = reference(main, 0), reference(main, 1)
    i0, s0 = main.constant(I32, [0]), main.constant(I32, [0])
    n, h = main.input(I32, [1]), main.input(I32, [1])
    main.operation_outputs(Op.WHILE, [cond_ref, body_ref, i0, s0, n, h], [(I32, [1], 0.0, 0), (I32, [1], 0.0, 0)])
    cond = inner(main)
    ci, _cs, cn, _ch = (cond.input(I32, [1]) for _ in range(4))
    cond.operation(Op.LESS, [ci, cn], BOOL8, [1])
    body = inner(main)
    bi, bs, _bn, bh = (body.input(I32, [1]) for _ in range(4))
    low = body.operation(Op.LESS, [bi, bh], BOOL8, [1], output=False)
    body.operation(Op.ADD, [bi, body.constant(I32, [1]), body.scalar(0)], I32, [1])
    body.operation(Op.IF, [low, reference(body, 2), reference(body, 3), bs], I32, [1])
    return model_of(main, cond, body, add_constant(inner(main), I32, [1], 1, I32), add_constant(inner(main), I32, [1], 100, I32))


@pytest.mark.parametrize("n, h", [(0, 2), (3, 5), (5, 2)])
def test_nested_if_inside_while(n, h) -> None:
    i, s = run(nested_model(), [np.array([n], np.int32), np.array([h], np.int32)])
    want_s = 0
    for k in range(n):
        want_s += 1 if k < h else 100
    assert i.tolist() == [n] and s.tolist() == [want_s]


def endless_model() -> Model:
    """i = 0; WHILE i >= n: i = i + 1 -- never ends for n <= 0."""
    main = ModelBuilder()
    cond_ref, body_ref = reference(main, 0), reference(main, 1)
    i0, n = main.constant(F32, [0.0]), main.input(F32, [1])
    main.operation(Op.WHILE, [cond_ref, body_ref, i0, n], F32, [1])
    cond = inner(main)
    ci, cn = cond.input(F32, [1]), cond.input(F32, [1])
    cond.operation(Op.GREATER_EQUAL, [ci, cn], BOOL8, [1])
    body = inner(main)
    bi, _bn = body.input(F32, [1]), body.input(F32, [1])
    body.operation(Op.ADD, [bi, body.constant(F32, [1.0]), body.scalar(0)], F32, [1])
    return model_of(main, cond, body)


def test_a_while_that_never_ends_is_cut_off_by_the_loop_timeout(monkeypatch) -> None:
    assert control_flow.LOOP_TIMEOUT_S == 2.0 and control_flow.MAX_LOOP_TIMEOUT_S == 15.0  # NNAPI's default and maximum
    monkeypatch.setattr(control_flow, "LOOP_TIMEOUT_S", 0.05)
    model = endless_model()
    prepared = ReferenceDevice().prepare_model(model)
    request, _, _ = pack_request(model, [np.array([0.0], np.float32)])
    started = time.monotonic()
    with pytest.raises(DriverError) as raised:
        prepared.execute(request)
    assert raised.value.status in (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)
    assert time.monotonic() - started < 1.0
    # the same loop ends when its condition turns false
    assert run(model, [np.array([1.0], np.float32)])[0].tolist() == [0.0]


def test_an_execution_sets_its_own_loop_timeout_up_to_the_maximum() -> None:
    model = endless_model()
    prepared = ReferenceDevice().prepare_model(model)
    request, _, _ = pack_request(model, [np.array([0.0], np.float32)])
    started = time.monotonic()
    with pytest.raises(DriverError) as raised:
        prepared.execute(replace(request, loop_timeout_ns=50_000_000))  # HAL 1.3's loopTimeoutDuration: 50 ms
    assert raised.value.status == control_flow.LOOP_TIMEOUT_STATUS
    assert time.monotonic() - started < 1.0  # not NNAPI's default of 2 s
    with control_flow.loop_timeout(60 * 10**9):
        assert control_flow.current_loop_timeout() == control_flow.MAX_LOOP_TIMEOUT_S
    assert control_flow.current_loop_timeout() == control_flow.LOOP_TIMEOUT_S


# --------------------------------------------------------------------------- refusals


def refused(model: Model) -> str:
    with pytest.raises(DriverError) as raised:
        ReferenceDevice().prepare_model(model)
    assert raised.value.status == ErrorStatus.INVALID_ARGUMENT
    return raised.value.message


def with_operand(graph: Subgraph, index: int, **changes) -> Subgraph:
    operands = list(graph.operands)
    operands[index] = replace(operands[index], **changes)
    return replace(graph, operands=tuple(operands))


def test_if_refuses_a_condition_not_a_bool8_of_one_element() -> None:
    model = if_model()
    for changes in ({"type": I32}, {"dimensions": (2,)}):
        message = refused(replace(model, main=with_operand(model.main, 0, **changes)))
        assert "input 0" in message and "condition" in message


def test_if_refuses_branches_that_do_not_match_its_operands() -> None:
    model = if_model()
    then_ = model.referenced[0]
    # the then branch's input of another type than IF's input 3
    message = refused(replace(model, referenced=(with_operand(then_, then_.input_indexes[0], type=I32), model.referenced[1])))
    assert "input 3" in message and "then branch" in message and "type" in message
    # an output of other known dimensions than the branch output
    message = refused(replace(model, main=with_operand(model.main, model.main.output_indexes[0], dimensions=(4,))))
    assert "output 0" in message and "dimensions" in message
    # a branch of another input count than IF passes it
    two_inputs = ModelBuilder()
    x, w = two_inputs.input(F32, [3]), two_inputs.input(F32, [3])
    two_inputs.operation(Op.SUB, [x, w, two_inputs.scalar(0)], F32, [3])
    message = refused(replace(model, referenced=(model.referenced[0], two_inputs.subgraph())))
    assert "input 2" in message and "else branch" in message and "inputs" in message


def test_if_refuses_a_reference_that_is_no_subgraph_operand() -> None:
    model = if_model()
    message = refused(replace(model, main=with_operand(model.main, 1, lifetime=OperandLifeTime.SUBGRAPH_INPUT,
                                                       location=DataLocation())))
    assert "then branch" in message or "SUBGRAPH" in message
    message = refused(replace(model, main=with_operand(model.main, 2, location=DataLocation(0, 7, 0))))
    assert "operand 2" in message


def test_while_refuses_a_condition_without_one_bool8_output_and_a_body_that_does_not_carry_its_state() -> None:
    model = counting_model()
    cond, body = model.referenced
    out = cond.output_indexes[0]
    message = refused(replace(model, referenced=(with_operand(cond, out, type=I32, dimensions=(1,)), body)))
    assert "condition" in message and "TENSOR_BOOL8" in message
    # a body output of another scale than the input it feeds next iteration (WHILE's output agreeing with it)
    main = with_operand(model.main, model.main.output_indexes[1], scale=0.5)
    message = refused(replace(model, main=main, referenced=(cond, with_operand(body, body.output_indexes[1], scale=0.5))))
    assert "body" in message and "scale" in message and "feeds" in message
    # a WHILE of more outputs than its body carries
    main = model.main
    extra = len(main.operands)
    operands = (*main.operands, Operand(I32, (1,), lifetime=OperandLifeTime.SUBGRAPH_OUTPUT))
    operations = (replace(main.operations[0], outputs=(*main.operations[0].outputs, extra)),)
    message = refused(replace(model, main=replace(main, operands=operands, operations=operations,
                                                  output_indexes=(*main.output_indexes, extra))))
    assert "body" in message and "outputs" in message


def test_a_referenced_subgraph_meets_the_rules_of_any_subgraph() -> None:
    model = if_model()
    then_ = model.referenced[0]
    # an operation its kernel refuses (ADD of a TENSOR_FLOAT32 and a TENSOR_INT32)
    add = then_.operations[0]
    message = refused(replace(model, referenced=(with_operand(then_, add.inputs[1], type=I32), model.referenced[1])))
    assert "referenced subgraph 0" in message and "ADD" in message
    # an operand index out of range, and an output no operation writes
    message = refused(replace(model, referenced=(replace(then_, operations=(replace(add, inputs=(99, *add.inputs[1:])),)),
                                                 model.referenced[1])))
    assert "referenced subgraph 0" in message and "index" in message
    message = refused(replace(model, referenced=(replace(then_, operations=()), model.referenced[1])))
    assert "referenced subgraph 0" in message


def test_subgraphs_that_reference_each_other_in_a_cycle_are_refused() -> None:
    model = nested_model()
    cond, body, then_, else_ = model.referenced
    # the IF inside the body names the body itself as its else branch: the body would hold itself
    if_operation = body.operations[-1]
    else_ref = if_operation.inputs[2]
    looped = with_operand(body, else_ref, location=DataLocation(0, 1, 0))
    message = refused(replace(model, referenced=(cond, looped, then_, else_)))
    assert "cycle" in message and "[1, 1]" in message


def test_get_supported_operations_looks_into_the_referenced_subgraphs() -> None:
    model = if_model()
    assert ReferenceDevice().get_supported_operations(model) == [True]
    # a device without ADD cannot run the then branch, so not the IF
    without_add = ReferenceDevice(kernels={op: k for op, k in KERNELS.items() if op != Op.ADD})
    assert without_add.get_supported_operations(model) == [False]
