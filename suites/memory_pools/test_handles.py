"""POOL-3, POOL-4, POOL-5: unusable and invalid handles are rejected, and the driver keeps serving."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.api.hal import OperandLifeTime
from harness.judging.oracle import assert_scenario_conforms
from harness.judging.scenario import DEFECTS, Defect, MemorySpec, with_constants
from harness.strategies import scenarios
from harness.strategies.values import integers, sampled

#: every test here runs generated models (none applies to a driver whose declarations build none)
pytestmark = pytest.mark.usefixtures("models_can_be_built")


def _still_serves(driver, reference, scenario) -> None:
    """After an error, the same driver must serve the valid scenario correctly."""
    assert_scenario_conforms("POOL-5", scenario, reference, driver)


# Each defect is a test of its own: drawn, a dozen examples can miss one kind altogether
# (hypothesis repeats choices it has made), and a driver that accepts it would pass by luck.
@pytest.mark.requirement("POOL-4", "POOL-5")
@pytest.mark.parametrize("defect", DEFECTS)
@given(data=st.data())
def test_unusable_request_pool(driver, reference, capabilities, defect, data) -> None:
    scenario = data.draw(scenarios(capabilities, allow_insufficient=False), label="scenario")
    index = data.draw(integers(0, len(scenario.request_pools) - 1), label="pool to break")
    pools = list(scenario.request_pools)
    pools[index] = replace(pools[index], defect=defect)
    broken = replace(scenario, request_pools=tuple(pools))
    assert_scenario_conforms("POOL-5", broken, reference, driver)
    _still_serves(driver, reference, scenario)


@pytest.mark.requirement("POOL-5")
@given(data=st.data())
def test_read_only_output_pool(driver, reference, capabilities, data) -> None:
    """An output region in a memory the driver cannot write must fail the execution: a driver
    that writes into a private copy instead reports outputs nobody can read."""
    scenario = data.draw(scenarios(capabilities, allow_insufficient=False), label="scenario")
    writable = sorted({a.location.pool_index for a in scenario.outputs if not a.has_no_value
                       and isinstance(scenario.request_pools[a.location.pool_index], MemorySpec)})
    if not writable:
        event("no output in a memory pool")
        return _still_serves(driver, reference, scenario)
    index = data.draw(sampled(tuple(writable)), label="output pool made read-only")
    pools = list(scenario.request_pools)
    pools[index] = replace(pools[index], defect=Defect.READ_ONLY)
    broken = replace(scenario, request_pools=tuple(pools))
    assert_scenario_conforms("POOL-5", broken, reference, driver)
    _still_serves(driver, reference, scenario)


@pytest.mark.requirement("POOL-4", "POOL-5")
@pytest.mark.parametrize("defect", [d for d in DEFECTS if d is not Defect.READ_ONLY])
@given(data=st.data())
def test_unusable_constant_pool_fails_preparation(driver, reference, capabilities, defect, data) -> None:
    scenario = data.draw(scenarios(capabilities, allow_insufficient=False), label="scenario")
    by_reference = with_constants(scenario, "reference")
    if not by_reference.constant_pools:
        by_reference = replace(by_reference, constant_pools=(MemorySpec("ashmem", b"\0" * 8),))
    broken = replace(by_reference, constant_pools=(replace(by_reference.constant_pools[0], defect=defect),))
    assert_scenario_conforms("POOL-4", broken, reference, driver)
    _still_serves(driver, reference, scenario)


@pytest.mark.requirement("POOL-3")
@given(data=st.data())
def test_non_blob_hardware_buffer_is_not_a_constant_pool(driver, reference, capabilities, data) -> None:
    scenario = data.draw(scenarios(capabilities, allow_insufficient=False), label="scenario")
    with_pool = with_constants(scenario, "reference", "hardware_buffer")
    if not any(o.lifetime == OperandLifeTime.CONSTANT_REFERENCE for o in with_pool.subgraph.operands):
        event("no tensor constant to move")
        return _still_serves(driver, reference, scenario)
    assert_scenario_conforms("POOL-3", with_pool, reference, driver)


#: How a constant's region is moved out of its pool (or operandValues), each tried in every run.
CONSTANT_REGION_DEFECTS = ("offset", "negative offset", "pool index", "negative pool index")


@pytest.mark.requirement("POOL-5", "POOL-1")
@pytest.mark.parametrize("part", CONSTANT_REGION_DEFECTS)
@given(data=st.data())
def test_constant_region_out_of_range_fails_preparation(driver, reference, capabilities, part, data) -> None:
    scenario = data.draw(scenarios(capabilities, allow_insufficient=False), label="scenario")
    # A negative pool index is a defect of a list of pools, which only CONSTANT_REFERENCE indexes (a
    # CONSTANT_COPY's pool index must be 0, whatever its sign): drawn as a copy, half the runs never
    # gave a driver that indexes its pools as a Python list a negative index to take from the end.
    how = "reference" if part == "negative pool index" else data.draw(sampled(("copy", "reference")), label="constants")
    moved = with_constants(scenario, how)
    lifetime = OperandLifeTime.CONSTANT_REFERENCE if moved.constant_pools else OperandLifeTime.CONSTANT_COPY
    constants = tuple(i for i, o in enumerate(moved.subgraph.operands) if o.lifetime == lifetime)
    if not constants:
        event("no constant to move")
        return _still_serves(driver, reference, scenario)
    index = data.draw(sampled(constants), label="constant operand")
    operand = moved.subgraph.operands[index]
    loc = operand.location
    if lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        capacity, pools = moved.constant_pools[0].size, len(moved.constant_pools)
    else:
        capacity, pools = len(moved.operand_values), 1
    if part == "offset":  # the region ends past its pool (operandValues for a copy)
        loc = replace(loc, offset=capacity - loc.length + data.draw(integers(1, 64), label="bytes past the end"))
    elif part == "negative offset":  # it starts before its pool: pool[offset:offset + length] counts from the end
        loc = replace(loc, offset=-data.draw(integers(1, 64), label="bytes before the start"))
    elif part == "pool index":
        loc = replace(loc, pool_index=pools)
    else:  # no pool has one: a driver indexing a list with it gets a pool counted from the end
        loc = replace(loc, pool_index=-data.draw(integers(1, pools), label="pools before the first"))
    event(f"{lifetime.name} {part}")
    operands = list(moved.subgraph.operands)
    operands[index] = replace(operand, location=loc)
    broken = replace(moved, subgraph=replace(moved.subgraph, operands=tuple(operands)))
    assert_scenario_conforms("POOL-5", broken, reference, driver)
    _still_serves(driver, reference, scenario)


@pytest.mark.requirement("POOL-5", "REQ-2")
@given(data=st.data())
def test_region_out_of_range(driver, reference, capabilities, data) -> None:
    scenario = data.draw(scenarios(capabilities, allow_insufficient=False), label="scenario")
    arguments = [("inputs", i) for i in range(len(scenario.inputs))] + [("outputs", i) for i in range(len(scenario.outputs))]
    field, i = data.draw(sampled(tuple(arguments)), label="argument")
    argument = getattr(scenario, field)[i]
    pool = scenario.request_pools[argument.location.pool_index]
    overshoot = data.draw(integers(1, 64), label="bytes past the end")
    part = data.draw(sampled(("offset", "padding")), label="moved")
    loc = argument.location
    if part == "offset":
        loc = replace(loc, offset=pool.size - loc.length - loc.padding + overshoot)
    else:
        loc = replace(loc, padding=pool.size - loc.offset - loc.length + overshoot)
    moved = list(getattr(scenario, field))
    moved[i] = replace(argument, location=loc)
    broken = replace(scenario, **{field: tuple(moved)})
    assert_scenario_conforms("POOL-5", broken, reference, driver)
