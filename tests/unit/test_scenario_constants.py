"""`with_constants_reversed`: another model of the same graph, for POOL-1's test of models that
share a graph (suites/memory_pools/test_constants.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.api.hal import OperandLifeTime, OperandType
from harness.judging.scenario import constant_bytes, with_constants, with_constants_reversed
from harness.strategies import scenarios
from reference_driver import ReferenceDevice


@settings(max_examples=60, database=None, deadline=None)
@given(scenario=scenarios(ReferenceDevice().capabilities(), allow_insufficient=False), how=st.sampled_from(["copy", "reference"]))
def test_the_same_graph_with_each_tensor_constant_reversed(scenario, how) -> None:
    scenario = with_constants(scenario, how)
    reversed_once = with_constants_reversed(scenario)
    assert reversed_once.subgraph == scenario.subgraph  # the graph, its operands' locations included
    assert with_constants_reversed(reversed_once) == scenario
    for index, operand in enumerate(scenario.subgraph.operands):
        if operand.lifetime not in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
            continue
        before, after = constant_bytes(scenario, index), constant_bytes(reversed_once, index)
        if operand.type == OperandType.TENSOR_INT32 or not operand.dimensions:
            assert after == before  # a shape, a bias or a scalar: as it was
        else:
            assert sorted(after) == sorted(before)  # the same bytes (its elements, reordered)
