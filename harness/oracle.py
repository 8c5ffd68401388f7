"""Assertion helpers that explain themselves: the SPEC rule, the call, both sides."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from harness.hal import DriverError, ErrorStatus

__all__ = ["expect_status"]


@contextmanager
def expect_status(*statuses: ErrorStatus, rule: str = "", call: str = "") -> Iterator[pytest.ExceptionInfo[DriverError]]:
    """The block must fail with a DriverError carrying one of ``statuses``."""
    __tracebackhide__ = True
    wanted = " or ".join(s.name for s in statuses)
    context = f"[{rule}] " if rule else ""
    with pytest.raises(DriverError) as info:
        yield info
        pytest.fail(f"{context}{call or 'the call'} succeeded; SPEC requires {wanted}", pytrace=False)
    if info.value.status not in statuses:
        pytest.fail(f"{context}{call or 'the call'} failed with {info.value}; SPEC requires {wanted}", pytrace=False)
