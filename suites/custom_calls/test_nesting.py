"""CC-2/CC-3 with operand tuples nested beside leaves, on purpose: each target that takes operand
shapes is called with a tuple between two leaves, a tuple before a leaf, and a tuple between
top-level leaves, every leaf of its own dtype and size.

A random shape is a leaf or a tuple at each level, so leaves and tuples side by side (where a
flattening-order bug shows) come up in only some draws; a dozen examples can miss them."""

from __future__ import annotations

import pytest

from harness.strategies.custom_calls import nesting_cases

from ._calls import check_fixed_cases


@pytest.mark.requirement("CC-3", "CC-5")
@pytest.mark.targets(conventions=("device", "device-status"), failing=False)
def test_device_targets_on_nested_tuples(custom_calls, target) -> None:
    check_fixed_cases(custom_calls, target, "CC-3", nesting_cases, "takes no operand shapes")


@pytest.mark.requirement("CC-2", "CC-5")
@pytest.mark.targets(conventions=("host", "host-unified"), failing=False)
def test_host_targets_on_nested_tuples(custom_calls, target) -> None:
    check_fixed_cases(custom_calls, target, "CC-2", nesting_cases, "takes no operand shapes")
