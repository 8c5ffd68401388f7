"""CC-2/CC-3 at the ends of every range a target declares: each end, every choice, called once.

Random draws of a 65536-element case are rare and often rejected, so the width bugs that live
there (a count kept in 16 bits) are checked here on purpose rather than by luck."""

from __future__ import annotations

import pytest

from harness.strategies.custom_calls import range_end_cases

from ._calls import check_fixed_cases


@pytest.mark.requirement("CC-3", "CC-5")
@pytest.mark.targets(conventions=("device", "device-status"), failing=False)
def test_device_targets_at_their_range_ends(custom_calls, target) -> None:
    check_fixed_cases(custom_calls, target, "CC-3", range_end_cases, "declares no integer ranges")


@pytest.mark.requirement("CC-2", "CC-5")
@pytest.mark.targets(conventions=("host", "host-unified"), failing=False)
def test_host_targets_at_their_range_ends(custom_calls, target) -> None:
    check_fixed_cases(custom_calls, target, "CC-2", range_end_cases, "declares no integer ranges")
