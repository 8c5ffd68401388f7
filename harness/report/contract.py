"""The contract's text, by requirement ID: the reports link each requirement to its section.

The contract is ``docs/spec.md`` in the project; the package ships the same file as
``harness/spec.md`` (``tests/meta/test_spec.py`` keeps the two identical), so an installed
harness reads it without a checkout.  Every requirement and CHOICE has a heading of its own that
is just its ID, so its anchor is the ID in lower case, on the documentation site and on a
repository's rendering of the file alike.
"""

from __future__ import annotations

import functools
import importlib.resources
import re

#: Where the contract lives in the project; a requirement's link is this plus its anchor.
DOCUMENT = "docs/spec.md"

_HEADING = re.compile(r"^### ([A-Z]+(?:-[A-Z]+)?-\d+)\s*$")


def anchor(requirement: str) -> str:
    """The anchor of ``requirement``'s section (``POOL-2`` -> ``pool-2``)."""
    return requirement.lower()


def link(requirement: str) -> str:
    """The address of ``requirement``'s text in the project, e.g. ``docs/spec.md#pool-2``."""
    return f"{DOCUMENT}#{anchor(requirement)}"


def text() -> str:
    """The whole contract, as shipped in the package."""
    return importlib.resources.files("harness").joinpath("spec.md").read_text(encoding="utf-8")


@functools.cache
def sections() -> dict[str, str]:
    """Each requirement's and CHOICE's text (Markdown, without its heading), by ID, in the
    document's order."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text().splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = found.setdefault(heading.group(1), [])
        elif line.startswith("#"):
            current = None
        elif current is not None:
            current.append(line)
    return {requirement: "\n".join(lines).strip() for requirement, lines in found.items()}
