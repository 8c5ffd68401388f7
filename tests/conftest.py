"""What every test module of the project's own tests shares."""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="session")
def once_per_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """``once(name, compute)``: ``compute(directory)`` run once for the whole test run, not once per
    xdist worker (a module fixture runs on every worker that takes one of its tests: the fuzz run
    behind three tests ran twice a run, half a minute of two busy cores each).  Its JSON result
    and the directory it worked in are shared through the run's common temporary directory."""
    def once(name: str, compute: Callable[[Path], Any]) -> tuple[Path, Any]:
        if not hasattr(request.config, "workerinput"):  # no xdist: this process is the whole run
            directory = tmp_path_factory.mktemp(name)
            return directory, compute(directory)
        root = tmp_path_factory.getbasetemp().parent  # this run's, shared by its workers
        directory, result = root / name, root / f"{name}.json"
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits, then reads the result
            if not result.exists():
                directory.mkdir(exist_ok=True)
                result.write_text(json.dumps(compute(directory)))
            return directory, json.loads(result.read_text())
    return once
