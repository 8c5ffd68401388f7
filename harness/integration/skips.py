"""Why a test did not run, as data: the certificate's *not-applicable* and *not-run* statuses.

A skip is a statement.  The suites skip only through these two functions, and the
recorder reads the exception's fields (never its text) to fill the certificate:

- `not_applicable(capability, reason)`: the driver's declared capabilities exclude what the
  test checks.  ``capability`` is one of `CAPABILITIES`; a requirement whose every test is
  not applicable is *not-applicable* in the certificate, naming the capability.
- `not_run(reason, fix)`: anything else stopped the test (a missing extra or compiler, an
  option of the run, a driver that refused what the test needed).  A requirement with a
  not-run test is *not-run*, the certificate is INCOMPLETE, and ``fix`` is the command or
  step that makes it run.

Any other skip (a plain ``pytest.skip`` in a vendor's conftest, an empty parametrization)
is counted as not-run: what the harness cannot explain, it never counts as passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NoReturn

import pytest

from harness.api.hal import BufferDesc, BufferRole, Capabilities, DriverError, ErrorStatus
from harness.strategies.models import buildable_families

__all__ = ["CAPABILITIES", "REFUSED_ALLOCATION_FIX", "NotApplicable", "NotRun", "not_applicable", "not_run",
           "allocated_or_not_run", "models_buildable", "refused_allocation"]

#: What a driver declares, and so what may make a test not applicable.
CAPABILITIES: Final = (
    "memory_kinds",          # Capabilities.memory_kinds
    "memory_domains",        # Capabilities.memory_domains
    "operations",            # Capabilities.operations
    "operand_types",         # Capabilities.operand_types
    "dynamic_buffers",       # Capabilities.dynamic_buffers: buffers of unknown shape (DOM-DYN)
    "custom_call_targets",   # hook harness_custom_call_targets
    "packed_functions",      # hook harness_packed_functions
)


class NotApplicable(pytest.skip.Exception):  # type: ignore[name-defined,misc]
    """The driver's declared ``capability`` excludes what the test checks."""

    def __init__(self, capability: str, reason: str) -> None:
        if capability not in CAPABILITIES:
            raise ValueError(f"capability {capability!r} is not one of {', '.join(CAPABILITIES)}")
        super().__init__(f"not applicable ({capability}): {reason}")
        self.capability = capability
        self.reason = reason


class NotRun(pytest.skip.Exception):  # type: ignore[name-defined,misc]
    """Something other than the driver's declarations stopped the test; ``fix`` makes it run."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(f"not run: {reason} (to run it: {fix})")
        self.reason = reason
        self.fix = fix


def not_applicable(capability: str, reason: str) -> NoReturn:
    __tracebackhide__ = True
    raise NotApplicable(capability, reason)


def models_buildable(capabilities: Capabilities, family: str = "") -> None:
    """Not applicable unless the driver's declarations build a model (of ``family``, when given):
    a declared operation on a declared type it takes (`harness.strategies.models.buildable_families`)."""
    __tracebackhide__ = True
    buildable = buildable_families(capabilities)
    if not buildable or (family and family not in buildable):
        declared = ", ".join(sorted(t.name for t in capabilities.operand_types)) or "none"
        not_applicable("operations", f"the driver declares no {family + ' ' if family else ''}operation on an operand "
                                     f"type that operation takes (declared types: {declared})")


def not_run(reason: str, fix: str) -> NoReturn:
    __tracebackhide__ = True
    raise NotRun(reason, fix)


#: What makes a test run that a driver's refusal of a valid allocation stopped (DOM-ALLOC-3).
REFUSED_ALLOCATION_FIX: Final = ("serve this valid allocation (or, for a driver without memory domains, "
                                 "declare Capabilities(memory_domains=False))")


def refused_allocation(detail: object = "") -> NoReturn:
    """The test could not run because the driver refused a valid allocation: DOM-ALLOC-3 allows
    the refusal, but nothing was checked, so the test is not run (never a silent pass)."""
    __tracebackhide__ = True
    suffix = f": {detail}" if detail else ""
    raise NotRun(f"the driver refused a valid allocation with GENERAL_FAILURE (DOM-ALLOC-3 allows it, but nothing was "
                 f"checked){suffix}", REFUSED_ALLOCATION_FIX)


def allocated_or_not_run(driver: Any, desc: BufferDesc, prepared_models: Sequence[Any], input_roles: Sequence[BufferRole],
                         output_roles: Sequence[BufferRole]) -> tuple[Any, int]:
    """``driver.allocate(...)`` (a `Device`, or a test's `DirectCalls` on one) for a test that
    needs the buffer: a GENERAL_FAILURE refusal (DOM-ALLOC-3 allows it) means the test cannot run
    (`refused_allocation`); any other error is the driver's to answer for."""
    __tracebackhide__ = True
    try:
        return driver.allocate(desc, list(prepared_models), list(input_roles), list(output_roles))
    except DriverError as error:
        if error.status != ErrorStatus.GENERAL_FAILURE:
            raise
        refused_allocation(error)
