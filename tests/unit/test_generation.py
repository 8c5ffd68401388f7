"""A seed means the same examples whatever local modules the process has imported
(harness/integration/generation.py)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

from harness.integration.generation import pin_local_constants


def _drawn(with_seed: int) -> list[int]:
    drawn: list[int] = []

    @seed(with_seed)
    @settings(max_examples=300, database=None, phases=[Phase.generate], deadline=None)
    @given(st.integers(0, 10_000))
    def record(value: int) -> None:
        drawn.append(value)

    record()
    return drawn


def test_a_seed_draws_the_same_values_after_another_local_module_is_imported(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pin_local_constants()  # as the harness plugin does when pytest starts (again: it must be idempotent)
    before = _drawn(5)
    # A module of the vendor's, say, imported on the way: its source holds 100 integers in the range drawn.
    (tmp_path / "vendor_helpers.py").write_text(f"LIMITS = {tuple(range(7001, 7101))}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("vendor_helpers")
    after = _drawn(5)
    assert len(before) == 300 and after == before
    assert not set(after) & set(range(7001, 7101))
