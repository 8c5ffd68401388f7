"""Every requirement of the contract (docs/spec.md) is checked by at least one suite test (by marker);
tests/meta/test_spec.py holds the contract and the catalogue to the same IDs."""

from __future__ import annotations

import pytest

from harness.api.requirements import REQUIREMENTS, core_requirements


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
