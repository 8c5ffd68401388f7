"""A golden example's failure, with what a reader and a reproducer need as fields."""

from __future__ import annotations

from typing import Any

from harness.api.errors import ConformanceError

__all__ = ["GoldenMismatch", "golden_of"]


def golden_of(test: Any) -> dict:
    """What a reproducer needs to run a golden example again (`harness.cts.reproduce.check_one`)."""
    # plain strings (a memory kind is a StrEnum): a reproducer prints them as Python literals
    return {"path": str(test.case.path), "case": str(test.case.id), "kind": str(test.kind.value),
            "memory_kind": str(test.memory_kind)}


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
        self.golden = golden_of(test)
