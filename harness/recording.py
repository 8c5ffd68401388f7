"""Per-test records of a run (``--harness-record FILE``): the raw material of scores and certificates.

One JSON object per test and line, appended as each test finishes (so an interrupted run
keeps what it did): canonical id, requirement markers, outcome, duration, how many
generated examples ran, and the first line of the failure.  ``--harness-stop-on REQ``
ends the run at the first failure of a test that names REQ (a seeded bug is caught).
"""

from __future__ import annotations

import functools
import json
import os
import time

import pytest


def requirements_of(item: pytest.Item) -> list[str]:
    return [r for marker in item.iter_markers("requirement") for r in marker.args]


class Recorder:
    def __init__(self, path: str, stop_on: str, canonical_id) -> None:
        self.path = path
        self.stop_on = stop_on
        self.canonical_id = canonical_id
        self.started = time.monotonic()
        self.examples_run = 0  # generated examples so far; a test's count is the difference
        self._examples_at_start = 0
        self._file = open(path, "a", encoding="utf-8")

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            handle = getattr(getattr(item, "obj", None), "hypothesis", None)
            if handle is None or getattr(handle, "_harness_counted", False):
                continue
            inner = handle.inner_test

            @functools.wraps(inner)
            def counted(*args, __inner=inner, **kwargs):
                self.examples_run += 1
                return __inner(*args, **kwargs)

            handle.inner_test = counted
            handle._harness_counted = True

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._examples_at_start = self.examples_run

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self._record(item, report)

    def _record(self, item: pytest.Item, report) -> None:
        message = ""
        if report.failed:
            text = str(report.longrepr)
            lines = [line[2:].strip() for line in text.splitlines() if line.startswith("E ")]
            message = next((line for line in lines if line), text.splitlines()[-1] if text else "")
        elif report.skipped and isinstance(report.longrepr, tuple):
            message = report.longrepr[2]
        requirements = requirements_of(item)
        record = {
            "id": self.canonical_id(item),
            "requirements": requirements,
            "outcome": "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome,
            "duration": round(report.duration, 4),
            "elapsed": round(time.monotonic() - self.started, 3),
            "examples": (self.examples_run - self._examples_at_start)
            if getattr(getattr(item, "obj", None), "hypothesis", None) is not None else None,
            "message": message[:2000],
        }
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())  # a run that dies later still keeps this record
        if report.failed and self.stop_on and self.stop_on in requirements:
            item.session.shouldstop = f"a test naming {self.stop_on} failed"

    def close(self) -> None:
        self._file.close()
