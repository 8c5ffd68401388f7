"""CC-1: targets are registered by (name, platform); unknown look-ups and conflicting
re-registrations are errors; the same registration again is accepted."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.custom_calls import CustomCallError, TargetRegistry
from harness.judging.verdict import require
from harness.strategies.values import sampled


@pytest.mark.requirement("CC-1")
def test_every_declared_target_is_registered_in_the_driver(custom_calls, custom_call_targets) -> None:
    for target in custom_call_targets:
        found = custom_calls.lookup(target.name, target.platform)
        require(found == ("ok", target.convention), "CC-1",
                f"declared target {target.name!r} ({target.platform}, {target.convention}) is not registered where the "
                f"driver runs: lookup gave {found!r}")


@pytest.mark.requirement("CC-1")
@given(name=st.text(min_size=1, max_size=40), data=st.data())
def test_unregistered_lookup_is_an_error_naming_the_target(custom_calls, custom_call_targets, name, data) -> None:
    platform = data.draw(sampled(tuple(sorted({t.platform for t in custom_call_targets}))), label="platform")
    if any(t.key == (name, platform) for t in custom_call_targets):
        return
    kind, message = custom_calls.lookup(name, platform)
    require(kind == "unregistered" and repr(name) in message, "CC-1", f"looking up {name!r} gave {kind}: {message}")


@pytest.mark.requirement("CC-1")
def test_reregistration_same_accepted_different_rejected(custom_call_targets) -> None:
    registry = TargetRegistry()
    for target in custom_call_targets:  # two declarations with one key and different functions fail here
        registry.register(target)
    for target in custom_call_targets:
        registry.register(target)  # identical: accepted
        assert registry.lookup(target.name, target.platform) is target
        other = dataclasses.replace(target, symbol=target.symbol + "_other")
        with pytest.raises(CustomCallError, match=f"{target.name!r}.*already registered"):
            registry.register(other)
        elsewhere = dataclasses.replace(target, platform=target.platform + "-elsewhere")
        registry.register(elsewhere)  # the same name on another platform is another key
    assert len(registry) == 2 * len(custom_call_targets)
