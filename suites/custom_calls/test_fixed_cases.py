"""CC-2/CC-3 on fixed cases, checked on purpose rather than left to luck:

- range ends: the ends of every range a target declares, each end and every choice called once.
  Random draws of a 65536-element case are rare and often rejected, so the width bugs that live
  there (a count kept in 16 bits) need their own cases.
- nested tuples: each target that takes operand shapes is called with a tuple between two leaves,
  a tuple before a leaf, and a tuple between top-level leaves, every leaf of its own dtype and
  size.  A random shape is a leaf or a tuple at each level, so leaves and tuples side by side
  (where a flattening-order bug shows) come up in only some draws; a dozen examples can miss them."""

from __future__ import annotations

import pytest

from harness.strategies.custom_calls import nesting_cases, range_end_cases

from ._calls import check_fixed_cases

FIXED_CASES = [pytest.param(range_end_cases, "declares no integer ranges", id="range-ends"),
               pytest.param(nesting_cases, "takes no operand shapes", id="nested-tuples")]


@pytest.mark.requirement("CC-3", "CC-5")
@pytest.mark.targets(conventions=("device", "device-status"), failing=False)
@pytest.mark.parametrize("cases_of, none_because", FIXED_CASES)
def test_device_targets_on_fixed_cases(custom_calls, target, cases_of, none_because) -> None:
    check_fixed_cases(custom_calls, target, "CC-3", cases_of, none_because)


@pytest.mark.requirement("CC-2", "CC-5")
@pytest.mark.targets(conventions=("host", "host-unified"), failing=False)
@pytest.mark.parametrize("cases_of, none_because", FIXED_CASES)
def test_host_targets_on_fixed_cases(custom_calls, target, cases_of, none_because) -> None:
    check_fixed_cases(custom_calls, target, "CC-2", cases_of, none_because)
