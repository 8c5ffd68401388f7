"""Which requirements a failed test fails: the rule its verdict carries, when the test names it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["failed_requirements"]


def failed_requirements(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The requirements a test's record fails (none unless it failed).

    A verdict that carries one of the rules the test names fails that rule alone: the test stopped
    there, before it had checked the others.  Any other failure (a crash or a hang, whose rule is
    the service's; an unexpected exception; a verdict without a rule) fails every requirement the
    test names, since nothing says which of them the driver broke.
    """
    if record["outcome"] != "failed":
        return ()
    rule = record.get("rule") or ""
    requirements = tuple(record["requirements"])
    return (rule,) if rule in requirements else requirements
