"""A suite's own check of a SPEC rule, failing with the rule as a field.

``require(condition, "FFI-2", message)`` is the suites' ``assert`` for what a driver must do: it
raises a `ConformanceError` whose ``requirement`` the record, the certificate and the score read,
where a plain ``assert`` carries the rule only as text in its message.

A check that passes says so too (`held`): a test that names several rules and fails on one of
them had already checked others, and its record keeps which (`rules_held`), so that the
certificate counts it for those instead of calling them not run."""

from __future__ import annotations

from harness.api.errors import ConformanceError

__all__ = ["forget_rules_held", "held", "require", "rules_held", "violation"]

#: the rules checked, and met, since the running test began (a process runs one test at a time)
_HELD: set[str] = set()


def violation(requirement: str, message: str, **fields: object) -> ConformanceError:
    """The failure of ``requirement``: its message starts with the rule, for people; the rule
    itself travels in the ``requirement`` field (``fields``: ``scenario``, ``steps``)."""
    return ConformanceError(f"[{requirement}] {message}", requirement=requirement, **fields)  # type: ignore[arg-type]


def require(condition: object, requirement: str, message: str) -> None:
    """Fail the driver on ``requirement`` unless ``condition``; ``message`` shows both sides."""
    __tracebackhide__ = True
    if not condition:
        raise violation(requirement, message)
    held(requirement)


def held(requirement: str) -> None:
    """The running test checked ``requirement`` and the driver met it."""
    _HELD.add(requirement)


def rules_held() -> list[str]:
    """The rules the running test checked and the driver met, so far."""
    return sorted(_HELD)


def forget_rules_held() -> None:
    """A test begins: nothing it checked yet."""
    _HELD.clear()
