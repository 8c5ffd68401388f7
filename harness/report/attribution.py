"""Whose fault a failed test is, and which requirements it fails.

A failure is a verdict on the driver only when something judged the driver: the harness (a
``HarnessError``: a broken rule, a crash or a hang, a refused declaration), a check in a test's
own code (an ``assert``, or a ``pytest.raises`` the driver did not satisfy), or an exception the
driver's own code raised (marked where it left that code, `harness.api.errors.raised_by_driver`).
Anything else the harness raised on its own is a fault of the harness, and hypothesis' own errors
about a run (flaky data generation, a failed health check) say nothing of the driver: either way
the test gave no verdict, and its requirements did not run (the certificate says INCOMPLETE).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import pytest

from harness.api.errors import HarnessError, raised_by_driver
from harness.api.requirements import HARNESS_GUARANTEES, REQUIREMENTS

__all__ = ["FAULTS", "attribute_fault", "failed_requirements", "fault_of", "no_verdict_note", "raised_by_hypothesis"]

#: Whose fault a failed test is: a verdict on the driver, a fault of the harness, or of the run.
FAULTS = ("driver", "harness", "run")
_ATTRIBUTED = "_driver_harness_fault"


def fault_of(error: BaseException, in_a_test: Callable[[str], bool]) -> str:
    """Whose fault a test's failure with ``error`` (its verdict, `recording._verdict_of`) is.

    ``in_a_test(filename)``: whether a source file holds tests (an ``assert`` there is a check).
    A driver running in the harness's own process (``--driver-isolation=inline``) is called
    through `harness.drivers.inline`, which marks what leaves its code as a service's client does.
    """
    attributed = getattr(error, _ATTRIBUTED, None)
    if attributed in FAULTS:  # decided where it was raised (a forked child), where its traceback was
        return str(attributed)
    if isinstance(error, BaseExceptionGroup):
        faults = {fault_of(inner, in_a_test) for inner in error.exceptions}
        return next(fault for fault in FAULTS if fault in faults)
    if isinstance(error, (HarnessError, pytest.fail.Exception)) or raised_by_driver(error):
        return "driver"
    if raised_by_hypothesis(type(error).__module__):
        return "run"
    if isinstance(error, AssertionError) and in_a_test(_raised_in(error.__traceback__)):
        return "driver"
    return "harness"


def no_verdict_note(fault: str) -> str:
    """How a report says that a failure with ``fault`` is no verdict on the driver (plain text;
    empty for the driver's own failures).  One wording for every page that shows failures."""
    return "" if fault == "driver" else f"no verdict on the driver: a fault of the {fault}"


def attribute_fault(error: BaseException, fault: str) -> BaseException:
    """Give ``error`` the fault decided for it elsewhere: rebuilt from another process, its own
    traceback (which `fault_of` would read) is not here."""
    setattr(error, _ATTRIBUTED, fault)
    return error


def raised_by_hypothesis(module: str) -> bool:
    """Whether an exception type from ``module`` is one of hypothesis' own errors about the run
    (flaky data generation, an invalid strategy): by itself it says nothing of the driver."""
    return module.split(".")[0] == "hypothesis"


def _raised_in(traceback: TracebackType | None) -> str:
    """The source file of the innermost frame of ``traceback`` (where the exception was raised)."""
    filename = ""
    while traceback is not None:
        filename = traceback.tb_frame.f_code.co_filename
        traceback = traceback.tb_next
    return filename


def failed_requirements(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The requirements a test's record fails (none unless it failed with a verdict on the driver).

    A verdict that carries a rule of the driver's fails that rule alone, whether the test names it
    or not (a wrong value seen by a test of handles breaks the value rule, `harness.judging.culprit`):
    the test stopped there, before it had checked the others.  Any other verdict (a crash or a hang, whose rule is
    the service's; an exception the driver raised; a verdict without a rule) fails every
    requirement the test names, since nothing says which of them the driver broke, unless the
    crashed or hung call was made to check one of them (``checking``): then it fails that one.  A failure
    that was the harness's or the run's fault fails none (records before faults were kept: the driver's).
    """
    if record["outcome"] != "failed" or record.get("fault", "driver") != "driver":
        return ()
    rule = record.get("rule") or ""
    requirements = tuple(record["requirements"])
    if rule in requirements or (rule in REQUIREMENTS and rule not in HARNESS_GUARANTEES):
        return (rule,)
    if rule in HARNESS_GUARANTEES and record.get("checking") in requirements:
        return (record["checking"],)  # a crash or hang of a call made to check that rule
    return requirements
