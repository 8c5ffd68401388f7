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


def _share_starts(count: int, workers: int) -> list[int]:
    """Where each worker's first share of ``count`` tests starts: pytest-xdist's worksteal hands the
    idle workers consecutive, even shares of the collection (3.8's ``check_schedule``)."""
    starts, offset = [], 0
    for remaining in range(workers, 0, -1):
        starts.append(offset)
        offset += (count - offset) // remaining
    return starts


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The score's two tests (long_running) take minutes each.  Each heads a worker's share of the
    # collection, so that they start at once on two workers while the others take everything else.
    # First in collection order, both would fall in the first worker's share, and as a worker is
    # robbed from the end of its queue, that worker would run them one after the other: most of
    # the whole run's time.
    long_running = [item for item in items if item.get_closest_marker("long_running") is not None]
    rest = [item for item in items if item.get_closest_marker("long_running") is None]
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    starts = _share_starts(len(items), workers)[1:len(long_running)]
    ahead = long_running[:len(long_running) - len(starts)]  # the first share's, and any without a share of their own
    ordered = [*ahead, *rest]
    for start, item in zip(starts, long_running[len(ahead):]):
        ordered.insert(start, item)
    items[:] = ordered


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
