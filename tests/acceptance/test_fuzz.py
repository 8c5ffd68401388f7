"""harness fuzz and harness replay with a local example database."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from out_of_tree_drivers import LEAKS_AFTER_FOUR

from harness.commands.fuzz import KILL_AFTER_S
from harness.report.attribution import failed_requirements
from harness.report.fuzz_report import COVERAGE_COLOUR, FAILURE_COLOUR, RATE_COLOUR


def harness(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.commands.cli", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)


def start_harness(cwd: Path, *args: str) -> subprocess.Popen:
    cwd.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "harness.commands.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def failed_tests(summary_path: Path) -> set[str]:
    return {f["test"].split("[")[0] for f in json.loads(summary_path.read_text())["failures"]}


@pytest.fixture(scope="module")
def fuzzed(once_per_run) -> tuple[Path, subprocess.CompletedProcess]:
    """A short fuzz run of a seeded bug, two workers: its directory and what it printed (one run
    for the test run, whichever worker asks first).  The custom-call suite does not apply to the
    mutant, which declares no targets."""
    def fuzz(directory: Path) -> list:
        done = harness(directory, "fuzz", "--driver", "mutant-writes-past-output", "--minutes", "0.3", "--workers", "2",
                       "--suites", "memory_pools,requests,custom_calls", "--db", "db", "--out", "fz")
        return [done.returncode, done.stdout, done.stderr]

    directory, (code, stdout, stderr) = once_per_run("fuzzed", fuzz)
    return directory, subprocess.CompletedProcess("harness fuzz", code, stdout, stderr)


def test_fuzz_keeps_failures_and_replay_finds_them(fuzzed: tuple[Path, subprocess.CompletedProcess]) -> None:
    tmp_path, fuzzed_run = fuzzed
    assert fuzzed_run.returncode == 1, fuzzed_run.stderr
    assert "distinct failures" in fuzzed_run.stdout and "guided fuzzing" in fuzzed_run.stdout
    summary = json.loads((tmp_path / "fz" / "fuzz-summary.json").read_text())
    assert summary["failures"] and summary["examples_per_suite"] and summary["workers"] == 2
    # Two worker processes fuzzed side by side, each keeping its own record. (Not every worker
    # need finish a test in the budget: on a loaded machine shrinking its first failures can take it all.)
    records = {path.name.rsplit("-", 1)[1]: [json.loads(line) for line in path.read_text().splitlines()]
               for path in (tmp_path / "fz").glob("run-*-w*.jsonl")}
    assert {name for name, lines in records.items() if any("round" in line for line in lines)} == {"w1.jsonl", "w2.jsonl"}
    assert any("id" in line for lines in records.values() for line in lines)
    assert any(f["reproducer"] and Path(f["reproducer"]).exists() for f in summary["failures"])
    assert any((tmp_path / "db").iterdir())
    replayed = harness(tmp_path, "replay", "--driver", "mutant-writes-past-output", "--db", "db", "--out", "rp")
    assert replayed.returncode == 1 and "still failing: suites/memory_pools/" in replayed.stdout
    fixed = harness(tmp_path, "replay", "--driver", "reference", "--db", "db", "--out", "rp2")
    # Examples are kept per driver: nothing of the mutant's is the reference's to replay.
    assert fixed.returncode == 0 and "nothing is stored for this driver" in fixed.stdout, fixed.stdout


def test_fuzz_ends_with_its_findings_by_root_cause(fuzzed: tuple[Path, subprocess.CompletedProcess]) -> None:
    """After the run: each root cause once, with its requirement, message, tests and reproducer;
    the suite that does not apply says why instead of counting 0 examples."""
    tmp_path, fuzzed_run = fuzzed
    summary = json.loads((tmp_path / "fz" / "fuzz-summary.json").read_text())
    failures, findings = summary["failures"], summary["findings"]
    assert failures and 0 < len(findings) <= len(failures)
    # every failing test is in a finding, and a finding holds only tests that failed its requirement
    assert {f["test"] for f in failures} == {test for finding in findings for test in finding["tests"]}
    for finding in findings:
        # a failure naming no rule is filed under its test's first requirement
        assert all((f["rule"] or (f.get("requirements") or [""])[0]) == finding["requirement"] for f in failures
                   if f["test"] in finding["tests"] and f["message"].splitlines()[0] == finding["message"])
        assert finding["reproducer"] and Path(finding["reproducer"]).exists()
    heads = re.findall(r"^finding (\d+) of (\d+): (\S+)(?: at (\S+))?(?: in (\S+))? \((\d+) tests?\)$", fuzzed_run.stdout,
                       re.MULTILINE)
    assert [(int(n), int(of), rule, where, frame, int(count)) for n, of, rule, where, frame, count in heads] == [
        (n, len(findings), f["requirement"], f["entry_point"], f["frame"], len(f["tests"])) for n, f in enumerate(findings, 1)]
    for finding in findings:
        assert f"    message: {finding['message']}" in fuzzed_run.stdout
        assert f"    reproducer: {finding['reproducer']}" in fuzzed_run.stdout
    assert f"({len(findings)} root causes)" in fuzzed_run.stdout
    reason = summary["not_applicable"]["custom_calls"]
    assert "custom-call" in reason and f"custom_calls: not applicable: {reason}" in fuzzed_run.stdout
    assert not re.search(r"^custom_calls +0 examples", fuzzed_run.stdout, re.MULTILINE)
    assert set(summary["not_applicable"]) == {"custom_calls"}


def test_rounds_run_in_one_session_with_doubling_examples(tmp_path: Path) -> None:
    """--harness-rounds-for: the generative tests round after round in one pytest process (one
    driver service for all of them), each round twice the examples per test, one suite later; the
    fixed tests in the first round only; the session ends at its deadline, within a round."""
    record = tmp_path / "rounds.jsonl"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                           "harness.suites.packed_functions", "harness.suites.numerics", "--driver=reference",
                           "--harness-profile=nightly", "--harness-examples=1",
                           # long enough for a second round on a slow machine (round 1 takes ~1 s here, but
                           # up to 6 s in a busy fresh checkout: hypothesis' first text strategy, the builds)
                           "--harness-rounds-for=12", f"--harness-db={tmp_path / 'db'}", f"--harness-record={record}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    starts = [index for index, line in enumerate(lines) if "round" in line]
    assert len(starts) >= 2
    assert [lines[i]["round"] for i in starts] == list(range(1, len(starts) + 1))
    assert [lines[i]["examples_per_test"] for i in starts] == [2 ** k for k in range(len(starts))]
    rounds = [[line for line in lines[i + 1:end] if "id" in line] for i, end in zip(starts, starts[1:] + [len(lines)])]
    fixed = {line["id"] for line in rounds[0] if line["examples"] is None}
    assert len(fixed) >= 5 and all(line["id"].startswith("suites/packed_functions/") for line in rounds[0]
                                   if line["id"] in fixed)
    rounds[0] = [line for line in rounds[0] if line["id"] not in fixed]  # the fixed tests: the first round only
    tests = {line["id"] for line in rounds[0]}
    suites = [[line["id"].split("/")[1] for line in tested] for tested in rounds]
    for number, tested in enumerate(rounds, 1):
        if number < len(rounds):  # every generative test once per round; the deadline cut the last round short
            assert sorted(line["id"] for line in tested) == sorted(tests)
        assert {line["id"] for line in tested} <= tests and all(line["outcome"] == "passed" for line in tested)
        # the round's count is what a test with examples to spare ran (rejected ones come on top)
        assert max(line["examples"] for line in tested) >= lines[starts[number - 1]]["examples_per_test"]
    # each round starts one suite later than the round before
    assert suites[0][0] == "packed_functions" and suites[1][0] == "numerics"
    assert [line["service"]["starts"] for line in lines if "service" in line] == [1]


def test_fuzz_rounds_run_the_state_machine_and_count_its_runs(tmp_path: Path) -> None:
    """The memory-domain state machine runs inside a test (not @given): marked generative, it is
    kept by --harness-generative-only, each round's count reaches it, and its runs are counted."""
    record = tmp_path / "rounds.jsonl"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                           "harness.suites.memory_domains", "-k", "state_machine", "--driver=reference",
                           "--harness-profile=nightly", "--harness-generative-only", "--harness-examples=3",
                           "--harness-rounds-for=0.5", f"--harness-db={tmp_path / 'db'}", f"--harness-record={record}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    rounds = [line for line in lines if "round" in line]
    runs = [line for line in lines if line.get("id", "").endswith("::test_memory_domain_state_machine")]
    assert rounds and len(runs) == len(rounds)
    assert all(line["outcome"] == "passed" and line["examples"] >= 1 for line in runs)
    # later rounds ask for more runs: the last round ran at least its examples per test
    assert runs[-1]["examples"] >= rounds[-1]["examples_per_test"]


#: pytest, in a child that turns SIGINT into KeyboardInterrupt.  The tests below stop their pytest
#: with SIGINT, as harness fuzz's deadline does; when this run is itself a shell's background job,
#: SIGINT is ignored and a child would inherit that.  Set in the child's own interpreter, not by a
#: preexec_fn: that forks this worker in Python, and a worker that has imported jax (the XLA tests)
#: warns on every such fork.
_INTERRUPTIBLE_PYTEST = [sys.executable, "-c", "import signal, sys, pytest; "
                         "signal.signal(signal.SIGINT, signal.default_int_handler); sys.exit(pytest.main(sys.argv[1:]))"]


#: A generative test that finds a failure and is stopped while hypothesis shrinks it, as the
#: SIGINT of harness fuzz's deadline stops a worker that is mid-test.
_STOPPED_WHILE_SHRINKING = """
import os
import signal

import pytest
from hypothesis import given, settings, strategies as st

failures = []


@pytest.mark.requirement("POOL-2")
@settings(database=None, max_examples=500)
@given(st.integers(0, 10**9))
def test_fails_then_the_run_is_stopped(n):
    if failures:  # hypothesis is shrinking the failure: the deadline's interrupt arrives now
        os.kill(os.getpid(), signal.SIGINT)
    if n > 1000:
        failures.append(n)
        assert n <= 1000, "the driver wrote past the output"


def test_never_reached():
    pass
"""


def _stopped_run(tmp_path: Path, source: str) -> list[dict]:
    """Run the tests of ``source``, which stop their run with SIGINT; the records of its tests."""
    (tmp_path / "test_stopped.py").write_text(source)
    record = tmp_path / "record.jsonl"
    done = subprocess.run([*_INTERRUPTIBLE_PYTEST, "-q", "-p", "no:cacheprovider", "test_stopped.py",
                           "--driver=reference", f"--harness-record={record}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in map(json.loads, record.read_text().splitlines()) if "id" in line]


def test_a_failure_found_before_the_run_is_stopped_is_recorded_unshrunk(tmp_path: Path) -> None:
    """pytest reports nothing of a test interrupted mid-run; a failure it had found must still be
    in the run's records (harness fuzz's summary and report read them), not only in the database."""
    tests = _stopped_run(tmp_path, _STOPPED_WHILE_SHRINKING)
    assert [line["id"].rsplit("::", 1)[1] for line in tests] == ["test_fails_then_the_run_is_stopped"]
    (stopped,) = tests
    assert stopped["unshrunk"] and stopped["outcome"] == "failed" and stopped["examples"] >= 2
    assert stopped["error_type"] == "AssertionError" and stopped["fault"] == "driver"
    assert failed_requirements(stopped) == ("POOL-2",)
    assert "the driver wrote past the output" in stopped["message"]


#: harness fuzz's deadline interrupt falling in hypothesis' own code, before its engine starts on a
#: test: hypothesis then raises its own AssertionError from the KeyboardInterrupt (it asserts on its
#: engine's state while handling the interrupt).  Modelled here by a test that does the same.
_INTERRUPTED_INSIDE_HYPOTHESIS = """
import os
import signal
import time


def test_stopped_by_the_deadline():
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except KeyboardInterrupt:
        assert False, "assert None is not None"


def test_never_reached():
    pass
"""


def test_an_error_raised_from_the_deadlines_interrupt_is_no_failure(tmp_path: Path) -> None:
    """A minute of fuzzing found a 'distinct failure' of the harness at its deadline: hypothesis' own
    AssertionError raised from the interrupt.  The test was stopped, not failed; the run stops."""
    assert _stopped_run(tmp_path, _INTERRUPTED_INSIDE_HYPOTHESIS) == []


#: Stops the run (SIGINT, as harness fuzz's deadline does) when the recorder begins to check a
#: failure's reproducer on a fresh driver.
_STOP_DURING_THE_CHECK = """
import os
import signal

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    recorder = config.pluginmanager.get_plugin("harness-recorder")

    def stopped_during_the_check(verdict):
        os.kill(os.getpid(), signal.SIGINT)
        return True

    recorder._replaying = stopped_during_the_check
"""


def test_a_failure_whose_check_the_run_stops_is_recorded_and_its_script_says_so(tmp_path: Path) -> None:
    """The deadline can come while a failure's script is checked on a fresh driver: the failure is
    still recorded (unchecked: no ``replays``, and ``checked`` false), and its script, written before the check, fails on
    the bug but never reads a pass as a fix (exit 3: the failure may have needed earlier calls)."""
    (tmp_path / "stop_during_the_check.py").write_text(_STOP_DURING_THE_CHECK)
    record = tmp_path / "record.jsonl"
    done = subprocess.run([*_INTERRUPTIBLE_PYTEST, "-q", "-p", "no:cacheprovider", "-p", "stop_during_the_check",
                           "--pyargs", "harness.suites.memory_pools", "-k", "test_a_prepared_model_runs_again_and_again",
                           "--driver=mutant-writes-past-output", "--harness-profile=ci", "--harness-seed=0",
                           f"--harness-record={record}", f"--harness-reproducers={tmp_path / 'rp'}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:] + done.stderr[-3000:]
    (stopped,) = [line for line in map(json.loads, record.read_text().splitlines()) if "id" in line]
    assert stopped["outcome"] == "failed" and "replays" not in stopped
    # a verdict on one of the test's own rules: which one the bytes past the output break first
    # (another output's, POOL-1's comparison, or the canaries, POOL-2's) is the drawn layout's
    assert failed_requirements(stopped) and set(failed_requirements(stopped)) <= {"POOL-1", "POOL-2"}, stopped
    assert stopped["checked"] is False  # the reports mark it
    script = Path(stopped["reproducer"])
    on_the_bug = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    rule = failed_requirements(stopped)[0]  # the script fails on the rule the run recorded
    assert on_the_bug.returncode == 1 and f"[{rule}]" in on_the_bug.stderr, on_the_bug.stdout[-2000:] + on_the_bug.stderr[-3000:]
    fixed = tmp_path / "reference.py"
    fixed.write_text(script.read_text().replace("DRIVER = 'mutant-writes-past-output'", "DRIVER = 'reference'"))
    passes = subprocess.run([sys.executable, str(fixed)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert passes.returncode == 3 and "not yet checked" in passes.stdout, passes.stdout[-2000:] + passes.stderr[-3000:]


def test_a_run_stopped_before_any_failure_records_no_failure(tmp_path: Path) -> None:
    (tmp_path / "test_stopped.py").write_text(_STOPPED_WHILE_SHRINKING.replace("if n > 1000:", "if False:")
                                              .replace("if failures:", "if n > 1000:"))
    record = tmp_path / "record.jsonl"
    done = subprocess.run([*_INTERRUPTIBLE_PYTEST, "-q", "-p", "no:cacheprovider", "test_stopped.py",
                           "--driver=reference", f"--harness-record={record}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:] + done.stderr[-3000:]
    assert not [line for line in map(json.loads, record.read_text().splitlines()) if "id" in line]


#: Stops the run (SIGINT, as harness fuzz's deadline does) the moment the recorder hears of the
#: running test's first failure: the state machine is then still shrinking it, or its leak.
_STOP_AT_FIRST_FAILURE = """
import os
import signal

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    recorder = config.pluginmanager.get_plugin("harness-recorder")
    heard = recorder.note_failure

    def heard_then_stopped(error):
        heard(error)
        os.kill(os.getpid(), signal.SIGINT)

    recorder.note_failure = heard_then_stopped
"""


@pytest.mark.parametrize(("driver", "requirement"), [("mutant-released-storage-recycled", "DOM-STATE-2"),
                                                     ("leaks_after_four.py:factory", "DOM-ALLOC-3")],
                         ids=["failing run", "leak across runs"])
def test_a_state_machine_stopped_after_a_failure_records_it_unshrunk(tmp_path: Path, driver: str, requirement: str) -> None:
    """The memory-domain state machine runs hypothesis inside its test, and judges leaks after its
    runs: a run stopped while either is shrunk still records the failure, with a reproducer that fails."""
    (tmp_path / "stop_at_first_failure.py").write_text(_STOP_AT_FIRST_FAILURE)
    (tmp_path / "leaks_after_four.py").write_text(LEAKS_AFTER_FOUR)
    record = tmp_path / "record.jsonl"
    done = subprocess.run([*_INTERRUPTIBLE_PYTEST, "-q", "-p", "no:cacheprovider", "-p", "stop_at_first_failure",
                           "--pyargs", "harness.suites.memory_domains", "-k", "state_machine", f"--driver={driver}",
                           # seeded: the machine's runs follow the seed, and with some (1 in 12 measured)
                           # its 12 runs do not come to the recycled storage
                           "--harness-profile=ci", "--harness-seed=0", f"--harness-record={record}",
                           f"--harness-reproducers={tmp_path / 'rp'}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:] + done.stderr[-3000:]
    (stopped,) = [line for line in map(json.loads, record.read_text().splitlines()) if "id" in line]
    assert stopped["id"].endswith("::test_memory_domain_state_machine")
    assert stopped["unshrunk"] and stopped["outcome"] == "failed" and stopped["fault"] == "driver"
    assert failed_requirements(stopped) == (requirement,), stopped
    # its steps are every run up to the failure: they fail the same way on a fresh driver
    replayed = subprocess.run([sys.executable, stopped["reproducer"]], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert replayed.returncode == 1 and f"[{requirement}]" in replayed.stderr, replayed.stdout[-2000:] + replayed.stderr[-3000:]


def test_unknown_suite_is_one_clear_line(tmp_path: Path) -> None:
    done = harness(tmp_path, "fuzz", "--driver", "reference", "--minutes", "0.1", "--suites", "memory_pools,tensors")
    assert done.returncode == 2 and "'tensors'" in done.stderr and "memory_domains" in done.stderr
    assert "Traceback" not in done.stderr


def test_unreachable_redis_is_one_clear_line(tmp_path: Path) -> None:
    done = harness(tmp_path, "fuzz", "--driver", "reference", "--minutes", "0.1", "--db", "redis://127.0.0.1:1/0", "--out", "fz")
    assert done.returncode == 2
    assert "redis://127.0.0.1:1/0" in done.stderr and "Traceback" not in done.stderr


def _first_failure_recorded(out: Path, process: subprocess.Popen, seconds: float) -> None:
    """Wait until the fuzz run writing into ``out`` has recorded a failure (or ended)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        for path in out.glob("run-*.jsonl"):
            if '"outcome": "failed"' in path.read_text():
                return
        time.sleep(0.5)


def test_two_fuzz_processes_on_one_redis_share_corpus_and_findings(tmp_path: Path, redis_url: str) -> None:
    """Two "machines" (separate directories, so separate local databases) fuzz one driver against
    one Redis server, the second starting once the first has found a failure: the second runs the
    inputs the first kept (its corpus) and reports the first's failure from the database; a third
    machine that never fuzzed replays it from Redis, and not from its own directory."""
    driver = "mutant-quantized-rounding-truncates"  # fails one test: the rest of the time goes to fuzzing
    machine_a, machine_b, machine_c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    run_a = start_harness(machine_a, "fuzz", "--driver", driver, "--minutes", "0.4", "--db", redis_url, "--out", "fz",
                          "--suites", "numerics")
    _first_failure_recorded(machine_a / "fz", run_a, 120)
    run_b = start_harness(machine_b, "fuzz", "--driver", driver, "--minutes", "0.25", "--db", redis_url, "--out", "fz",
                          "--suites", "numerics")
    for run in (run_a, run_b):
        out, err = run.communicate(timeout=600)
        assert run.returncode == 1, f"{out}\n{err}"
    summary_a = json.loads((machine_a / "fz" / "fuzz-summary.json").read_text())
    summary_b = json.loads((machine_b / "fz" / "fuzz-summary.json").read_text())
    assert summary_a["mode"] == summary_b["mode"] == "guided"
    assert summary_a["coverage"]["1"]["corpus"] > 0 and summary_a["coverage"]["1"]["edges"] > 0
    assert summary_b["coverage"]["1"]["shared_loaded"] > 0, summary_b["coverage"]
    found_by_a = {f["test"] for f in summary_a["failures"]}
    from_database = {f["test"] for f in summary_b["failures"] if f["from_database"]}
    assert from_database and from_database <= found_by_a, (from_database, found_by_a)

    # Control: machine C's local database holds nothing; what it replays came through Redis.
    machine_c.mkdir()
    local_only = harness(machine_c, "replay", "--driver", driver, "--out", "rp-local")
    assert local_only.returncode == 0 and "nothing is stored for this driver" in local_only.stdout, local_only.stdout
    replayed = harness(machine_c, "replay", "--driver", driver, "--db", redis_url, "--out", "rp")
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    still = {line.split(": ")[1] for line in replayed.stdout.splitlines() if line.startswith("still failing: ")}
    assert still & (found_by_a | {f["test"] for f in summary_b["failures"]}), still


def test_fuzz_report_plots_each_suite_and_links_each_reproducer(fuzzed: tuple[Path, subprocess.CompletedProcess]) -> None:
    tmp_path, _ = fuzzed
    out = tmp_path / "fz"
    summary = json.loads((out / "fuzz-summary.json").read_text())
    # sampled while running: examples per suite never go down, and end at the summary's counts
    timeline = summary["timeline"]
    assert len(timeline) >= 3 and summary["examples_per_second"] > 0
    for suite in summary["suites"]:
        counts = [sample["examples"].get(suite, 0) for sample in timeline]
        assert counts == sorted(counts) and counts[-1] == summary["examples_per_suite"].get(suite, 0)
    assert all(f["found_at_s"] is not None and f["suite"] in summary["suites"] for f in summary["failures"])
    page = (out / "fuzz-report.html").read_text()
    # one plot per suite, and one of the driver's coverage and the root causes over the run
    assert page.count("<svg") == len(summary["suites"]) + 1
    assert summary["mode"] == "guided" and all(c["edges"] > 0 for c in summary["coverage"].values())
    assert all(f"{c['edges']:,} edges" in page for c in summary["coverage"].values())
    assert page.count("<tr><td>") >= len(summary["findings"]) > 0
    links = re.findall(r'<a href="([^"]+)">', page)
    assert links and all((out / link).exists() for link in links)
    assert {str(Path(f["reproducer"]).relative_to(out)) for f in summary["failures"] if f["reproducer"]} <= set(links)


def test_fuzz_report_renders_in_headless_chromium(fuzzed: tuple[Path, subprocess.CompletedProcess], tmp_path: Path,
                                                  chromium) -> None:
    page = (fuzzed[0] / "fz" / "fuzz-report.html").as_uri()
    screenshot = tmp_path / "fuzz-report.png"
    # tall enough for the findings and coverage section and the first suite's plot below it
    shot = chromium.screenshot(page, screenshot, 900, 2400)
    assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-2000:]
    header = screenshot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", header[16:24]) == (900, 2400)
    from PIL import Image

    with Image.open(screenshot) as image:
        colours = {colour for _, colour in image.convert("RGB").getcolors(maxcolors=1 << 20)}
    # every plotted line is drawn: examples/s, failures (the run found some) and driver coverage
    for colour in (RATE_COLOUR, FAILURE_COLOUR, COVERAGE_COLOUR):
        assert tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5)) in colours, f"no {colour} line in the screenshot"
    dom = chromium.dom(page)
    assert "memory_pools" in dom.stdout and "<polyline" in dom.stdout and "reproducer" in dom.stdout


def test_the_budget_holds_for_a_worker_started_with_sigint_ignored(tmp_path: Path) -> None:
    """A shell starts a background job (``harness fuzz ... &``) with SIGINT ignored, and the
    workers inherit that; the controller's interrupt at its deadline must still end their
    round, not let them run it to its end.  Fifteen seconds of budget against a first round of three
    suites at 25 examples per test, on a correct driver whose every execution takes 20 ms: the
    memory_pools examples alone execute over a thousand times, more than 20 s on any machine, so
    the worker records only part of the round.  (Against the reference, a fast machine ran more than
    half the round in six seconds; with six, a loaded machine spent them all starting the worker
    and recorded no test.)  A worker that heard no interrupt and kept no deadline of
    its own would be killed KILL_AFTER_S after the interrupt: the run ends before that."""
    driver = f"{Path(__file__).parents[1] / 'reliability' / 'drills.py'}:slow_but_correct"
    budget_minutes = 0.25
    started = time.monotonic()
    # started as a shell starts a background job: the shell ignores SIGINT, and what it runs inherits that
    done = subprocess.run(["sh", "-c", 'trap "" INT; exec "$@"', "sh", sys.executable, "-m", "harness.commands.cli", "fuzz",
                           "--driver", driver, "--minutes", str(budget_minutes), "--suites",
                           "memory_pools,memory_domains,custom_calls", "--db", "db", "--out", "fz"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ, "DRILL_SLOW_S": "0.02"})
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert took < budget_minutes * 60 + KILL_AFTER_S, (
        f"the worker ran on until it was killed ({took:.1f} s for a {budget_minutes * 60:.0f} s budget)")
    recorded = [json.loads(line) for line in (tmp_path / "fz" / "run-1-w1.jsonl").read_text().splitlines()]
    tested = {line["id"] for line in recorded if "id" in line}
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "--driver=reference", "--pyargs", "harness.suites.memory_pools",
                                "harness.suites.memory_domains", "harness.suites.custom_calls"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=600)
    in_round = [line for line in collected.stdout.splitlines() if "::" in line]
    assert tested and len(in_round) > 100 and len(tested) < len(in_round) / 2, (len(tested), len(in_round))
