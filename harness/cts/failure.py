"""A golden example's failure, with what a reader and a reproducer need as fields."""

from __future__ import annotations

from typing import Any

from harness.api.errors import ConformanceError

__all__ = ["GoldenMismatch"]


class GoldenMismatch(ConformanceError):
    """A driver's result for a golden example differs from the golden output, or a step failed.

    The message names the spec file and line, the example, its variations and the test kind;
    ``golden`` carries them as data for the reproducer.
    """

    def __init__(self, test: Any, requirement: str, detail: str) -> None:
        case = test.case
        variations = "+".join(case.case.variations) or "default"
        where = f"{test.kind.value}{' in ' + test.memory_kind if test.memory_kind else ''}"
        super().__init__(f"[{requirement}] {case.case.spec}:{case.case.line} example {case.case.example} "
                         f"({case.id}), variation {variations}, {where}: {detail}", requirement=requirement)
        # plain strings (a memory kind is a StrEnum): a reproducer prints them as Python literals
        self.golden = {"path": str(case.path), "case": str(case.id), "kind": str(test.kind.value),
                       "memory_kind": str(test.memory_kind)}
