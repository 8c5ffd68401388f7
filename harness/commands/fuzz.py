"""``harness fuzz`` and ``harness replay``: time-boxed fuzzing, and re-running what it found.

Each of ``--workers N`` processes is one pytest session running a fuzz loop
(`harness.integration.guided`) over its share of the generative tests (the fixed ones run once,
first) until the budget is spent; it is started again only if it ends early.  Guided (the
default), the loop keeps the inputs that reached driver code not reached before (the driver's
service reports its coverage: `harness.service.coverage`) and gives its time to the tests still
finding something; ``--blind``, it runs fresh random inputs with the same time for every test.
Hypothesis saves every failing example in the example database the moment it is found, and
shrinks it there; a failing test's record is fsynced as it is written; so a run that is killed
keeps everything found so far.  While it runs, a line per suite shows examples, examples/s and
distinct failures (rich), or why the suite does not apply to the driver, and a line shows the
coverage reached; at the end (or on Ctrl-C or SIGTERM) it writes fuzz-summary.json,
fuzz-report.html (examples/s, failures and coverage over time) and a reproducer per distinct
failure, and prints its findings: the failures grouped by root cause
(`harness.report.findings`), each with its requirement, message and reproducer.
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import IO

from harness.api.errors import UsageError
from harness.integration.recording import suite_of
from harness.report.files import write_atomically
from harness.report.findings import Finding, group_findings, not_applicable_reason
from harness.report.fuzz_report import render_fuzz_report
from harness.service.coverage import COVERAGE_ENVIRONMENT

# Examples of a test the guided loop cannot drive one input at a time (a state machine, a test
# in a forked child) in its first turn; they double each turn, up to the nightly profile's.
FIRST_TURN_EXAMPLES = 25
SAMPLE_EVERY_S = 1.0
RESTART_IF_LEFT_S = 3.0  # a worker process that ends with less time than this left is not started again
# A worker still running this long after its interrupt is killed: the budget holds whatever the
# worker is doing (what it found is already saved: records and examples as they are found).
KILL_AFTER_S = 20.0
STATUS_WIDTH = 52  # characters of a suite's live status: examples, rate and failures, or why it does not apply
SUITES = ("harness.suites.memory_pools", "harness.suites.requests", "harness.suites.numerics", "harness.suites.memory_domains", "harness.suites.custom_calls",
          "harness.suites.packed_functions")


def select_suites(names: str | None) -> tuple[str, ...]:
    """The suites named in ``--suites a,b`` (all when None); an unknown name, or none, is a usage error
    (``--suites ""`` is a list that was meant to hold something: it fuzzed every suite)."""
    if names is None:
        return SUITES
    by_name = {suite.rsplit(".", 1)[1]: suite for suite in SUITES}
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in by_name]
    if unknown or not chosen:
        raise UsageError(f"--suites: unknown suite {', '.join(map(repr, unknown)) or '(none given)'}; "
                         f"the suites are {', '.join(by_name)}")
    return tuple(by_name[name] for name in chosen)


def _pytest(driver: str, db: str, record: str, reproducers: str, extra: list[str],
            suites: tuple[str, ...] = SUITES) -> list[str]:
    return [sys.executable, "-m", "pytest", "--pyargs", *suites, f"--driver={driver}", "--harness-profile=nightly",
            f"--harness-db={db}", f"--harness-record={record}", f"--harness-reproducers={reproducers}",
            "-q", "-p", "no:cacheprovider", *extra]


class _Tail:
    """A record file that a worker process is still appending to, read as it grows: each poll
    parses only the lines added since the last (a night's file is long; the live view polls
    every second)."""

    def __init__(self, path: str, worker: int = 0) -> None:
        self.path = path
        self.worker = worker
        self.records: list[dict] = []  # per-test records
        self.rounds: list[dict] = []  # round records, one written as each round begins
        self.coverage: list[dict] = []  # what a guided loop had reached, every few seconds
        self.replayed: set[str] = set()  # tests whose failure came from the example database
        self._offset = 0

    def poll(self) -> _Tail:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                added = f.read()
        except FileNotFoundError:
            return self
        # a last line without its newline is not written yet
        complete = added[: added.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.decode("utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                if "id" in record:
                    self.records.append(record)
                elif "round" in record:
                    self.rounds.append(record)
                elif "coverage" in record:
                    self.coverage.append(record["coverage"])
                elif "replayed_failure" in record:
                    self.replayed.add(record["replayed_failure"])
        return self


def _distinct_failures(records: list[dict]) -> dict[tuple[str, str], dict]:
    """The failed records, one per test and message.  A circuit breaker's verdict in a test is the
    fault the driver showed there (the same rule) when one is recorded, met again behind the breaker;
    else one per test and rule, however its message names the call refused."""
    failures: dict[tuple[str, str], dict] = {}
    behind_breaker: dict[tuple[str, str], dict] = {}
    for record in records:
        if record["outcome"] != "failed":
            continue
        if record.get("by_breaker"):
            behind_breaker.setdefault((record["id"], f"circuit breaker: {record['rule']}"), record)
        else:
            failures.setdefault((record["id"], record["message"][:200]), record)
    shown = {(record["id"], record["rule"]) for record in failures.values()}
    failures.update((key, record) for key, record in behind_breaker.items() if (record["id"], record["rule"]) not in shown)
    return failures


def _progress_of(record: str) -> dict[str, int]:
    """Examples per suite that the round writing ``record`` has run so far (every worker's file)."""
    examples: dict[str, int] = {}
    for path in glob.glob(glob.escape(record) + ".progress*"):
        try:
            with open(path, encoding="utf-8") as f:
                counts = json.load(f)
        except (OSError, ValueError):
            continue  # replaced between the listing and the read: the next poll has it
        for suite, count in counts.items():
            examples[suite] = examples.get(suite, 0) + int(count)
    return examples


def _added(total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    return {suite: total.get(suite, 0) + more.get(suite, 0) for suite in {*total, *more}}


class _Run:
    """What the run has done so far: examples and distinct failures per suite, sampled over time
    for the report's plot, and shown live (one line per suite) while it runs."""

    def __init__(self, suites: tuple[str, ...], console) -> None:
        from rich.progress import Progress, TextColumn, TimeElapsedColumn
        from rich.table import Column

        self.started = time.monotonic()
        self.names = [suite.rsplit(".", 1)[1] for suite in suites]
        self.done: dict[str, int] = {}  # examples of finished worker processes
        self.records: list[dict] = []  # records of finished worker processes
        self.replayed: set[str] = set()  # tests whose failures finished processes met in the database
        self.rounds = 0  # rounds begun by finished worker processes
        # each round's seed, by worker and round: `pytest --harness-seed` generates that round again
        self.seeds: list[dict] = []
        self.timeline: list[dict] = []
        self.found: dict[tuple[str, str], float] = {}  # when each distinct failure was first seen (s)
        self.not_applicable: dict[str, str] = {}  # suite -> why none of its tests applies to the driver
        # The status column is plain text (markup=False: a reason may hold brackets), and the one cut
        # short: at most STATUS_WIDTH, so that the line fits 80 columns with the suite's name and the
        # time; the reasons are printed whole at the end.
        self.progress = Progress(TextColumn("{task.description}", table_column=Column(min_width=17, no_wrap=True)),
                                 TextColumn("{task.fields[status]}", markup=False,
                                            table_column=Column(no_wrap=True, overflow="ellipsis", max_width=STATUS_WIDTH)),
                                 TimeElapsedColumn(), console=console, transient=False)
        self.tasks = {name: self.progress.add_task(name, total=None, status=self._status(0, "-", 0))
                      for name in self.names}
        # what each worker's guided loop reached: its latest coverage record (a restarted worker's
        # process starts its count again)
        self.reached: dict[int, dict] = {}
        self.coverage_task = self.progress.add_task("driver coverage", total=None, status="-")

    @staticmethod
    def _status(examples: int, rate: str, failures: int) -> str:
        return f"{examples:>9,} examples {rate:>7} /s {failures} failures"

    def sample(self, current: list[_Tail], final: bool = False) -> None:
        """``final``: the run has ended, and each line shows its suite's examples/s over the whole
        run (over the last second it would show 0, the workers having stopped)."""
        now = round(time.monotonic() - self.started, 2)
        records = self.records + [r for tail in current for r in tail.poll().records]
        examples = self.done
        for tail in current:
            examples = _added(examples, _progress_of(tail.path))
        failures: dict[str, int] = {}
        for key in _distinct_failures(records):
            self.found.setdefault(key, now)
            failures[suite_of(key[0])] = failures.get(suite_of(key[0]), 0) + 1
        before: dict = self.timeline[-1] if self.timeline and not final else {"t": 0.0, "examples": {}}
        span = max(now - before["t"], 1e-9)
        for tail in current:
            if tail.coverage:
                self.reached[tail.worker] = tail.coverage[-1]
        self.timeline.append({"t": now, "examples": examples, "failures": failures,
                              "coverage": {str(worker): {key: reached[key] for key in ("edges", "corpus", "inputs")}
                                           for worker, reached in sorted(self.reached.items())}})
        self.progress.update(self.coverage_task, status=self._coverage_status())
        by_suite: dict[str, list[dict]] = {}
        for record in records:
            by_suite.setdefault(suite_of(record["id"]), []).append(record)
        for name, task in self.tasks.items():
            reason = not_applicable_reason(by_suite.get(name, [])) if not examples.get(name) else None
            if reason is not None:
                self.not_applicable[name] = reason
                self.progress.update(task, status=f"not applicable: {reason}")
                continue
            self.not_applicable.pop(name, None)
            rate = (examples.get(name, 0) - before["examples"].get(name, 0)) / span
            self.progress.update(task, completed=examples.get(name, 0),
                                 status=self._status(examples.get(name, 0), f"{rate:,.0f}", failures.get(name, 0)))

    def _coverage_status(self) -> str:
        if not self.reached:
            return "-"
        if not any(reached.get("guided") for reached in self.reached.values()):
            return "blind: not collected"
        if not any(reached["edges"] for reached in self.reached.values()):
            return "none reported by the driver: fuzzing blind"
        edges = " + ".join(f"{reached['edges']:,}" for reached in self.reached.values())
        corpus = sum(reached["corpus"] for reached in self.reached.values())
        return f"{edges} edges, corpus {corpus:,}"

    def finish(self, tail: _Tail, worker: int) -> None:
        """A worker process that wrote ``tail`` ended: what it did is the run's."""
        self.done = _added(self.done, _progress_of(tail.path))
        tail.poll()
        self.records += tail.records
        self.replayed |= tail.replayed
        if tail.coverage:
            self.reached[worker] = tail.coverage[-1]
        self.rounds += len(tail.rounds)
        self.seeds += [{"worker": worker, "round": begun["round"], "examples_per_test": begun["examples_per_test"],
                        "seed": begun.get("seed")} for begun in tail.rounds]

    def line(self, worker: int, begun: dict) -> str:
        examples = self.timeline[-1]["examples"] if self.timeline else {}
        done = ", ".join(f"{suite} {count}" for suite, count in sorted(examples.items())) or "none yet"
        seed = f", seed {begun['seed']}" if begun.get("seed") is not None else ""
        what = (f"{'guided' if begun['guided'] else 'blind'} fuzzing{seed}" if "guided" in begun else
                f"round {begun['round']} ({begun['examples_per_test']} examples per test{seed})")
        return (f"[{time.monotonic() - self.started:7.1f} s] worker {worker} {what} begins; examples so far: {done}; "
                f"{len(_distinct_failures(self.records))} distinct failures")


class _Worker:
    """One fuzzing process slot: a pytest process that runs round after round, started again
    if it ends before the time is up (a run it cannot finish, or a crash of the harness itself).

    Workers are independent processes (each with its own driver service and a random seed of its
    own, one more each round) sharing the example database, rather than pytest-xdist workers
    splitting one session's tests: a suite with fewer tests than workers still keeps every core
    busy, and no worker waits for another at the end of a round.

    Seeded, a round is repeatable: a failure that needs what earlier tests' calls left in the
    driver is run again after them, generating as the round did, and that rerun is its
    reproducer.  Unseeded, the earlier tests had only the example database to replay, which holds
    nothing of a passing test, and such a failure's script could only say it does not replay."""

    def __init__(self, number: int, out: str) -> None:
        self.number, self.out = number, out
        self.runs = 0  # processes started
        self.rounds_shown = 0  # rounds of the current process announced on the console
        self.process: subprocess.Popen | None = None
        self.interrupted_at: float | None = None  # when the current process was interrupted
        self.record = _Tail("")
        self.errors: IO[str] | None = None

    def start(self, command_for: Callable[[str, int], list[str]], environment: dict[str, str] | None = None) -> None:
        self.runs += 1
        self.rounds_shown = 0
        self.interrupted_at = None
        self.record = _Tail(os.path.join(self.out, f"run-{self.runs}-w{self.number}.jsonl"), self.number)
        self.errors = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(command_for(self.record.path, self.runs), stdout=subprocess.DEVNULL,
                                        stderr=self.errors, text=True, env=environment)

    def new_rounds(self) -> list[dict]:
        """Rounds the current process began since the last call."""
        rounds = self.record.poll().rounds
        new, self.rounds_shown = rounds[self.rounds_shown:], len(rounds)
        return new

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def interrupt(self) -> None:
        """Stop the worker: SIGINT once (pytest stops cleanly), SIGKILL if it is still running
        KILL_AFTER_S later (a worker that ignores SIGINT stops at its own deadline, between tests)."""
        if not self.running():
            return
        assert self.process is not None
        if self.interrupted_at is None:
            self.interrupted_at = time.monotonic()
            self.process.send_signal(signal.SIGINT)
        elif time.monotonic() - self.interrupted_at > KILL_AFTER_S:
            self.process.kill()

    def end(self, run: _Run) -> int:
        """Wait for the process to end, add what it did to ``run``; its exit status."""
        status = self.wait()
        run.finish(self.record, self.number)
        return status

    def wait(self) -> int:
        """The finished process' exit status (waiting up to a minute for an interrupted one)."""
        process, self.process = self.process, None
        assert process is not None
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return process.returncode

    def usage_error(self) -> str:
        """What pytest said of the usage error: from its last ``ERROR:`` line on (a driver that is
        not found also lists the drivers that exist), else its last line."""
        assert self.errors is not None
        self.errors.seek(0)
        lines = self.errors.read().strip().splitlines()
        starts = [index for index, line in enumerate(lines) if line.startswith("ERROR: ")]
        if starts:
            return "\n".join([lines[starts[-1]].removeprefix("ERROR: "), *lines[starts[-1] + 1:]])
        return lines[-1] if lines else "usage error"

    def close(self) -> None:
        if self.errors is not None:
            self.errors.close()
            self.errors = None


def _check_driver_name(driver: str) -> None:
    """An unknown driver name is a usage error before any worker starts, with the drivers that
    exist (`DriverRegistry.resolve`).  A ``module:factory``, ``file.py:factory`` or ``native:``
    driver is loaded by the worker only: loading it here would run the vendor's code in the
    controller, which nothing the driver does may take down."""
    if ":" in driver:
        return
    from harness.drivers.catalog import load_catalog

    load_catalog().resolve(driver)


def _holds_nothing(directory: str) -> bool:
    """Whether a local example database is missing or empty."""
    if not os.path.isdir(directory):
        return True
    with os.scandir(directory) as entries:
        return next(entries, None) is None


def _absolute(db: str) -> str:
    return db if db.startswith("redis://") else os.path.abspath(db)


def _check_places(db: str, out: str) -> None:
    """The example database (a Redis server reached) and the output directory, checked before any
    worker starts (a database that is a file lost every example unsaid; an output directory that
    could not be made was a traceback).  The output directory is made."""
    from harness.integration.database import database_problem, reach_redis
    from harness.integration.inputs import directory_problem

    problem = database_problem(db, option="--db")
    if problem:
        raise UsageError(problem)
    if db.startswith("redis://"):  # here, not in a worker racing the budget (a short one ended first)
        reach_redis(db, option="--db").close()
    problem = directory_problem(out, make=True)
    if problem:
        raise UsageError(f"--out={out}: {problem}")


def _write_reports(out: str, files: dict[str, Callable[[], str]]) -> None:
    """Each report, written atomically; one that cannot be (a full disk) is one line, exit 2."""
    for name, text in files.items():
        try:
            write_atomically(os.path.join(out, name), text())
        except OSError as error:
            raise UsageError(f"--out={out}: cannot write {name}: {error.strerror}") from None


def fuzz(driver: str, minutes: float, workers: int, db: str, out: str, suites: tuple[str, ...] = SUITES,
         blind: bool = False) -> int:
    from rich.console import Console

    _check_driver_name(driver)
    _check_places(db, out)
    out, db = os.path.abspath(out), _absolute(db)
    deadline = time.monotonic() + minutes * 60
    stop = {"now": False}
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    run = _Run(suites, Console(highlight=False, soft_wrap=True))
    slots = [_Worker(number, out) for number in range(1, workers + 1)]

    def command_for(slot: _Worker) -> Callable[[str, int], list[str]]:
        # each worker fuzzes a share of the tests of every suite: together they reach them all early
        return lambda record, runs: _pytest(
            driver, db, record, os.path.join(out, "reproducers"),
            [f"--harness-examples={FIRST_TURN_EXAMPLES}", f"--harness-guided-for={max(deadline - time.monotonic(), 0):.1f}",
             f"--harness-targets-share={slot.number}/{workers}", f"--harness-seed={secrets.randbits(32)}",
             *(["--harness-blind"] if blind else [])],
            suites)

    # the driver's service reports the coverage it reached (harness.service.coverage); blind, it
    # pays nothing for tracing
    environment = {**os.environ, COVERAGE_ENVIRONMENT: "0" if blind else "1"}

    usage_error = ""
    try:
        with run.progress:
            sampled = time.monotonic()
            while not usage_error:
                ending = stop["now"] or time.monotonic() >= deadline
                for slot in slots:
                    if slot.running():
                        if ending:
                            slot.interrupt()
                        continue
                    if slot.process is not None:  # the process just ended
                        if slot.end(run) == 4:
                            usage_error = slot.usage_error()
                    if not ending and not usage_error and deadline - time.monotonic() > RESTART_IF_LEFT_S:
                        slot.close()
                        slot.start(command_for(slot), environment)
                if ending and not any(slot.process is not None for slot in slots):
                    break
                if time.monotonic() - sampled >= SAMPLE_EVERY_S:
                    run.sample([slot.record for slot in slots if slot.process is not None])
                    for slot in slots:
                        for begun in slot.new_rounds() if slot.process is not None else ():
                            run.progress.console.print(run.line(slot.number, begun))
                    sampled = time.monotonic()
                time.sleep(0.1)
            run.sample([], final=True)
    except KeyboardInterrupt:
        for slot in slots:
            slot.interrupt()
        for slot in slots:
            if slot.process is not None:
                slot.end(run)
        run.sample([], final=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
        for slot in slots:
            if slot.process is not None:
                slot.process.kill()
                slot.wait()
            slot.close()
    if usage_error:
        print(f"harness fuzz: {usage_error}", file=sys.stderr)
        return 2
    rounds = run.rounds
    failures = _distinct_failures(run.records)
    examples = run.timeline[-1]["examples"] if run.timeline else {}
    seconds = round(time.monotonic() - run.started, 1)
    summary = {
        "driver": driver, "database": db, "workers": workers, "suites": run.names,
        "rounds": rounds, "seeds": run.seeds, "seconds": seconds, "examples_per_suite": examples,
        "examples_per_second": round(sum(examples.values()) / max(seconds, 1e-9), 1), "interrupted": stop["now"],
        "failures": [{"test": r["id"], "suite": suite_of(r["id"]), "requirements": r["requirements"],
                      "fault": r.get("fault", "driver"), "message": r["message"], "reproducer": r.get("reproducer", ""),
                      "rule": r.get("rule", ""), "unshrunk": r.get("unshrunk", False), "hidden_by": r.get("hidden_by", ""), "replays": r.get("replays"),
                      "checked": r.get("checked", True), "by_breaker": r.get("by_breaker", False), "found_at_s": run.found.get(key),
                      # met first in the example database: an earlier run's or another process's
                      "from_database": r["id"] in run.replayed}
                     for key, r in failures.items()],
        "timeline": run.timeline,
        "mode": "blind" if blind else "guided",
        # what each worker's last process reached (edges are counted per process: two workers
        # reaching the same code count it once each)
        "coverage": {str(worker): reached for worker, reached in sorted(run.reached.items())},
    }
    # the root causes, in the order they were found (a failure the deadline caught unshrunk has no time)
    found = sorted(summary["failures"], key=lambda f: f["found_at_s"] if f["found_at_s"] is not None else float("inf"))
    findings = group_findings(found)
    summary["findings"] = [finding.as_json() for finding in findings]
    summary["not_applicable"] = dict(run.not_applicable)
    _write_reports(out, {"fuzz-summary.json": lambda: json.dumps(summary, indent=2),
                         "fuzz-report.html": lambda: render_fuzz_report(summary, out)})
    reached = run._coverage_status()
    print(f"harness fuzz: {driver}: {len(failures)} distinct failures ({len(findings)} root causes) in {seconds:,.0f} s, "
          f"{summary['mode']}{f' ({reached})' if reached != '-' else ''}; summary in {os.path.join(out, 'fuzz-summary.json')}, report in {os.path.join(out, 'fuzz-report.html')}")
    for suite, reason in sorted(run.not_applicable.items()):
        print(f"{suite}: not applicable: {reason}")
    for line in findings_block(findings):
        print(line)
    return 1 if failures else 0


def findings_block(findings: list[Finding]) -> list[str]:
    """The console's account of what a run found: each root cause with its requirement, where it
    showed, its first message, the tests it failed and the reproducer to start from."""
    lines = []
    for number, finding in enumerate(findings, 1):
        where = f" at {finding.entry_point}" if finding.entry_point else ""
        where += f" in {finding.frame}" if finding.frame else ""
        tests = "1 test" if len(finding.tests) == 1 else f"{len(finding.tests)} tests"
        lines.append(f"finding {number} of {len(findings)}: {finding.requirement or 'no requirement named'}{where} ({tests})")
        lines.append(f"    message: {finding.message}")
        lines.append(f"    tests: {', '.join(finding.tests)}")
        lines.append(f"    reproducer: {finding.reproducer or 'none written (see the record of the first test)'}")
    return lines


def replay(driver: str, db: str, out: str) -> int:
    """Re-run only the stored failing examples (what a developer does the morning after)."""
    _check_driver_name(driver)
    _check_places(db, out)
    out, db = os.path.abspath(out), _absolute(db)
    record = os.path.join(out, "replay.jsonl")
    if os.path.isdir(record):
        raise UsageError(f"--out={out}: {record} is a directory")
    if os.path.exists(record):
        os.unlink(record)
    if not db.startswith("redis://") and _holds_nothing(db):
        # no example of any driver: nothing for a run of every suite to find
        print(f"harness replay: {driver}: nothing is stored for this driver in {db} (0 examples replayed)")
        return 0
    # Only the tests that store examples (a fixed test has nothing stored, and a failure of one
    # would be reported as a stored failure that still reproduces).
    command = _pytest(driver, db, record, os.path.join(out, "reproducers"), ["--harness-replay", "--harness-generative-only"])
    code = subprocess.run(command, stdin=subprocess.DEVNULL).returncode
    if code == 4:
        return 2
    records = _Tail(record).poll().records
    replayed = sum(r.get("examples") or 0 for r in records if "id" in r)
    failures = _distinct_failures(records)
    if not replayed and not failures:
        print(f"harness replay: {driver}: nothing is stored for this driver in {db} (0 examples replayed)")
        return 0
    for record_ in failures.values():
        print(f"still failing: {record_['id']}: {record_['message']}")
    print(f"harness replay: {driver}: {replayed} stored examples replayed; {len(failures)} failures reproduce")
    return 1 if failures else 0
