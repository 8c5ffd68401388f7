"""pytest fixtures of the custom-call suites (registered by the harness pytest plugin)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.api.custom_calls import CustomCallTarget
from harness.api.errors import calls_into_driver
from harness.integration.skips import not_applicable, not_run

_NO_COMPILER_FIX = "install a C compiler (Debian: apt-get install gcc) or set CC to one"


@pytest.fixture(scope="session")
def custom_call_targets(pytestconfig: pytest.Config, driver: Any) -> list[CustomCallTarget]:
    """The targets the driver's plugins declare; not applicable without any."""
    from harness.tooling import CompilerMissing
    from harness.integration.plugin import declared_for_driver

    targets = declared_for_driver(pytestconfig, "custom_call_targets")
    if not targets:
        not_applicable("custom_call_targets", f"driver {driver.name!r} declares no custom-call targets "
                                              "(hook harness_custom_call_targets)")
    try:
        for target in targets:
            # built here once, so a missing compiler is one clear statement (the plugin's build: its code)
            calls_into_driver(target.library_path)()
    except CompilerMissing as error:
        not_run(f"the custom-call targets cannot be built: {error}", _NO_COMPILER_FIX)
    return targets


@pytest.fixture
def target(request: pytest.FixtureRequest, custom_call_targets: list[CustomCallTarget]) -> CustomCallTarget:
    """One declared target that fits the test (parametrized by the suites' conftest); a test no
    declared target fits is not applicable."""
    if request.param is None:
        marker = request.node.get_closest_marker("targets")
        wanted = ", ".join(f"{k}={v}" for k, v in (marker.kwargs if marker else {}).items())
        not_applicable("custom_call_targets", f"the driver declares no custom-call target of this kind ({wanted})")
    return request.param


@pytest.fixture
def under_xla(target: CustomCallTarget) -> None:
    """The tests that run targets under real XLA need jax (asked after ``target``: a driver with
    no target of the kind is not applicable, whatever is installed)."""
    from harness.service.xla import unavailable
    from harness.tooling import CompilerMissing

    if unavailable():
        not_run("jax is not installed, so the targets were not run under XLA", "pip install 'driver-harness[xla]'")
    try:
        # built here, where a compiler's time counts against no call's deadline (the plugin's build: its code)
        calls_into_driver(target.xla_library_path)()
    except CompilerMissing as error:
        not_run(f"the typed-FFI handlers cannot be built: {error}", _NO_COMPILER_FIX)


@pytest.fixture(scope="session")
def custom_calls(pytestconfig: pytest.Config, custom_call_targets: list[CustomCallTarget]) -> Any:
    """Where the targets are called: the driver service (default) or this process (inline)."""
    from harness.drivers.inline import InlineCustomCalls
    from harness.integration.plugin import state_of
    from harness.service.custom_calls import CustomCallExecutor

    service = state_of(pytestconfig).service
    return service.custom_calls if service is not None else InlineCustomCalls(CustomCallExecutor(custom_call_targets))


def targets_where(targets: list[CustomCallTarget], *, conventions: tuple[str, ...] = (), failing: bool | None = None,
                  names: tuple[str, ...] = ()) -> list[CustomCallTarget]:
    chosen = [t for t in targets
              if (not conventions or t.convention in conventions)
              and (failing is None or (t.error is not None) == failing)
              and (not names or t.name in names)]
    if not chosen:
        not_applicable("custom_call_targets", "the driver declares no custom-call target of this kind "
                                              f"(conventions {conventions or 'any'}, failing {failing})")
    return chosen
