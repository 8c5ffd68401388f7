"""Per-test records of a run (``--harness-record FILE``): the raw material of scores and certificates.

One JSON object per test and line, appended as each test finishes (so an interrupted run
keeps what it did): canonical id, requirement markers, outcome, duration, how many
generated examples ran, and the first line of the failure.  ``--harness-stop-on REQ``
ends the run at the first failure of a test that names REQ (a seeded bug is caught).

A run stopped in the middle of a generative test (``harness fuzz``'s deadline, Ctrl-C) gets no
report of that test from pytest.  If the test had already failed on an example (it was shrinking
it), its record is written from that first failing example, marked ``unshrunk``: the failure is in
the run's results, not only in hypothesis' database.  A test that runs hypothesis inside itself (the
memory-domain state machine) or shrinks a failure of its own (a leak) tells the recorder through the
``failure_watch`` fixture.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import time
import traceback
import unittest
from collections.abc import Sequence

import pytest
from hypothesis.errors import UnsatisfiedAssumption

from harness.api.errors import ConformanceError, DriverHang, HarnessError
from harness.api.expectations import Expectation
from harness.integration.skips import NotApplicable, NotRun
from harness.integration.warm_sessions import run_script
from harness.judging.verdict import forget_rules_held, rules_held
from harness.report.attribution import failed_requirements, fault_of, raised_by_hypothesis
from harness.report.files import append_whole, write_atomically
from harness.report.reproducer import DriverSetup, earlier_test

#: The expectations-file entry that applies to a test (set at collection): its skip or xfail is a waiver.
EXPECTATION = pytest.StashKey[Expectation]()


class RefusedByBreaker(BaseException):
    """Ends a hypothesis test at its first example whose call the service's circuit breaker refused.

    Every example fails so (the method fails on every call), and the refusal's reproducer replays
    the call that really failed: shrinking it has nothing to find, and each try would still build a
    model and run it on the reference (most of the time of a certify run of a driver that crashes
    on every call).  Not an ``Exception``, so that hypothesis lets it through at once;
    `harness.integration.plugin` raises the refusal it carries in its place, as the test's failure."""

    def __init__(self, refusal: Exception) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


def suite_of(test_id: str) -> str:
    """The suite a canonical test id ("suites/NAME/...") belongs to."""
    return test_id.split("/")[1] if test_id.count("/") > 1 else test_id


def is_generative(item: pytest.Item) -> bool:
    """Whether a test generates examples: a @given test, or one marked ``generative`` (a state
    machine run inside the test, which counts its runs through the `example_counter` fixture)."""
    return getattr(getattr(item, "obj", None), "is_hypothesis_test", False) or item.get_closest_marker("generative") is not None


def requirements_of(item: pytest.Item) -> list[str]:
    return [r for marker in item.iter_markers("requirement") for r in marker.args]


#: How often (at most) a run rewrites its progress file while examples run.
PROGRESS_EVERY_S = 0.5

#: How much of what the driver printed during a failing test its record keeps.
DRIVER_OUTPUT_BYTES = 4096
#: How long the check of a failing test run again by itself may take (`Recorder._rerun_fails`), and
#: all such checks of one session: a driver with many failures that need earlier calls must not
#: spend a certification's time on them.  Past the budget, a failure's script says it does not replay.
RERUN_SECONDS = 120.0
RERUN_BUDGET_SECONDS = 300.0
#: How many times in a row a rerun must fail to be kept as a failure's reproducer.
RERUN_RUNS = 2
#: What a check's rerun adds to the script's own pytest options: a check reads only the exit status.
#: Shrinking the example again, each time, was most of a check (a custom call's failure under XLA:
#: 10 s of its 11), and pytest's traceback of the failure, read from the sources, a few tenths of a
#: second more.  The script a vendor runs still shrinks and prints, as the run did.
_CHECK_OPTIONS = ("--harness-no-shrink", "--tb=no")


class Recorder:
    def __init__(self, path: str, stop_on: str, canonical_id, driver: str = "", reproducers: str = "",
                 service=None, progress: bool = False, replaying=None, example_options: Sequence[str] = (),
                 setup: DriverSetup = DriverSetup(), deselected_not_run: bool = True) -> None:
        self.driver = driver
        # A test left out by -k, -m or --deselect is recorded as not run: its requirements' other
        # tests passing must not make them PASS (a fuzzing round's own choice of tests is not that)
        self._deselected_not_run = deselected_not_run
        self.setup = setup  # how the run has the driver (isolation, deadline, memory), and so its reproducers
        # What a rerun of a generative test needs to come to its failing example again (the run's
        # profile and seed, or its database replayed; a fuzzing round's own seed and example count):
        # the script of a failure with nothing to print.
        self.example_options = tuple(example_options)
        # (test id, earlier tests, example options) -> whether it failed when run again (a fuzz run
        # meets the same failure round after round: run once per round's seed)
        self._reruns_failed: dict[tuple[str, tuple[str, ...], tuple[str, ...]], bool] = {}
        self._scripts_written: set[str] = set()  # this session's reproducers, by path
        # The tests of this fuzzing round (the session, outside harness fuzz), in order (each by
        # `earlier_test`), with the service process each ran on: what a failure that needs calls
        # made before its test is run again after, generating as this round did.  Those on the
        # current process, since one that started again (after a crash) holds none of what came
        # before; all of them for a circuit breaker's verdict, which the faults of earlier tests on
        # earlier processes opened.
        self._tests_this_round: dict[str, int | None] = {}
        self._service_generation: int | None = None
        # Where the run started: a rerun is checked from there, as a vendor runs its script, so that a
        # driver named by a relative path (``my_driver.py:factory``) is found as the run found it.
        self._invoked_in = os.getcwd()
        self._rerun_seconds_left = float(RERUN_BUDGET_SECONDS)
        self._hangs_checked: dict[int, tuple[object, bool]] = {}  # id(scenario) -> (it, whether it hangs again)
        # replaying(verdict): for a call sequence, one that fails on a fresh driver as the verdict
        # did, its own or one with calls the driver had before it, None when none does; for a
        # scenario, whether it fails there (the attribute None: nothing is checked)
        self._replaying = replaying
        # The driver's service (a callable that returns it, or None): a failure's record carries
        # the last DRIVER_OUTPUT_BYTES it printed during the test.
        self._service = service or (lambda: None)
        self._output_mark: tuple[int, int] | None = None
        self.reproducers = reproducers
        self.stop_on = stop_on
        self.canonical_id = canonical_id
        self.started = time.monotonic()
        self.examples_run = 0  # generated examples so far; a test's count is the difference
        self._examples_at_start = 0
        # One write() per record on an O_APPEND descriptor: records of parallel workers
        # (pytest-xdist) appending to the same file never interleave.
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        self.per_suite: dict[str, int] = {}  # generated examples per suite, in this process
        # examples per suite, in FILE.progress[-WORKER], for harness fuzz's live view (when asked)
        self.progress_path = f"{path}.progress{'-' + self.worker if self.worker else ''}" if progress else ""
        self._progress_at = 0.0
        self._suite = ""
        self._running: pytest.Item | None = None  # the test between its setup and its call's report
        self._running_since = 0.0
        self._first_failure: Exception | None = None  # what the running test's first failing example raised

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            test = getattr(item, "obj", None)
            if getattr(test, "hypothesis", None) is not None:
                self.watch(test, count=True)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        # one record of the tests left out, beside (not among) the test records: what ran is unchanged
        if self._deselected_not_run and items:
            self._append({"deselected": [{"id": self.canonical_id(item), "requirements": requirements_of(item)}
                                         for item in items]})

    def watch(self, test, count: bool) -> None:
        """Wrap a hypothesis test (a @given test, or the one `hypothesis.stateful.get_state_machine_test`
        builds) so that each example is counted (when ``count``) and the first failing one is kept
        for `pytest_keyboard_interrupt`."""
        handle = test.hypothesis
        if getattr(handle, "_harness_counted", False):
            return
        inner = handle.inner_test

        @functools.wraps(inner)
        def watched(*args, **kwargs):
            if count:
                self.count_example()
            try:
                return inner(*args, **kwargs)
            except (UnsatisfiedAssumption, unittest.SkipTest):
                raise  # an example rejected, or a skip: not a failure
            except Exception as error:
                self.note_failure(error)
                if getattr(error, "by_breaker", False):
                    raise RefusedByBreaker(error) from None
                raise

        handle.inner_test = watched
        handle._harness_counted = True

    def note_failure(self, error: Exception) -> None:
        """The running test failed with ``error``, and may go on (shrinking it) until the run is stopped."""
        if self._first_failure is None:
            self._first_failure = error

    def count_example(self) -> None:
        """One generated example ran (a @given test's, or a state machine run's: see `example_counter`)."""
        self.count_examples(1)

    def count_examples(self, number: int) -> None:
        """``number`` generated examples ran (one, or a forked child's: `harness.integration.forked`)."""
        self.examples_run += number
        self.per_suite[self._suite] = self.per_suite.get(self._suite, 0) + number
        if time.monotonic() - self._progress_at >= PROGRESS_EVERY_S:
            self._write_progress()

    def _write_progress(self) -> None:
        """Examples so far per suite, for `harness fuzz`'s live view: one small file per worker,
        replaced atomically (a reader never sees half of it)."""
        self._progress_at = time.monotonic()
        if self.progress_path:
            write_atomically(self.progress_path, json.dumps(self.per_suite), durable=False)

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._suite = suite_of(self.canonical_id(item))
        self._examples_at_start = self.examples_run
        self._running, self._running_since, self._first_failure = item, time.monotonic(), None
        forget_rules_held()
        service = self._service()
        self._output_mark = service.output_mark() if service is not None else None
        self._note_service_start()

    def _note_service_start(self) -> None:
        """Which service process the driver runs in now (a start makes a new one)."""
        self._service_generation = getattr(self._service(), "generation", 0)  # no service: in this process

    def _note_ran(self, test: str) -> None:
        """``test`` (by `earlier_test`) ran, on the service process noted last."""
        self._tests_this_round[test] = self._service_generation

    def _driver_output(self) -> str:
        """What the driver's service printed during this test: its last DRIVER_OUTPUT_BYTES."""
        service = self._service()
        if service is None or self._output_mark is None:
            return ""
        return service.output_since(self._output_mark)[-DRIVER_OUTPUT_BYTES:]

    def write_service(self, summary: dict) -> None:
        """How the driver's service fared: starts, calls, slow calls, breakers opened."""
        self._append({"service": summary})

    def begin_round(self, info: dict, example_options: Sequence[str]) -> None:
        """A fuzzing round begins (harness.integration.rounds): its number, examples per test and
        seed, recorded; ``example_options``: what a rerun of a test in it needs.  A failure's rerun
        after earlier tests runs this round's: they generate as it did (the rounds before had
        seeds of their own)."""
        self._append({**info, "elapsed": round(time.monotonic() - self.started, 3)})
        self._write_progress()
        self.example_options = tuple(example_options)
        self._tests_this_round.clear()

    def write_fuzzing(self, record: dict) -> None:
        """A guided fuzz loop's own record (`harness.integration.guided`): what it has reached so
        far, or a failure it met again from the example database."""
        self._append(record)

    def write_session(self, info: dict) -> None:
        self._append({"session": info})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            first = self._first_failure
            self._running, self._first_failure = None, None  # pytest reports the test itself: let its frames go
            error = call.excinfo.value if call.excinfo is not None else None
            if report.failed and error is not None and _raised_while_interrupted(error):
                # The run's interrupt (harness fuzz's deadline) fell in hypothesis' own code between
                # examples, which raised its own error from it: the test was stopped, not failed.
                # The session stops as interrupted; pytest_keyboard_interrupt records what it had found.
                self._running, self._first_failure = item, first
                raise KeyboardInterrupt
            hidden = report.failed and error is not None and first is not None and _hidden_verdict(error, first)
            if hidden:
                error = first
            reproducer, printed, rerun = self._write_reproducer(item, error) if report.failed else ("", None, False)
            self._record(item, report, call, reproducer, printed, error if hidden else None, rerun)
            self._note_service_start()  # during this test: its own calls after the start are on the new one
            self._note_ran(earlier_test(self.canonical_id(item), str(item.path)))

    def pytest_keyboard_interrupt(self) -> None:
        """The run stopped in the middle of a test.  One that had failed on an example was shrinking
        it when it stopped: record that failure (and write its reproducer) from the first failing
        example, which hypothesis' database also holds, rather than lose it with the test."""
        item, error = self._running, self._first_failure
        self._running = None
        if item is None or error is None:
            return
        reproducer, printed, rerun = self._write_reproducer(item, error, keep_checked=True)
        verdict, fault = judged(error, str(item.path))
        record = self._record_of(item, "failed", verdict, fault, _message_of(verdict), time.monotonic() - self._running_since,
                                 "".join(traceback.format_exception(error)), reproducer)
        if self._checks(printed, rerun):  # written now, to be checked: it never will be
            record["checked"] = False
        self._append({**record, "unshrunk": True})
        os.fsync(self._fd)

    def _write_reproducer(self, item: pytest.Item, error: BaseException | None,
                          keep_checked: bool = False) -> tuple[str, ConformanceError | None, bool]:
        """The failing scenario or call sequence as a script, written before anything else can go wrong:
        its path (or ""), the verdict whose call sequence or scenario it replays (or None), to be
        checked on a fresh driver (`_check_replay`), and whether the script runs the test again
        instead (nothing to print), to be checked by running it (`_check_rerun`)."""
        candidates = [error, *getattr(error, "exceptions", ()), *([_verdict_of(error)] if error is not None else [])]
        found = next((e for e in candidates if getattr(e, "scenario", None) is not None
                      or getattr(e, "steps", None) or getattr(e, "golden", None)), None)
        test_id = self.canonical_id(item)
        # A failure with nothing to print is replayed by running its test again: a generative one
        # generates its examples as the run did, and comes to the same failing example.
        rerun = found is None and test_id.startswith("suites/")
        if (found is None and not rerun) or not self.reproducers:
            return "", None, False
        from harness.report.reproducer import golden_script

        os.makedirs(self.reproducers, exist_ok=True)
        name = "".join(c if c.isalnum() else "_" for c in test_id)[-120:] + ".py"
        path = os.path.join(self.reproducers, name)
        if keep_checked and path in self._scripts_written:
            # stopped while it shrank a failure: the script an earlier round wrote of this test stays
            # (checked, or saying it was not), rather than give way to one that cannot be checked
            return path, None, False
        self._scripts_written.add(path)
        printed = isinstance(found, ConformanceError) and not getattr(found, "golden", None) and bool(
            found.steps or found.scenario is not None)
        # A script to be checked is written first as unchecked (a pass exits 3): the run may stop
        # during the check (harness fuzz's deadline) or have spent its time for checks, and a
        # failure that needs calls made before it passes alone.  The check writes it again with
        # what it found.
        checked = not self._checks(found if printed else None, rerun and error is not None)
        if found is None:
            script = self._rerun_script(item, _verdict_of(error) if error is not None else None, checked=checked)
        elif getattr(found, "golden", None):
            script = golden_script(found.golden, self.driver, found.requirement, str(found), self.setup)
        else:
            script = self._printed_script(found, checked=checked)
        write_atomically(path, script)
        return path, found if printed else None, found is None

    def _checks(self, printed: ConformanceError | None, rerun: bool) -> bool:
        """Whether a failure's script is checked once written: a printed call sequence or scenario
        (``printed``) on a fresh driver, or its test run again (``rerun``).  Until then it is written
        unchecked, and a record whose check never came says ``checked: false``."""
        return self._replaying is not None and (printed is not None or rerun)

    def _check_rerun(self, item: pytest.Item, path: str, error: BaseException, record: dict) -> None:
        """Whether a failure with nothing to print, whose script runs its test again, fails so: alone,
        or else after the tests before it on the same driver process (a verdict of a circuit breaker
        that earlier tests' crashes opened, say).  When neither does, the script says so and exits 3
        rather than read a pass as a fix."""
        verdict = _verdict_of(error)
        earlier = self._rerun_fails(item, verdict, path)
        if earlier is None and not self._rerun_tried(item):
            return  # not run: the session's budget was spent, and the script stays as written, unchecked
        record["replays"] = earlier is not None
        if earlier is not None:
            record["rerun_after_tests"] = earlier
        else:
            write_atomically(path, self._rerun_script(item, verdict, replayed=False))

    def _rerun_script(self, item: pytest.Item, verdict: BaseException | None, earlier: Sequence[str] = (),
                      replayed: bool = True, checked: bool = True) -> str:
        """The script that runs ``item`` again as this run ran it (`rerun_script`), after ``earlier``."""
        from harness.report.reproducer import rerun_script

        return rerun_script(self.canonical_id(item), self.driver, getattr(verdict, "requirement", "") or "",
                            str(verdict or ""), self.setup, self.example_options if is_generative(item) else (),
                            earlier, replayed, checked)

    def _check_replay(self, item: pytest.Item, path: str, verdict: ConformanceError, record: dict) -> None:
        """Whether the reproducer's call sequence or scenario fails on a fresh driver as it failed in
        the run.  One that needs calls the driver had before it (earlier tests or examples) does not.
        A call sequence is then written again with those calls before it, when the driver's history
        holds them and they fail so.  Else the test run again (its examples as the run generated
        them) may come to the failure: its script is kept when it fails.  Else the script says it
        does not replay, rather than read a pass as a fix."""
        if isinstance(verdict, DriverHang) and not verdict.steps:
            found: tuple | bool | None = self._hang_replays(verdict)
            if found is None:
                return  # the session's time for checks is spent: the script stays as written, unchecked
        else:
            found = self._replaying(verdict)
        steps = found if verdict.steps and isinstance(found, tuple) else None
        if verdict.steps:
            record["with_earlier_calls"] = steps is not None and steps is not verdict.steps
        replays = steps is not None if verdict.steps else found is True
        if replays:  # checked: it fails on a fresh driver (a call sequence alone, or after those calls)
            write_atomically(path, self._printed_script(verdict, steps))
        earlier = self._rerun_fails(item, verdict, path) if not replays else None
        if earlier is not None:
            record["rerun"] = replays = True
            record["rerun_after_tests"] = earlier  # 0: the test alone fails again
        record["replays"] = replays
        if not replays:
            write_atomically(path, self._printed_script(verdict, replayed=False, rerun_tried=self._rerun_tried(item)))

    def _hang_replays(self, verdict: DriverHang) -> bool | None:
        """Whether a hang's scenario hangs on a fresh driver too; None when it was not checked.  The
        check waits out a call deadline, so each scenario is checked once (a circuit breaker's
        refusals carry the call that really hung, one for many tests), within the time the session
        keeps for checks (the reruns'), which it spends."""
        known = self._hangs_checked.get(id(verdict.scenario))
        if known is not None:
            return known[1]
        if self._rerun_seconds_left <= 0:
            return None
        started = time.monotonic()
        try:
            replays = bool(self._replaying(verdict))
        finally:
            self._rerun_seconds_left -= time.monotonic() - started
        self._hangs_checked[id(verdict.scenario)] = (verdict.scenario, replays)  # kept: its id stays its own
        return replays

    def _printed_script(self, verdict: ConformanceError, steps: tuple | None = None, **ending: bool) -> str:
        """The script of a verdict's call sequence (``steps``: the one with the calls before it that
        it needs, when the check found it), or else of its scenario; ``ending``: how a pass ends it
        (`harness.report.reproducer._ending`)."""
        from harness.report.reproducer import call_sequence_script, reproducer_script

        if getattr(verdict, "steps", None):
            steps = steps or verdict.steps
            return call_sequence_script(steps, self.driver, verdict.requirement, str(verdict), setup=self.setup,
                                        with_earlier_calls=steps is not verdict.steps, **ending)
        return reproducer_script(verdict.scenario, self.driver, verdict.requirement, str(verdict), self.setup, **ending)

    def _rerun_tried(self, item: pytest.Item) -> bool:
        """Whether the test was run again in this session (not past the budget, and a suite's test)."""
        test_id = self.canonical_id(item)
        return any(tried == test_id for tried, _, _ in self._reruns_failed)

    def _rerun_fails(self, item: pytest.Item, verdict: BaseException, path: str) -> int | None:
        """Whether the test, run again in a new session (a generative one coming to its examples as
        the run did), still fails: by itself (0), or else after the tests the run made before it on
        the same driver process (how many), whose calls the failure may need; None when neither
        does.  The failing rerun's script replaces the one at ``path``."""
        test_id = self.canonical_id(item)
        if not test_id.startswith("suites/"):
            return None
        this = earlier_test(test_id, str(item.path))
        every_process = getattr(verdict, "by_breaker", False)
        earlier = [test for test, generation in self._tests_this_round.items()
                   if test != this and (every_process or generation == self._service_generation)]
        for before in ([], earlier) if earlier else ([],):
            script = self._rerun_script(item, verdict, before)
            key = (test_id, tuple(before), self.example_options)
            fails = self._reruns_failed.get(key)
            if fails is None and self._rerun_seconds_left > 0:
                fails = self._fails_when_run(script, f"{path}.rerun")
                if fails is not None:  # decided: a rerun the time for checks cut short was not tried
                    self._reruns_failed[key] = fails
            if fails:
                write_atomically(path, script)
                return len(before)
        return None

    def _fails_when_run(self, script: str, trial: str) -> bool | None:
        """Whether ``script`` (a test's rerun), written to ``trial`` and run there RERUN_RUNS times,
        exits each time as pytest does for a failed test, within what is left of the session's
        budget; None when that ran out first (or a run's own time), which decides nothing.  A
        failure that needs what earlier calls left in the driver may come only now and then (which
        descriptor numbers a process reuses depends on when its objects are let go): a script kept
        on one lucky failure would later read as a fix."""
        write_atomically(trial, script)
        try:
            for _ in range(RERUN_RUNS):
                if self._rerun_seconds_left <= 0:  # spent by the run before: no process started to be killed at once
                    return None
                started = time.monotonic()
                try:  # forked from a warm server: a new interpreter's imports were most of each run
                    code = run_script(trial, self._invoked_in, timeout=min(RERUN_SECONDS, self._rerun_seconds_left),
                                      arguments=_CHECK_OPTIONS)
                except subprocess.TimeoutExpired:
                    return None
                finally:
                    self._rerun_seconds_left -= time.monotonic() - started
                if code != pytest.ExitCode.TESTS_FAILED:
                    return False
            return True
        finally:
            os.remove(trial)

    def _record(self, item: pytest.Item, report, call, reproducer: str = "",
                printed: ConformanceError | None = None, first_failure: BaseException | None = None,
                rerun: bool = False) -> None:
        """``printed``: the verdict whose call sequence or scenario the reproducer prints, checked on a
        fresh driver (`_check_replay`).  ``first_failure``: the test's first failing example, recorded
        in place of hypothesis' own error that ended the test without a verdict (`_hidden_verdict`)."""
        skip = _why_skipped(item, call) if report.skipped and getattr(report, "wasxfail", None) is None else None
        # whose fault a failure is (attribution.FAULTS): only the driver's is a verdict on it; pytest's
        # own report of a failure, with no exception, is the driver's, as before faults were kept
        verdict, fault = None, "driver" if report.failed else ""
        if report.failed and call.excinfo is not None:
            verdict, fault = judged(first_failure or call.excinfo.value, str(item.path))
        message = ""
        if verdict is not None:
            message = _message_of(verdict)
        elif report.failed:  # pytest's own report, without an exception: the line that names the error
            lines = [line.lstrip("E| +").strip() for line in str(report.longrepr).splitlines()]
            errors = [line for line in lines if "Error" in line and ":" in line]
            message = (errors or [line for line in lines if line] or [""])[0]
        elif report.skipped and isinstance(report.longrepr, tuple):
            message = report.longrepr[2]
        waived = getattr(report, "wasxfail", None)
        outcome = "xfailed" if waived is not None and report.skipped else "xpassed" if waived is not None else report.outcome
        record = self._record_of(item, outcome, verdict, fault, message, report.duration,
                                 str(report.longrepr) if report.failed else "", reproducer, waiver=waived or "", skip=skip)
        if first_failure is not None:  # as hypothesis first found it: its shrinking ended in its own error
            record["unshrunk"] = True
            record["hidden_by"] = type(_verdict_of(call.excinfo.value)).__name__
        checking = self._checks(printed, bool(rerun and reproducer) and call.excinfo is not None)
        try:
            if checking and printed is not None:  # after the record took the driver's output:
                self._check_replay(item, reproducer, printed, record)  # the check replaces its process
            elif checking:
                self._check_rerun(item, reproducer, first_failure or call.excinfo.value, record)
        finally:  # a run interrupted during a check (harness fuzz's deadline) keeps the failure, unchecked
            if checking and "replays" not in record:
                record["checked"] = False  # its script says so too: a pass exits 3
            self._append(record)
            if report.failed:
                os.fsync(self._fd)  # a run that dies later, even with the machine, still keeps this failure
        self._write_progress()
        if self.stop_on and self.stop_on in failed_requirements(record):
            # As --maxfail stops a run (exit 1, tests failed), not as an interrupt: pytest formats an
            # interrupt's whole traceback, from the sources, a few tenths of a second of each stop.
            item.session.shouldfail = f"a test failed on {self.stop_on}"

    def _record_of(self, item: pytest.Item, outcome: str, verdict: BaseException | None, fault: str, message: str,
                   duration: float, details: str, reproducer: str, waiver: str = "", skip: dict | None = None) -> dict:
        """A test's record; ``verdict`` is the exception that carries a failure, ``fault`` whose it is."""
        record = {
            "id": self.canonical_id(item),
            "requirements": requirements_of(item),
            "outcome": outcome,
            "waiver": waiver,
            "skip": skip,
            # What failed, as data: the exception's type and the requirement it carries (when it does).
            "error_type": type(verdict).__name__ if verdict is not None else "",
            # where that type comes from: a hypothesis error (flaky data generation, say) is about the
            # test's run, and says nothing of the driver by itself
            "error_module": type(verdict).__module__ if verdict is not None else "",
            "rule": getattr(verdict, "requirement", "") or "",
            # the requirement a crashed or hung call was made to check (DriverFault.checking)
            "checking": getattr(verdict, "checking", "") or "",
            # the service's circuit breaker gave the verdict in place of a call (harness.service.breaker)
            "by_breaker": bool(getattr(verdict, "by_breaker", False)),
            "fault": fault,
            # the rules it checked, and the driver met, before it failed: it counts for them (the certificate)
            "held": rules_held() if outcome == "failed" else [],
            "duration": round(duration, 4),
            "elapsed": round(time.monotonic() - self.started, 3),
            "examples": (self.examples_run - self._examples_at_start) if is_generative(item) else None,
            "message": message[:2000],
            "details": details[-6000:],
            "reproducer": reproducer,
            "worker": self.worker,
            "driver_output": self._driver_output() if fault else "",  # fault: the test failed
        }
        golden = item.get_closest_marker("golden")
        if golden is not None:  # a golden example: what it covers, for the certificate's coverage table
            record["golden"] = dict(golden.kwargs)
        return record

    def _append(self, record: dict) -> None:
        try:
            append_whole(self._fd, (json.dumps(record) + "\n").encode("utf-8"))
        except OSError as error:  # a full disk: the run ends as a usage error, in one line, its records whole
            raise pytest.UsageError(f"--harness-record: cannot write the run's record: {error.strerror}") from None

    def close(self) -> None:
        os.close(self._fd)


def _message_of(verdict: BaseException) -> str:
    """A failure's message, as data: a harness verdict's first line; an unexpected exception's type
    and its first line."""
    if isinstance(verdict, HarnessError):
        return next((line for line in str(verdict).splitlines() if line.strip()), type(verdict).__name__)
    text = next((line.strip() for line in str(verdict).splitlines() if line.strip()), "")
    return f"{type(verdict).__name__}: {text}" if text else type(verdict).__name__


def _verdict_of(error: BaseException) -> BaseException:
    """The exception that carries a failure's verdict.  Hypothesis wraps what it found in a group
    (several distinct failures, or a FlakyFailure when a driver fails one example in two ways, a
    crash then a hang): the verdict is the first of them that names a requirement.  Hypothesis
    also raises its own error while a verdict is propagating when the driver's outcome depends
    on its history (a leak: the same choices passed earlier in the run, so its data tree
    disagrees); the verdict it interrupted still stands."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _verdict_of(inner)
            if getattr(found, "requirement", ""):
                return found
    if raised_by_hypothesis(type(error).__module__) and not getattr(error, "requirement", ""):
        interrupted = error.__cause__ or error.__context__
        if interrupted is not None:
            verdict = _verdict_of(interrupted)
            if getattr(verdict, "requirement", ""):
                return verdict
    return error


def _raised_while_interrupted(error: BaseException) -> bool:
    """Whether ``error`` was raised while a KeyboardInterrupt propagated (its context or cause, at
    any depth): hypothesis' engine asserts on its state when an interrupt falls before it starts."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _hidden_verdict(error: BaseException, first: BaseException) -> bool:
    """Whether hypothesis ended a test with its own error (inconsistent data generation, a flaky
    failure) that carries no verdict, after an example of it had failed with one (``first``).  A
    driver whose outcome depends on its history (calls of earlier examples) makes hypothesis'
    replays disagree with what it saw; the verdict the driver gave still stands, and is recorded."""
    ended = _verdict_of(error)
    return (raised_by_hypothesis(type(ended).__module__) and not getattr(ended, "requirement", "")
            and bool(getattr(_verdict_of(first), "requirement", "")))


def judged(error: BaseException, test_file: str) -> tuple[BaseException, str]:
    """The exception that carries a failure's verdict (`_verdict_of`), and whose fault it is
    (`attribution.fault_of`; an ``assert`` in ``test_file`` or the suites is a check)."""
    verdict = _verdict_of(error)
    return verdict, fault_of(verdict, functools.partial(_holds_tests, test_file))


@functools.cache
def _suites_folder() -> str:
    """Where the suites' sources are (an ``assert`` there is a check of the driver)."""
    spec = importlib.util.find_spec("harness.suites")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    return os.path.join(os.path.abspath(folders[0]), "") if folders else ""


def _holds_tests(test_file: str, filename: str) -> bool:
    """Whether ``filename`` holds tests: the failing test's own file, or any of the suites'."""
    suites = _suites_folder()
    return filename == test_file or bool(suites) and filename.startswith(suites)


def _why_skipped(item: pytest.Item, call) -> dict:
    """What kind of skip this was, from the exception's type and fields (never its text)."""
    expectation = item.stash.get(EXPECTATION, None)
    if expectation is not None and expectation.action == "skip":
        return {"kind": "waived", "reason": expectation.reason, "source": expectation.source}
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, NotApplicable):
        return {"kind": "not-applicable", "capability": error.capability, "reason": error.reason}
    if isinstance(error, NotRun):
        return {"kind": "not-run", "reason": error.reason, "fix": error.fix}
    # A skip the harness did not raise (a skipif marker, a conftest's pytest.skip, an empty
    # parametrization): the test did not run, and nothing says the driver excludes it.
    reason = str(getattr(error, "msg", "") or error or "skipped")
    return {"kind": "not-run", "reason": reason, "fix": "remove whatever skips it (it is not one of the harness's own skips)"}
