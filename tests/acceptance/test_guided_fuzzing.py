"""The guided fuzz loop in a pytest session (``--harness-guided-for``): one test, two bugs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from out_of_tree_drivers import TWO_TRANSPOSE_BUGS

from harness.service.coverage import COVERAGE_ENVIRONMENT


def _fuzz(tmp_path: Path, driver: str, seconds: float, *extra: str) -> list[dict]:
    record = tmp_path / "record.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "harness.suites.memory_pools", f"--driver={driver}",
                    "-k", "test_each_operation_family and transpose and not chained", "--harness-profile=nightly",
                    f"--harness-guided-for={seconds}", f"--harness-db={tmp_path / 'db'}", f"--harness-record={record}",
                    "-q", "-p", "no:cacheprovider", *extra],
                   cwd=tmp_path, capture_output=True, text=True, timeout=300,
                   env={**os.environ, COVERAGE_ENVIRONMENT: "1"})
    return [json.loads(line) for line in record.read_text().splitlines()]


def test_a_failure_met_again_is_skipped_and_the_loop_goes_on_to_the_next(tmp_path: Path) -> None:
    """Both bugs of one test are found and shrunk in one run: after the first, the loop keeps
    fuzzing the same test instead of meeting the same failure again."""
    (tmp_path / "two_bugs.py").write_text(TWO_TRANSPOSE_BUGS)
    records = _fuzz(tmp_path, f"{tmp_path / 'two_bugs.py'}:factory", 10)
    failed = [r for r in records if r.get("outcome") == "failed"]
    assert {r["id"].split("::")[1] for r in failed} == {"test_each_operation_family[transpose]"}
    rules = sorted({r["rule"] for r in failed})
    assert rules == ["OPS-1", "SVC-1"], [r["message"][:120] for r in failed]
    assert all(r["examples"] for r in failed)
    coverage = [r["coverage"] for r in records if "coverage" in r]
    assert coverage[-1]["final"] and coverage[-1]["edges"] > 0 and coverage[-1]["corpus"] > 0
    spent = {t["test"].split("::")[1]: t for t in coverage[-1]["tests"]}  # where the time went, per test
    assert "test_each_operation_family[transpose]" in spent
    assert all(t["inputs"] >= t["found"] and t["turns"] > 0 for t in spent.values())
    assert sum(t["seconds"] for t in spent.values()) > 5 and sum(t["found"] for t in spent.values()) > 0


def test_blind_keeps_no_corpus_and_collects_no_coverage(tmp_path: Path) -> None:
    records = _fuzz(tmp_path, "reference", 4, "--harness-blind")
    coverage = [r["coverage"] for r in records if "coverage" in r]
    assert coverage and not coverage[-1]["guided"]
    assert coverage[-1]["edges"] == coverage[-1]["corpus"] == 0 and coverage[-1]["inputs"] > 0
    assert not any(r.get("outcome") == "failed" for r in records)


def test_a_test_that_does_not_apply_gets_one_turn(tmp_path: Path) -> None:
    """A test skipped as not applicable (in its fixtures, before it runs) takes a millisecond a
    turn: given more, the turns that explore would keep choosing it, the test with the least time."""
    record = tmp_path / "record.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "harness.suites.packed_functions",
                    "harness.suites.memory_pools", "--driver=deep-bugs", "-k", "packed or each_operation_family[transpose]",
                    "--harness-profile=nightly", "--harness-guided-for=4", f"--harness-db={tmp_path / 'db'}",
                    f"--harness-record={record}", "-q", "-p", "no:cacheprovider"],
                   cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, COVERAGE_ENVIRONMENT: "1"})
    outcomes = [json.loads(line) for line in record.read_text().splitlines()]
    skipped = [r["id"] for r in outcomes if r.get("outcome") == "skipped"]
    assert skipped and len(skipped) == len(set(skipped)), f"{len(skipped)} skips of {len(set(skipped))} tests"
    assert any(r.get("outcome") == "passed" and "transpose" in r["id"] for r in outcomes)


def test_a_state_machine_is_fuzzed_one_run_at_a_time(tmp_path: Path) -> None:
    """The memory-domain state machine builds its hypothesis test inside itself and hands it to the
    loop (``run_built_test``): each input is one run of the machine, and the runs that reached new
    code are kept and mutated as a @given test's are."""
    record = tmp_path / "record.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "harness.suites.memory_domains", "--driver=reference",
                    "-k", "test_memory_domain_state_machine", "--harness-profile=nightly", "--harness-guided-for=5",
                    f"--harness-db={tmp_path / 'db'}", f"--harness-record={record}", "-q", "-p", "no:cacheprovider"],
                   cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, COVERAGE_ENVIRONMENT: "1"})
    records = [json.loads(line) for line in record.read_text().splitlines()]
    assert not any(r.get("outcome") == "failed" for r in records)
    final = [r["coverage"] for r in records if "coverage" in r][-1]
    (machine,) = [t for t in final["tests"] if t["test"].endswith("::test_memory_domain_state_machine")]
    assert final["targets"] == 1 and machine["inputs"] > machine["turns"] and machine["corpus"] > 0, machine
