"""A failure whose printed scenario or call sequence passes on a fresh driver is followed by its
test run again (`Recorder._rerun_fails`): by itself, and else after the tests the run made before it
on the same driver process.  Each once per test in a session (a fuzz run meets the same failure
round after round), and within a budget per session, past which no test is run again."""

from __future__ import annotations

import runpy
import time
from pathlib import Path

import pytest

from harness.api.errors import ConformanceError, DriverCrash, DriverHang
from harness.integration import recording
from harness.report.reproducer import DriverSetup


class _FixedTest:
    """What the recorder asks of a pytest item here: a fixed test (no examples of its own)."""

    obj = None
    path = "/suites/memory_pools/test_x.py"

    def get_closest_marker(self, name: str) -> None:
        return None


def _recorder(tmp_path: Path, service=None) -> tuple[recording.Recorder, Path]:
    """A recorder of a run on ``mutant-x`` (its tests named test_x.py::NAME), and the printed script
    of a failure, in the run's reproducers folder."""
    scripts = tmp_path / "reproducers"
    scripts.mkdir()
    recorder = recording.Recorder(str(tmp_path / "records.jsonl"), "",
                                  lambda item: f"suites/memory_pools/test_x.py::{getattr(item, 'name', 'test_y')}",
                                  "mutant-x", str(scripts), service=service)
    script = scripts / "script.py"
    script.write_text("the printed scenario")
    return recorder, script


def test_a_test_is_run_again_once_and_only_within_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[tuple] = []
    monkeypatch.setattr(recording, "run_script", lambda *args, **kwargs: runs.append(args) or 1)
    recorder, script = _recorder(tmp_path)
    scripts = script.parent
    verdict = ConformanceError("[POOL-2] differs", requirement="POOL-2")

    recorder._rerun_seconds_left = 0  # spent: the printed script stays, and nothing is run
    assert recorder._rerun_fails(_FixedTest(), verdict, str(script)) is None
    assert not runs and script.read_text() == "the printed scenario" and list(scripts.iterdir()) == [script]

    recorder._rerun_seconds_left = recording.RERUN_BUDGET_SECONDS
    assert recorder._rerun_fails(_FixedTest(), verdict, str(script)) == 0  # the rerun exited 1: it still fails alone
    assert len(runs) == recording.RERUN_RUNS  # each time it was run
    assert "TEST = 'test_y'" in script.read_text() and "EARLIER = []" in script.read_text()
    assert recorder._rerun_fails(_FixedTest(), verdict, str(script)) == 0  # the same test again: its answer is kept
    assert len(runs) == recording.RERUN_RUNS


class _Service:
    """The driver's service as the recorder sees it: which process it is (a start makes a new one)."""

    generation = 1


class _Item(_FixedTest):
    def __init__(self, name: str) -> None:
        self.name = name


def test_a_test_that_passes_alone_is_run_again_after_the_tests_before_it_on_the_same_service(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trials: list[str] = []

    def run(script, cwd, **kwargs):  # the rerun fails only after the earlier tests
        trials.append(Path(script).read_text())
        return 1 if "EARLIER = ['harness" in trials[-1] else 0

    monkeypatch.setattr(recording, "run_script", run)
    service = _Service()
    recorder, script = _recorder(tmp_path, service=lambda: service)
    verdict = ConformanceError("[POOL-2] differs", requirement="POOL-2")

    def ran(name: str) -> None:  # a test's setup and its report, as pytest's hooks give them
        recorder._note_service_start()
        recorder._note_service_start()
        recorder._note_ran(recording.earlier_test(f"suites/memory_pools/test_x.py::{name}", _FixedTest.path))

    ran("test_first")
    service.generation = 2  # the service started again (after a crash): what ran before is gone
    recorder._note_service_start()
    ran("test_second")
    ran("test_third")
    assert recorder._rerun_fails(_Item("test_fourth"), verdict, str(script)) == 2  # after the two on this service
    assert len(trials) == 1 + recording.RERUN_RUNS and "EARLIER = []" in trials[0]
    assert ("EARLIER = ['harness.suites.memory_pools.test_x::test_second', 'harness.suites.memory_pools.test_x::test_third']"
            in script.read_text())
    assert recorder._rerun_fails(_Item("test_fourth"), verdict, str(script)) == 2 and len(trials) == 1 + recording.RERUN_RUNS

    script.write_text("the printed scenario")  # nothing before it on this service: only the test alone is tried
    service.generation = 3
    recorder._note_service_start()
    assert recorder._rerun_fails(_Item("test_fifth"), verdict, str(script)) is None
    assert len(trials) == 2 + recording.RERUN_RUNS and script.read_text() == "the printed scenario"


def test_a_rerun_that_fails_only_now_and_then_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure that needs what earlier calls left may come only now and then: a rerun that failed
    once and then passed would later read as a fix."""
    codes = iter([1, 0])
    monkeypatch.setattr(recording, "run_script", lambda *args, **kwargs: next(codes))
    recorder, script = _recorder(tmp_path)
    assert recorder._rerun_fails(_FixedTest(), ConformanceError("[POOL-2] differs", requirement="POOL-2"), str(script)) is None
    assert script.read_text() == "the printed scenario" and list(script.parent.iterdir()) == [script]


def test_an_earlier_test_is_named_by_its_module_or_else_its_file() -> None:
    assert (recording.earlier_test("suites/memory_pools/test_x.py::test_y[a-b]", "/site/harness/suites/memory_pools/test_x.py")
            == "harness.suites.memory_pools.test_x::test_y[a-b]")  # found wherever the harness is installed
    assert recording.earlier_test("test_vendor.py::TestIt::test_z", "/work/vendor/test_vendor.py") == "/work/vendor/test_vendor.py::TestIt::test_z"


def test_a_rerun_script_is_checked_and_one_that_passes_says_it_does_not_replay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure with nothing to print is written as its test run again: that script is run too.
    One that passes (the failure needed what earlier calls left) is written again to exit 3 on a
    pass, never 0.  A hang's is run too, within the same budget: written as checked and never run,
    a pass of it would read as a fix."""
    codes = {"code": 0}
    monkeypatch.setattr(recording, "run_script", lambda *args, **kwargs: codes["code"])
    recorder, script = _recorder(tmp_path)
    record: dict = {}
    recorder._check_rerun(_FixedTest(), str(script), ConformanceError("[CC-1] breaker open", requirement="CC-1"), record)
    assert record == {"replays": False} and "REPLAYED = False" in script.read_text()

    codes["code"], record = 1, {}
    recorder._check_rerun(_Item("test_other"), str(script), ConformanceError("[CC-1] differs", requirement="CC-1"), record)
    assert record == {"replays": True, "rerun_after_tests": 0} and "REPLAYED = True" in script.read_text()

    script.write_text("the test run again"), record.clear()
    recorder._check_rerun(_Item("test_hangs"), str(script), DriverHang("[SVC-2] no answer", requirement="SVC-2"), record)
    assert record == {"replays": True, "rerun_after_tests": 0} and "TEST = 'test_hangs'" in script.read_text()


def test_a_rerun_cut_short_by_its_time_decides_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rerun that runs out of time (a hang's, say) neither passed nor failed: it is not kept as
    tried, and the script stays as written, unchecked."""

    def run(script, cwd, **kwargs):
        raise recording.subprocess.TimeoutExpired([script], kwargs["timeout"])

    monkeypatch.setattr(recording, "run_script", run)
    recorder, script = _recorder(tmp_path)
    record: dict = {}
    recorder._check_rerun(_FixedTest(), str(script), DriverHang("[SVC-2] no answer", requirement="SVC-2"), record)
    assert record == {} and script.read_text() == "the printed scenario"
    assert not recorder._rerun_tried(_FixedTest())


def test_a_rerun_script_left_unchecked_past_the_budget_says_nothing_of_a_rerun(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recording, "run_script", lambda *args, **kwargs: pytest.fail("nothing is run past the budget"))
    recorder, script = _recorder(tmp_path)
    recorder._rerun_seconds_left = 0
    record: dict = {}
    recorder._check_rerun(_FixedTest(), str(script), ConformanceError("[CC-1] differs", requirement="CC-1"), record)
    assert record == {} and script.read_text() == "the printed scenario"


def test_a_script_whose_test_was_not_run_again_does_not_say_it_was() -> None:
    from harness.report.reproducer import call_sequence_script

    tried = call_sequence_script([], "mutant-x", "DOM-1", replayed=False)
    not_tried = call_sequence_script([], "mutant-x", "DOM-1", replayed=False, rerun_tried=False)
    assert "and so did its test run again" in tried and "SystemExit(3)" in tried
    assert "its test was not run again" in not_tried and "so did its test" not in not_tried and "SystemExit(3)" in not_tried


def test_a_failure_the_run_stopped_in_keeps_the_script_an_earlier_round_wrote(tmp_path: Path) -> None:
    """A fuzz run's deadline can stop a test while hypothesis shrinks a failure it found again (a
    later round): its record comes from the first failing example, but the script an earlier round
    wrote of the test, and checked, stays.  Written unchecked in its place, it would pass alone."""
    recorder, _ = _recorder(tmp_path, service=lambda: None)
    verdict = ConformanceError("[POOL-2] wrong output", requirement="POOL-2")
    first, _, rerun = recorder._write_reproducer(_FixedTest(), verdict)
    assert rerun and "CHECKED = True" in Path(first).read_text()  # no check configured here: written as final
    Path(first).write_text("the checked script of the earlier round")
    again, _, _ = recorder._write_reproducer(_FixedTest(), verdict, keep_checked=True)
    assert again == first and Path(first).read_text() == "the checked script of the earlier round"
    fresh, _ = recording.Recorder(str(tmp_path / "other.jsonl"), "", lambda item: "suites/memory_pools/test_x.py::test_z",
                                  "mutant-x", str(tmp_path / "reproducers")), None
    written, _, _ = fresh._write_reproducer(_FixedTest(), verdict, keep_checked=True)  # none earlier in its session
    assert "TEST = 'test_z'" in Path(written).read_text()


def test_a_circuit_breakers_verdict_is_run_again_after_the_rounds_tests_on_every_service(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The breaker counts faults across tests, and each crash started the service again: a breaker's
    verdict is run again after every test of the round, not only those on the current service."""
    trials: list[str] = []

    def run(script, cwd, **kwargs):  # fails only after the tests whose crashes opened the breaker
        trials.append(Path(script).read_text())
        return 1 if "test_crashes'" in trials[-1] else 0

    monkeypatch.setattr(recording, "run_script", run)
    service = _Service()
    recorder, script = _recorder(tmp_path, service=lambda: service)

    def ran(name: str) -> None:  # a test's report, as the recorder keeps it
        recorder._note_service_start()
        recorder._note_ran(recording.earlier_test(f"suites/memory_pools/test_x.py::{name}", _FixedTest.path))

    ran("test_crashes")
    service.generation = 2  # its crashes started the service again
    ran("test_after")
    crash = DriverCrash("[SVC-1] not called: the last 5 calls failed the same way (circuit breaker)")
    crash.by_breaker = True
    assert recorder._rerun_fails(_Item("test_refused"), crash, str(script)) == 2
    assert "'harness.suites.memory_pools.test_x::test_crashes'" in script.read_text()
    # an ordinary crash needs what this service holds: the tests on it only
    script.write_text("the printed scenario")
    assert recorder._rerun_fails(_Item("test_other"), DriverCrash("[SVC-1] segfault"), str(script)) is None
    assert "test_crashes" not in trials[-1]
    recorder.begin_round({"round": 2}, ())  # a new round: its own tests only
    assert not recorder._tests_this_round


def test_a_hangs_scenario_is_checked_once_within_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hang's check waits out a call deadline: a scenario many verdicts share (a circuit breaker's
    refusals carry the call that really hung) is checked once, and the time it took is spent from
    the session's budget for checks.  Past the budget, the script stays as written: unchecked."""
    checks: list[object] = []

    def replaying(verdict):  # as the check does: the driver hangs again, for a while
        checks.append(verdict.scenario)
        time.sleep(0.01)
        return True

    recorder = recording.Recorder(str(tmp_path / "records.jsonl"), "", lambda item: "suites/memory_pools/test_x.py::test_y",
                                  "mutant-x", str(tmp_path / "reproducers"), replaying=replaying)
    monkeypatch.setattr(recorder, "_printed_script", lambda verdict, steps=None, **ending: f"script {ending}")
    scenario = object()
    script = tmp_path / "script.py"
    for number in range(2):
        hang = DriverHang(f"[SVC-2] hang {number}", scenario=scenario)
        record: dict = {}
        recorder._check_replay(_FixedTest(), str(script), hang, record)
        assert record == {"replays": True} and script.read_text() == "script {}"  # final: a pass is a fix
    assert checks == [scenario] and recorder._rerun_seconds_left <= recording.RERUN_BUDGET_SECONDS - 0.01

    recorder._rerun_seconds_left = 0
    script.write_text("written unchecked")
    record = {}
    recorder._check_replay(_FixedTest(), str(script), DriverHang("[SVC-2] another", scenario=object()), record)
    assert record == {} and script.read_text() == "written unchecked" and len(checks) == 1


def test_a_rerun_script_has_the_driver_as_its_run_had_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test run again by its script has its driver with the run's isolation, deadline and memory
    limit: a call the run cut off as a hang at 0.5 s is cut off there again, not at the default 10 s
    (the printed scripts' side: tests/acceptance/test_reproducers.py)."""
    scripts = tmp_path / "reproducers"
    scripts.mkdir()
    recorder = recording.Recorder(str(tmp_path / "records.jsonl"), "",
                                  lambda item: "suites/memory_pools/test_constants.py::test_a_prepared_model_runs_again_and_again",
                                  "mutant-x", str(scripts), service=lambda: None, setup=DriverSetup("process", 0.5, 64))
    path, _, rerun = recorder._write_reproducer(_FixedTest(), DriverHang("[SVC-2] did not return within 0.5 s", requirement="SVC-2"))
    assert rerun
    arguments: list[list[str]] = []
    monkeypatch.setattr(pytest, "main", lambda args, plugins=(): arguments.append(list(args)) or pytest.ExitCode.TESTS_FAILED)
    with pytest.raises(SystemExit):
        runpy.run_path(path, run_name="__main__")
    [given] = arguments
    assert {"--driver=mutant-x", "--driver-isolation=process", "--driver-timeout=0.5", "--driver-memory-limit=64"} <= set(given), given
