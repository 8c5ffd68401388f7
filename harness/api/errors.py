"""The harness's own exceptions (not a driver's: drivers raise `harness.api.hal.DriverError`).

    HarnessError
    ├── UsageError            bad input to the harness: unknown driver, malformed file
    │   ├── ExpectationsError malformed expectations file (names the line)
    │   └── DeclarationError  a plugin declared something invalid (names plugin, field, allowed values)
    ├── DriverLoadError       a plugin failed to import, lacks something, or its factory raised
    └── ConformanceError      a driver broke a SPEC requirement (raised by assertion helpers)
        └── DriverFault       the driver service failed a call instead of answering it
            ├── DriverCrash   the service process died during the call (SVC-1)
            └── DriverHang    the call did not return before its deadline (SVC-2)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConformanceError",
    "DeclarationError",
    "DriverCrash",
    "DriverFault",
    "DriverHang",
    "DriverLoadError",
    "ExpectationsError",
    "HarnessError",
    "UsageError",
]


class HarnessError(Exception):
    """Root of every error the harness raises on its own account."""


class UsageError(HarnessError):
    """The harness was asked for something that does not exist or cannot be read."""


class ExpectationsError(UsageError):
    """An expectations file is malformed; the message names the file and the line."""


class DeclarationError(UsageError):
    """A plugin's declaration (capabilities, custom-call target, packed-function library) is invalid.

    One line, from its fields: the plugin, what it declared, the field, the value and what is allowed.
    """

    def __init__(self, plugin: str, declared: str, field: str, value: object, allowed: str) -> None:
        super().__init__(f"plugin {plugin}: {declared}: field {field!r} is {value!r}; allowed: {allowed}")
        self.plugin = plugin
        self.declared = declared
        self.field = field
        self.value = value
        self.allowed = allowed


class DriverLoadError(HarnessError):
    """A driver plugin could not be loaded or its factory failed; names the plugin."""


class ConformanceError(AssertionError, HarnessError):
    """A driver's behaviour differs from what SPEC requires.

    Typed fields, so that what failed travels as data: ``requirement`` (the SPEC rule ID),
    ``scenario`` (the failing `harness.judging.scenario.Scenario`, which a reproducer prints) or
    ``steps`` (the lockstep call sequence that led to it).
    """

    requirement: str = ""
    scenario: Any = None
    steps: tuple[Any, ...] = ()

    def __init__(self, message: str = "", *, requirement: str = "", scenario: Any = None,
                 steps: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        if requirement:  # otherwise the class's own (a crash is SVC-1, a hang SVC-2)
            self.requirement = requirement
        self.scenario = scenario
        self.steps = tuple(steps)


class DriverFault(ConformanceError):
    """The driver service did not answer a call; SPEC says it must never crash or hang."""


class DriverCrash(DriverFault):
    """The service process exited or was killed by a signal during a call."""

    requirement = "SVC-1"


class DriverHang(DriverFault):
    """A call did not return within its deadline; the message carries the service's stacks."""

    requirement = "SVC-2"
