"""POOL-2, POOL-3: generated models and request layouts, compared with the reference."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.oracle import assert_conforms, run_scenario
from harness.strategies import scenarios

REQUIRED_KINDS = ("ashmem", "mmap_fd", "hardware_buffer_blob")


@pytest.mark.requirement("POOL-2", "REQ-2", "DOM-DYN-2")
@given(data=st.data())
def test_generated_scenarios_match_the_reference(driver, reference, capabilities, data) -> None:
    """Random models, inputs spread over several pools with gaps, offsets and padding,
    canary bytes everywhere else; outputs (and too-small dynamic outputs) as the reference."""
    scenario = data.draw(scenarios(capabilities), label="scenario")
    assert_conforms("POOL-2", scenario, run_scenario(reference, scenario), run_scenario(driver, scenario))


@pytest.mark.requirement("POOL-3")
@pytest.mark.parametrize("kind", [*REQUIRED_KINDS, "hardware_buffer"])
@given(data=st.data())
def test_every_memory_kind_serves_execution(driver, reference, capabilities, kind, data) -> None:
    """ashmem, mmap_fd and BLOB hardware buffers are required; non-BLOB hardware buffers
    only when declared, and then only for execution I/O."""
    if kind not in REQUIRED_KINDS and kind not in capabilities.memory_kinds:
        pytest.skip(f"{kind} is optional (SPEC POOL-3) and the driver does not declare it")
    only_this_kind = replace(capabilities, memory_kinds=frozenset({kind}))
    scenario = data.draw(scenarios(only_this_kind, allow_insufficient=False), label="scenario")
    assert_conforms("POOL-3", scenario, run_scenario(reference, scenario), run_scenario(driver, scenario))
