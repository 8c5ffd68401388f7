"""pytest fixtures of the custom-call suites (registered by the harness pytest plugin)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.custom_calls.targets import CustomCallTarget


@pytest.fixture(scope="session")
def custom_call_targets(pytestconfig: pytest.Config, driver: Any) -> list[CustomCallTarget]:
    """The targets the driver's plugins declare; the custom-call suites skip without any."""
    from harness.native import CompilerMissing
    from harness.pytest_plugin import declared_for_driver

    targets = declared_for_driver(pytestconfig, "custom_call_targets")
    if not targets:
        pytest.skip(f"driver {driver.name!r} declares no custom-call targets (hook harness_custom_call_targets)")
    try:
        for target in targets:
            target.library_path()  # built here once, so a missing compiler is one clear skip
    except CompilerMissing as error:
        pytest.skip(f"custom-call targets cannot be built: {error}")
    return targets


@pytest.fixture(scope="session")
def custom_calls(pytestconfig: pytest.Config, custom_call_targets: list[CustomCallTarget]) -> Any:
    """Where the targets are called: the driver service (default) or this process (inline)."""
    from harness.custom_calls.executor import CustomCallExecutor
    from harness.pytest_plugin import state_of

    service = state_of(pytestconfig).service
    return service.custom_calls if service is not None else CustomCallExecutor(custom_call_targets)


def targets_where(targets: list[CustomCallTarget], *, conventions: tuple[str, ...] = (), failing: bool | None = None,
                  names: tuple[str, ...] = ()) -> list[CustomCallTarget]:
    chosen = [t for t in targets
              if (not conventions or t.convention in conventions)
              and (failing is None or (t.error is not None) == failing)
              and (not names or t.name in names)]
    if not chosen:
        pytest.skip("the driver declares no custom-call target of this kind")
    return chosen
