"""Run one golden example again, by spec file, example name and test kind (reproducer scripts)."""

from __future__ import annotations

from harness.api.hal import Device

from .check import GoldenTest, check_example
from .corpus import load_corpus
from .kinds import GoldenKind

__all__ = ["check_one"]


def check_one(driver: Device, path: str, case: str, kind: str, memory_kind: str = "") -> None:
    """Raise `GoldenMismatch` while the driver still fails the example."""
    cases = [c for c in load_corpus([path]).cases if c.id == case]
    if not cases:
        raise LookupError(f"{path} no longer has an example named {case}")
    check_example(driver, GoldenTest(cases[0], GoldenKind(kind), memory_kind))
