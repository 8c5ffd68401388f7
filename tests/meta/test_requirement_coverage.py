"""Every requirement of SPEC §2–7 is checked by at least one suite test (by marker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.api.requirements import REQUIREMENTS, SPEC_REQUIREMENTS, core_requirements

SPEC = Path(__file__).resolve().parents[3] / "shared" / "SPEC.md"


def collected_markers(pytester: pytest.Pytester) -> dict[str, list[str]]:
    items, _ = pytester.inline_genitems("--pyargs", "harness.suites", "-p", "no:cacheprovider")
    covered: dict[str, list[str]] = {}
    for item in items:
        for marker in item.iter_markers("requirement"):
            for requirement in marker.args:
                covered.setdefault(requirement, []).append(item.nodeid)
    return covered, items


def test_every_core_requirement_is_covered(pytester: pytest.Pytester) -> None:
    covered, items = collected_markers(pytester)
    missing = [r for r in core_requirements() if r not in covered]
    assert not missing, f"SPEC requirements with no suite test: {missing}"
    unmarked = [item.nodeid for item in items if not list(item.iter_markers("requirement"))]
    assert not unmarked, f"suite tests without a requirement marker: {unmarked}"
    unknown = sorted(set(covered) - set(REQUIREMENTS))
    assert not unknown, f"markers naming requirements SPEC does not have: {unknown}"


@pytest.mark.skipif(not SPEC.is_file(), reason="../shared/SPEC.md is not beside this checkout")
def test_requirement_list_matches_spec() -> None:
    found = re.findall(r"^- ([A-Z]+(?:-[A-Z]+)?-\d+) ", SPEC.read_text(encoding="utf-8"), flags=re.MULTILINE)
    in_spec = [r for r in found if not r.startswith("CHOICE-")]  # §8: what a driver may choose, not a requirement
    assert in_spec == list(SPEC_REQUIREMENTS)  # OPS-1..3 are the harness's own (CHOICE-8 on golden examples)
