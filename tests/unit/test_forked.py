"""A test that calls the driver's code in the harness's process makes its call in a forked child
(`harness.integration.forked`): what the child raised is raised again here, with its rule and
whose fault it is; a child that dies or hangs is the driver's crash or hang, and this process
goes on."""

from __future__ import annotations

import os
import signal
import time

import pytest
from hypothesis.database import InMemoryExampleDatabase

from harness.api.errors import ConformanceError, DriverCrash, DriverHang, calls_into_driver
from harness.api.packed import LoadedLibrary, PackedFunctionLibrary
from harness.integration.forked import RaisedInChild, TestExamples, run_in_child
from harness.integration.recording import judged
from harness.integration.skips import NotApplicable
from harness.report.attribution import fault_of
from harness.tooling.sandbox import landlock_abi


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


@pytest.mark.skipif(landlock_abi() < 1, reason="this kernel offers no Landlock: the certificate says unsandboxed")
def test_the_child_reaches_no_file_of_the_run(tmp_path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("the harness's own\n")
    with open(records, "a") as held:  # as the recorder holds its records: a descriptor the child inherits

        def forge() -> None:
            os.write(held.fileno(), b"forged\n")
            with open(tmp_path / "certificate.json", "w") as forged:
                forged.write("PASS")

        with pytest.raises(PermissionError):
            _run(forge)
    assert records.read_text() == "the harness's own\n"
    assert not (tmp_path / "certificate.json").exists()


def _lent_run(database: InMemoryExampleDatabase, key: bytes, call) -> None:
    lent: list = []
    run_in_child(lambda: call(lent[0]), lambda error: judged(error, __file__), lambda: 0, lambda number: None,
                 "a call", 30.0, TestExamples(database, key), lent.append)


def test_a_child_reads_its_test_s_examples_and_its_changes_come_back() -> None:
    database = InMemoryExampleDatabase()
    database.save(b"test", b"stored")

    def changes(lent) -> None:
        assert list(lent.fetch(b"test")) == [b"stored"]
        lent.save(b"test", b"found")
        lent.save(b"test.secondary", b"kept")
        lent.delete(b"test", b"stored")

    _lent_run(database, b"test", changes)
    assert list(database.fetch(b"test")) == [b"found"]
    assert list(database.fetch(b"test.secondary")) == [b"kept"]


def test_a_child_s_change_to_another_test_s_examples_is_refused() -> None:
    from harness.service.client import RemoteError

    database = InMemoryExampleDatabase()
    database.save(b"other", b"theirs")
    with pytest.raises(RemoteError) as raised:
        _lent_run(database, b"test", lambda lent: lent.delete(b"other", b"theirs"))
    assert raised.value.requirement == "SVC-1"
    assert list(database.fetch(b"other")) == [b"theirs"]


def test_a_packed_function_library_is_never_opened_outside_a_confined_child(tmp_path) -> None:
    library = LoadedLibrary(PackedFunctionLibrary("acme.", lambda: "unused"), str(tmp_path / "libacme.so"))
    with pytest.raises(RuntimeError, match="confined child"):
        library.open()


def test_a_crash_names_what_the_child_said_it_was_doing() -> None:
    from harness.integration.forked import entering

    def crashes_loading() -> None:
        entering("loading libacme.so")
        os.kill(os.getpid(), signal.SIGSEGV)

    with pytest.raises(DriverCrash, match="SIGSEGV.*while loading libacme.so"):
        _run(crashes_loading)

    def crashes_later() -> None:
        entering("loading libacme.so")
        entering("")
        os.kill(os.getpid(), signal.SIGSEGV)

    with pytest.raises(DriverCrash) as raised:
        _run(crashes_later)
    assert "while" not in str(raised.value)


def test_a_hang_names_its_stage_and_keeps_the_examples_saved_before_it() -> None:
    from harness.integration.forked import entering

    database = InMemoryExampleDatabase()
    lent: list = []

    def hangs() -> None:
        lent[0].save(b"test", b"found")
        entering("loading libacme.so")
        time.sleep(60)

    with pytest.raises(DriverHang, match=r"within 0\.5 s while loading libacme\.so"):
        run_in_child(hangs, lambda error: judged(error, __file__), lambda: 0, lambda number: None, "a call", 0.5,
                     TestExamples(database, b"test"), lent.append)
    assert list(database.fetch(b"test")) == [b"found"]
