"""What every test module of the project's own tests shares."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long_running: minutes of whole-suite runs in subprocesses (the suites' own "
                                       "score); started before every other test")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The test command runs on two workers (-n 2 --dist worksteal).  The score's runs take minutes
    # each; started first, one worker spends them while the other takes everything else, instead
    # of both workers ending the run on them with the rest long done (measured: 990 s in collection
    # order against 1036 s on one worker).
    items.sort(key=lambda item: item.get_closest_marker("long_running") is None)
