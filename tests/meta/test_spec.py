"""The contract is in the project (docs/spec.md), shipped in the package, and every report links
each requirement to its text there."""

from __future__ import annotations

import re
from pathlib import Path

from harness.api.requirements import REQUIREMENTS
from harness.report import certificate, contract, html

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "spec.md"
SHIPPED = ROOT / "harness" / "spec.md"
CHOICES = [f"CHOICE-{n}" for n in range(1, 9)]


def headings() -> list[str]:
    return re.findall(r"^### (\S+)\s*$", DOCUMENT.read_text(encoding="utf-8"), flags=re.MULTILINE)


def test_every_requirement_has_its_section_and_every_section_its_requirement() -> None:
    found = headings()
    assert len(found) == len(set(found)), f"IDs with two sections: {sorted({h for h in found if found.count(h) > 1})}"
    requirements = [h for h in found if not h.startswith("CHOICE-")]
    assert sorted(set(REQUIREMENTS) - set(requirements)) == [], "requirements with no section in docs/spec.md"
    assert sorted(set(requirements) - set(REQUIREMENTS)) == [], "sections of docs/spec.md naming no requirement"
    assert requirements == list(REQUIREMENTS), "docs/spec.md and harness/api/requirements.py list them in one order"
    assert [h for h in found if h.startswith("CHOICE-")] == CHOICES


def test_every_section_says_something() -> None:
    sections = contract.sections()
    assert list(sections) == headings()
    assert all(len(text.split()) >= 8 for text in sections.values()), [r for r, t in sections.items() if len(t.split()) < 8]


def test_the_package_ships_the_contract_as_it_is_in_the_docs() -> None:
    assert SHIPPED.read_bytes() == DOCUMENT.read_bytes(), "harness/spec.md differs: cp docs/spec.md harness/spec.md"
    assert contract.text() == DOCUMENT.read_text(encoding="utf-8")


def test_nothing_points_to_a_contract_outside_the_project() -> None:
    outside = "SPEC" + ".md"  # the old name, of a file beside the checkout that no install has
    files = [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), ROOT / ".ci" / "run", *(
        path for folder in ("harness", "reference_driver", "plugins", "suites", "tests", "benchmarks")
        for suffix in ("py", "md", "toml", "h", "c", "cc") for path in (ROOT / folder).rglob(f"*.{suffix}")
        if "build" not in path.relative_to(ROOT).parts)]
    pointing = [str(path.relative_to(ROOT)) for path in files if outside in path.read_text(encoding="utf-8", errors="replace")]
    assert pointing == [], f"these point to {outside}; the contract is docs/spec.md"


def test_the_certificate_and_its_page_link_every_requirement_to_its_text() -> None:
    records = [{"id": f"t::{r}", "requirements": [r], "outcome": "passed", "skip": None, "waiver": ""} for r in REQUIREMENTS]
    document = certificate.build(records, {"driver": "d"}, "start", "end", True, 1.0)
    anchors = {contract.anchor(r) for r in headings()}
    for requirement, entry in document["requirements"].items():
        path, _, anchor = entry["spec"].partition("#")
        assert (ROOT / path) == DOCUMENT and anchor in anchors and anchor == requirement.lower(), entry["spec"]
    page = html.render(document)
    for requirement in REQUIREMENTS:
        target = f"spec-{contract.anchor(requirement)}"
        assert f'href="#{target}"' in page and f'id="{target}"' in page, requirement
    assert 'id="spec-choice-7"' in page
    assert "bytes that lie outside the regions of the outputs stay as they were" in page  # POOL-2's own text
