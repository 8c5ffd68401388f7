"""A test that calls the driver's code in the harness's process makes its call in a forked child
(`harness.integration.forked`): what the child raised is raised again here, with its rule and
whose fault it is; a child that dies or hangs is the driver's crash or hang, and this process
goes on."""

from __future__ import annotations

import os
import signal
import time

import pytest

from harness.api.errors import ConformanceError, DriverCrash, DriverHang, calls_into_driver
from harness.integration.forked import RaisedInChild, run_in_child
from harness.integration.recording import judged
from harness.integration.skips import NotApplicable
from harness.report.attribution import fault_of


def _run(call, deadline: float = 30.0) -> list[int]:
    counted: list[int] = []
    examples = iter(range(0, 1000, 3))  # the child reads it twice: 3 examples ran in between
    run_in_child(call, lambda error: judged(error, __file__), lambda: next(examples), counted.append, "a call", deadline)
    return counted


def _fault(error: BaseException) -> str:
    return fault_of(error, lambda filename: False)  # here, the parent's frames are no test's


def test_a_call_that_passes_passes_and_its_examples_count() -> None:
    assert _run(lambda: None) == [3]


def test_a_verdict_comes_back_with_its_rule() -> None:
    def broken() -> None:
        raise ConformanceError("[FFI-2] 7 came back as 8", requirement="FFI-2")

    with pytest.raises(ConformanceError) as raised:
        _run(broken)
    assert raised.value.requirement == "FFI-2" and _fault(raised.value) == "driver"


def test_whose_fault_is_decided_where_the_traceback_was() -> None:
    def check() -> None:
        assert 1 == 2, "a check in a test's own code"

    def harness_bug() -> None:
        {}["slot"]

    def drivers_error() -> None:
        calls_into_driver(lambda: {}["slot"])()

    for call, kind, fault in ((check, AssertionError, "driver"), (harness_bug, KeyError, "harness"),
                              (drivers_error, KeyError, "driver")):
        with pytest.raises(kind) as raised:
            _run(call)
        assert _fault(raised.value) == fault, call


def test_a_library_s_own_exception_keeps_its_name() -> None:
    class LibraryError(Exception):
        pass

    def raises() -> None:
        calls_into_driver(lambda: (_ for _ in ()).throw(LibraryError("from the library")))()

    with pytest.raises(RaisedInChild) as raised:
        _run(raises)
    assert raised.value.kind.endswith("LibraryError") and _fault(raised.value) == "driver"


def test_a_skip_stays_a_skip() -> None:
    def skips() -> None:
        raise NotApplicable("packed_functions", "no library")

    with pytest.raises(NotApplicable) as raised:
        _run(skips)
    assert raised.value.capability == "packed_functions"


def test_a_child_that_dies_is_a_crash_and_this_process_goes_on() -> None:
    with pytest.raises(DriverCrash) as raised:
        _run(lambda: os.kill(os.getpid(), signal.SIGSEGV))
    assert raised.value.requirement == "SVC-1" and "SIGSEGV" in str(raised.value)


def test_a_child_past_its_deadline_is_killed_as_a_hang() -> None:
    with pytest.raises(DriverHang) as raised:
        _run(lambda: time.sleep(60), deadline=0.5)
    assert raised.value.requirement == "SVC-2"


def test_an_outcome_the_harness_cannot_read_is_the_drivers(monkeypatch) -> None:
    # The driver's code runs in the child and could write to the pipe: what comes back is checked.
    from harness.integration import forked
    from harness.service.client import RemoteError

    monkeypatch.setattr(forked.json, "dumps", lambda outcome: "{not json")
    with pytest.raises(RemoteError) as raised:
        _run(lambda: None)
    assert raised.value.requirement == "SVC-1"
