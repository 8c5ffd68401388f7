"""POOL-1: constants by copy (operandValues) and by reference (a pool) give identical results."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, event, given, note
from hypothesis import strategies as st

from harness.api.hal import OperandLifeTime
from harness.judging.oracle import assert_conforms, assert_scenario_conforms, checking, execute_scenario, run_scenario
from harness.judging.scenario import with_constants, with_constants_reversed
from harness.integration.skips import not_applicable
from harness.strategies import scenarios
from harness.strategies.layouts import CONSTANT_POOL_KINDS
from harness.strategies.models import buildable_families, weighted_families
from harness.strategies.values import integers, sampled
from harness.judging.verdict import violation

#: every test here runs generated models (none applies to a driver whose declarations build none)
pytestmark = pytest.mark.usefixtures("models_can_be_built")


def _needs_constants(capabilities) -> None:
    """Not applicable to a driver whose models have no tensor constant: RELU, RELU1 and RELU6
    take one input, and nothing else it declares can be built."""
    if set(buildable_families(capabilities)) <= {"relu"}:
        not_applicable("operations", "the driver's operations that can be built (RELU, RELU1, RELU6 at most) take "
                                     "no constant tensor")


def _scenario_with_constants(capabilities, data):
    """A scenario, of a family whose models carry weights when the driver declares one (constants
    of a shape or an axis alone are a small part of what a driver keeps)."""
    families = weighted_families(capabilities)
    family = data.draw(sampled(families), label="family") if families else ""
    return data.draw(scenarios(capabilities, allow_insufficient=False, family=family), label="scenario")


def _constant_pools(capabilities) -> tuple[tuple[str, int], ...]:
    """The (memory kind, file offset) a pool of constants may be given: each declared kind of
    `CONSTANT_POOL_KINDS` (ashmem when none is), an mmap_fd one at several offsets in its file."""
    # each (kind, file offset) a case of its own: an mmap_fd pool away from its file's start, which
    # a driver that maps from the start reads wrong, is half the cases rather than a quarter
    kinds = tuple(k for k in CONSTANT_POOL_KINDS if k in capabilities.memory_kinds) or ("ashmem",)
    return tuple((k, offset) for k in kinds for offset in ((0, 8, 4096, 4100) if k == "mmap_fd" else (0,)))


def _has_tensor_constant(scenario) -> bool:
    return any(o.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE) and o.dimensions
               for o in scenario.subgraph.operands)


@pytest.mark.requirement("POOL-1")
@given(data=st.data())
def test_copy_and_reference_constants_agree(driver, reference, capabilities, data) -> None:
    _needs_constants(capabilities)
    scenario = _scenario_with_constants(capabilities, data)
    assume(_has_tensor_constant(scenario))
    kind, file_offset = data.draw(sampled(_constant_pools(capabilities)), label="constant pool kind and file offset")
    event(f"constant pool kind: {kind}{' at file offset %d' % file_offset if file_offset else ''}")
    by_copy = with_constants(scenario, "copy")
    by_reference = with_constants(scenario, "reference", kind, file_offset)
    expected = run_scenario(reference, by_copy)
    copy_outcome = run_scenario(driver, by_copy)
    reference_outcome = run_scenario(driver, by_reference)
    assert_conforms("POOL-1", by_copy, expected, copy_outcome, devices=(reference, driver))
    assert_conforms("POOL-1", by_reference, expected, reference_outcome, devices=(reference, driver))
    if copy_outcome.outputs != reference_outcome.outputs:
        raise violation("POOL-1",
            f"the same constants gave different outputs by copy and by reference "
            f"({copy_outcome.summary()} vs {reference_outcome.summary()})"
        )


@pytest.mark.requirement("POOL-1")
@given(data=st.data())
def test_models_of_one_graph_compute_with_their_own_constants(driver, reference, capabilities, data) -> None:
    """Weights are the model's, not its graph's: a model prepared after another of the same graph
    whose constants differ (each tensor constant's elements reversed) computes with its own (a
    driver that caches compiled graphs without their weights gives it the first one's)."""
    _needs_constants(capabilities)
    scenario = _scenario_with_constants(capabilities, data)
    assume(_has_tensor_constant(scenario))
    how = data.draw(sampled(("copy", "reference")), label="constants")
    first = with_constants(scenario, how)
    for which, each in (("first", first), ("second, its constants reversed", with_constants_reversed(first))):
        note(f"the {which} model of the graph")
        assert_scenario_conforms("POOL-1", each, reference, driver, attributed=which == "first")


@pytest.mark.requirement("POOL-1", "POOL-2")
@given(data=st.data())
def test_a_prepared_model_runs_again_and_again(driver, reference, capabilities, data) -> None:
    """Constants are the model's, not one execution's: every run of one prepared model computes
    with the same weights (a driver that converts them in place on a run fails the next one)."""
    _needs_constants(capabilities)
    scenario = _scenario_with_constants(capabilities, data)
    assume(_has_tensor_constant(scenario))
    how = data.draw(sampled(("copy", "reference")), label="constants")
    # constants by reference in each kind of pool: a driver may compute from an mmap_fd file where it
    # lies rather than copy it at preparation, and a conversion it makes there in place stays for the
    # runs after
    kind, file_offset = data.draw(sampled(_constant_pools(capabilities)), label="constant pool kind and file offset") \
        if how == "reference" else ("ashmem", 0)
    event(f"constants by {how}{f' in {kind}' if how == 'reference' else ''}")
    scenario = with_constants(scenario, how, kind, file_offset)
    model = scenario.build_model()
    try:
        expected = run_scenario(reference, scenario)
        with checking("POOL-1"):  # the constants handed over
            prepared = driver.prepare_model(model)
        runs = data.draw(integers(2, 4), label="executions")
        event(f"{runs} executions of one prepared model")
        for run in range(1, runs + 1):
            note(f"execution {run} of {runs}")
            with checking("POOL-2"):  # an execution through the request's pools, again and again
                outcome = execute_scenario(prepared, scenario)
            # judged as the scenario's run-th execution on one prepared model: its reproducer runs it that often
            assert_conforms("POOL-1", replace(scenario, executions=run), expected, outcome,
                            devices=(reference, driver) if run == 1 else None)
    finally:
        for pool in model.pools:
            pool.close()
