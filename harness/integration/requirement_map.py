"""A pytest plugin for ``harness score``: after collecting the suites, write which test modules
hold a test naming each requirement (their files' absolute paths).

A seeded bug is caught only by a test naming the requirement it breaks, so its scoring run needs
those modules and no other: collecting and importing every suite for each of a hundred runs was
a quarter of each run's time.  The map comes from the very markers the runs are judged by.  A bug
of the value rule can be caught by any test, but first by those of the operations it breaks: the
second map, of the modules holding a test that draws each operation, lets its run try those first.

    python -m pytest --collect-only -p harness.integration.requirement_map --harness-requirement-map=FILE
        [--harness-operation-map=FILE] ...
"""

from __future__ import annotations

import json

import pytest

from harness.integration.plugin import concerned_operations
from harness.report.files import write_atomically


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--harness-requirement-map", default="", metavar="FILE",
                     help="write {requirement: [test module, ...]} of the collected tests to FILE (JSON)")
    parser.addoption("--harness-operation-map", default="", metavar="FILE",
                     help="write {operation: [test module, ...]} of the collected tests to FILE (JSON)")


def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("harness_requirement_map")
    if not path:
        return
    modules: dict[str, set[str]] = {}
    for item in session.items:
        for marker in item.iter_markers("requirement"):
            for requirement in marker.args:
                modules.setdefault(requirement, set()).add(str(item.path))
    write_atomically(path, json.dumps({requirement: sorted(names) for requirement, names in sorted(modules.items())}),
                     durable=False)  # read once, by the score that asked for it
    path = session.config.getoption("harness_operation_map")
    if path:
        drawing: dict[str, set[str]] = {}
        for item in session.items:
            for operation in concerned_operations(item):
                drawing.setdefault(operation, set()).add(str(item.path))
        write_atomically(path, json.dumps({operation: sorted(names) for operation, names in sorted(drawing.items())}),
                         durable=False)
