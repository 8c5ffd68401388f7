"""A suite's own check of a SPEC rule, failing with the rule as a field.

``require(condition, "FFI-2", message)`` is the suites' ``assert`` for what a driver must do: it
raises a `ConformanceError` whose ``requirement`` the record, the certificate and the score read,
where a plain ``assert`` carries the rule only as text in its message."""

from __future__ import annotations

from harness.api.errors import ConformanceError

__all__ = ["require", "violation"]


def violation(requirement: str, message: str, **fields: object) -> ConformanceError:
    """The failure of ``requirement``: its message starts with the rule, for people; the rule
    itself travels in the ``requirement`` field (``fields``: ``scenario``, ``steps``)."""
    return ConformanceError(f"[{requirement}] {message}", requirement=requirement, **fields)  # type: ignore[arg-type]


def require(condition: object, requirement: str, message: str) -> None:
    """Fail the driver on ``requirement`` unless ``condition``; ``message`` shows both sides."""
    __tracebackhide__ = True
    if not condition:
        raise violation(requirement, message)
