"""The generators that reach further (dtypes, limits, threads, sequences): every draw is valid for
what is declared, and the far cases they exist for are drawn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from harness.api.custom_calls import OperandShapes
from harness.api.shapes import CONVENTION_DTYPES, DTYPES, Leaf, TupleShape, depth, leaves
from harness.strategies.concurrency import CALLS, ENTRY_POINTS, MANY_CALLS, MANY_THREADS, THREADS, call_plans
from harness.strategies.custom_calls import limit_shapes, operand_values, reaching_operand_shapes, values_for
from harness.strategies.dlpack import DLPACK_DTYPES, WIDER_DTYPES, DLPackExport, dlpack_arrays
from harness.strategies.sequences import LONG_STEPS, MODEL_SHAPES, STEPS, execution_sequences
from harness.strategies.swarm import rarely

# Deterministic and quick: each property over a few hundred draws, found cases searched for briefly.
CHECKED = settings(max_examples=150, derandomize=True, database=None, deadline=None,
                   suppress_health_check=list(HealthCheck))
SEARCH = settings(max_examples=1000, derandomize=True, database=None, suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate])  # found is enough: no shrinking
SPACE = OperandShapes(count=(1, 3), max_depth=3, max_side=4)


def _widths(shape) -> list[int]:
    if isinstance(shape, Leaf):
        return []
    return [len(shape.elements), *(w for element in shape.elements for w in _widths(element))]


def _min_depth(shape) -> int:
    return 0 if isinstance(shape, Leaf) else 1 + min((_min_depth(e) for e in shape.elements), default=0)


# --------------------------------------------------------------------------- swarm switches


def test_a_rare_switch_is_on_about_as_often_as_asked() -> None:
    seen: list[bool] = []

    @CHECKED
    @given(rarely(10), st.integers(0, 1000))
    def draw(on: bool, _: int) -> None:
        seen.append(on)

    draw()
    assert 0 < sum(seen) < len(seen) / 3, f"{sum(seen)} of {len(seen)} draws on"


def test_a_switch_for_fewer_than_two_examples_is_refused() -> None:
    with pytest.raises(ValueError, match="one_in=1"):
        rarely(1)


# --------------------------------------------------------------------------- custom calls


@CHECKED
@given(operands=reaching_operand_shapes(SPACE))
def test_reaching_custom_call_operands_stay_within_the_declaration(operands) -> None:
    low, high = SPACE.count
    assert low <= len(operands) <= high
    for shape in operands:
        assert depth(shape) <= SPACE.max_depth
        for _, leaf in leaves(shape):
            assert leaf.dtype in CONVENTION_DTYPES and len(leaf.dims) <= 2 and all(0 <= d <= SPACE.max_side for d in leaf.dims)


@CHECKED
@given(shape=limit_shapes(SPACE.max_depth, SPACE.max_side))
def test_a_shape_at_the_limits_is_at_every_limit_at_once(shape) -> None:
    assert _min_depth(shape) == depth(shape) == SPACE.max_depth
    assert all(2 <= width <= 3 for width in _widths(shape))
    assert all(leaf.dims and set(leaf.dims) == {SPACE.max_side} for _, leaf in leaves(shape))


def test_reaching_operands_meet_every_limit_at_once_and_the_wider_dtypes() -> None:
    at_limits = find(reaching_operand_shapes(SPACE), lambda ops: len(ops) == 3 and all(
        _min_depth(shape) == 3 for shape in ops), settings=SEARCH)
    assert all(leaf.dims and set(leaf.dims) == {SPACE.max_side} for shape in at_limits for _, leaf in leaves(shape))
    find(reaching_operand_shapes(SPACE), lambda ops: any(leaf.dtype not in DTYPES for shape in ops
                                                         for _, leaf in leaves(shape)), settings=SEARCH)


def test_shapes_at_the_limits_pass_a_table_of_24_leaves() -> None:
    find(limit_shapes(SPACE.max_depth, SPACE.max_side), lambda shape: sum(1 for _ in leaves(shape)) > 24, settings=SEARCH)


@CHECKED
@given(data=st.data(), dtype=st.sampled_from(CONVENTION_DTYPES))
def test_leaf_values_of_every_convention_dtype_are_values_of_it(data, dtype) -> None:
    value = data.draw(values_for(Leaf(dtype, (3, 2))))
    assert value.dtype == np.dtype(dtype) and value.shape == (3, 2)
    if dtype == "bool":  # a PRED byte is 0 or 1
        assert set(value.view(np.uint8).reshape(-1)) <= {0, 1}
    if value.dtype.kind == "f":
        assert np.isfinite(value).all()


def test_operands_too_large_to_search_take_values_from_a_drawn_seed() -> None:
    big = TupleShape(tuple(Leaf("float64", (4, 4)) for _ in range(40)))
    values = find(operand_values((big,)), lambda v: True, settings=SEARCH)
    assert len(values[0]) == 40 and all(v.shape == (4, 4) and v.dtype == np.float64 for v in values[0])


# --------------------------------------------------------------------------- DLPack dtypes


@pytest.mark.parametrize("dtype", sorted(DLPACK_DTYPES))
def test_every_dlpack_dtype_crosses_as_itself(dtype) -> None:
    array = np.arange(6).astype(dtype).reshape(2, 3)[:, ::-1]
    export = DLPackExport(array, 1)
    back = np.from_dlpack(export)
    assert back.dtype == array.dtype and np.array_equal(back, array)


def test_the_wider_dlpack_dtypes_are_drawn() -> None:
    find(dlpack_arrays(), lambda a: a.dtype.name in WIDER_DTYPES, settings=SEARCH)


@CHECKED
@given(array=dlpack_arrays())
def test_drawn_arrays_have_a_dlpack_dtype(array) -> None:
    assert array.dtype.name in DLPACK_DTYPES


# --------------------------------------------------------------------------- threads


@CHECKED
@given(plan=call_plans())
def test_plans_call_only_entry_points_within_their_bounds(plan) -> None:
    assert 2 <= plan.threads <= MANY_THREADS and set(plan.calls) <= set(ENTRY_POINTS)
    if len(plan.calls) > CALLS or plan.threads > THREADS:
        assert MANY_CALLS[0] <= len(plan.calls) <= MANY_CALLS[1]
    else:
        assert plan.threads <= len(plan.calls)


def test_plans_reach_every_entry_point_and_fill_a_table_from_several_threads() -> None:
    for point in ENTRY_POINTS:
        find(call_plans(), lambda plan: point in plan.calls, settings=SEARCH)
    # more than 16 buffers held (the shared one, those to release, the allocated), allocated at once
    find(call_plans(), lambda plan: plan.threads > THREADS and plan.count("allocate") >= 2 and
         1 + plan.count("release") + plan.count("allocate") > 17, settings=SEARCH)


# --------------------------------------------------------------------------- sequences


@CHECKED
@given(sequence=execution_sequences())
def test_sequences_name_their_own_models_within_their_bounds(sequence) -> None:
    assert 1 <= len(sequence.models) <= 3 and set(sequence.models) <= set(MODEL_SHAPES)
    assert all(0 <= step.model < len(sequence.models) for step in sequence.steps)
    assert 1 <= len(sequence.steps) <= LONG_STEPS[1]


def test_sequences_reach_many_executions_of_one_model_on_reused_memory() -> None:
    find(execution_sequences(), lambda s: s.reuse_memories and len(s.steps) > STEPS and
         max(s.executions_of(m) for m in range(len(s.models))) >= 4, settings=SEARCH)
