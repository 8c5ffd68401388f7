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

from collections.abc import Callable
from typing import Any, TypeVar

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
    "calls_into_driver",
    "mark_raised_by_driver",
    "raised_by_driver",
]

_T = TypeVar("_T")
_RAISED_BY_DRIVER = "_driver_harness_raised_by_driver"


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
    ``steps`` (the lockstep call sequence that led to it), and ``earlier``: the call sequences the
    same driver process had before those steps, in earlier tests
    (`harness.judging.driver_history.EarlierSequence`), for a failure that needs them.
    """

    requirement: str = ""
    scenario: Any = None
    steps: tuple[Any, ...] = ()
    earlier: tuple[Any, ...] = ()

    def __init__(self, message: str = "", *, requirement: str = "", scenario: Any = None,
                 steps: tuple[Any, ...] = (), earlier: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        if requirement:  # otherwise the class's own (a crash is SVC-1, a hang SVC-2)
            self.requirement = requirement
        self.scenario = scenario
        self.steps = tuple(steps)
        self.earlier = tuple(earlier)


class DriverFault(ConformanceError):
    """The driver service did not answer a call; SPEC says it must never crash or hang.

    ``by_breaker``: the call was not made, the service's circuit breaker refused it after the same
    faults in earlier tests (`harness.service.breaker`).  Its scenario or steps are the last of those
    faults'; with neither, what the verdict needs is those tests, on whichever service processes
    they ran.  ``golden``: the golden example the fault happened on (`harness.cts.check`), which
    its reproducer runs again, as a golden mismatch's does."""

    by_breaker: bool = False
    golden: dict[str, str] | None = None
    #: The requirement the call was made to check (a request's validation, a handle's rejection),
    #: when a judge made it for one: a crash or a hang there breaks that rule, as a wrong answer would.
    checking: str = ""


class DriverCrash(DriverFault):
    """The service process exited or was killed by a signal during a call."""

    requirement = "SVC-1"


class DriverHang(DriverFault):
    """A call did not return within its deadline; the message carries the service's stacks."""

    requirement = "SVC-2"


# ------------------------------------------------------------------ whose code raised an exception
# A test that ends in an exception nobody judged is a verdict on the driver only when the driver's
# code raised it; anything else the harness raised on its own (a fault of the harness: the
# certificate says INCOMPLETE, not FAIL).  Exceptions are marked where they leave the driver's
# code: the service's client, the packed functions a library registered, a target run under XLA.


def mark_raised_by_driver(error: BaseException) -> BaseException:
    """Mark ``error`` as raised by the driver's own code, on its way out of a call into it."""
    if hasattr(error, "__dict__"):  # every exception class but one built with __slots__ alone
        setattr(error, _RAISED_BY_DRIVER, True)
    return error


def raised_by_driver(error: BaseException) -> bool:
    """Whether ``error`` left the driver's own code (see `mark_raised_by_driver`)."""
    return bool(getattr(error, _RAISED_BY_DRIVER, False))


def calls_into_driver(function: Callable[..., _T]) -> Callable[..., _T]:
    """``function``, the driver's own code called in the harness's process, as a callable whose
    exceptions are marked as the driver's."""

    def call(*args: Any, **kwargs: Any) -> _T:
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            mark_raised_by_driver(error)
            raise

    return call
