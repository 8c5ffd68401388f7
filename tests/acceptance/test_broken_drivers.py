"""Drivers that segfault, exit, deadlock or hang are reported as such by the suites,
and the run continues to the end (SPEC SVC-1, SVC-2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CASES = {
    # driver: (what to run, what the report must say)
    "mutant-segfault-zero-dimension": (["harness.suites.requests.test_validation", "-k", "input-without-full-dimensions or remove-input"],
                                       ["DriverCrash", "killed by signal SIGSEGV", "PreparedModel.execute"]),
    "mutant-exit-on-output-padding": (["harness.suites.memory_pools.test_layouts", "harness.suites.memory_domains.test_allocation",
                                       "-k", "generated or ashmem or allocation"],
                                      ["DriverCrash", "exited with code 7", "PreparedModel.execute"]),
    "mutant-deadlock-concurrent-writes": (["harness.suites.memory_domains.test_concurrency"],
                                          ["DriverHang", "did not return within 2 s", "Service thread stacks", "copy_from"]),
    "mutant-hang-zero-sized-memory": (["harness.suites.memory_domains.test_copies", "harness.suites.memory_domains.test_allocation"],
                                      ["DriverHang", "of 0 bytes) did not return within 2 s", "_spin_if_empty"]),
    # a typed-FFI handler that crashes under XLA: XLA runs it in the driver's service, not the harness
    "mutant-cc-segfault-on-empty-message": (["harness.suites.custom_calls.test_under_xla", "-k", "fail_with_status or add_mod128"],
                                            ["DriverCrash", "killed by signal SIGSEGV", "CustomCalls.under_xla"]),
    # a packed function that crashes: called in the harness's process, the test makes its call in a forked child
    "mutant-ffi-segfault-on-empty-message": (["harness.suites.packed_functions.test_errors"],
                                             ["DriverCrash", "killed by signal SIGSEGV", "test_errors.py"]),
    # a library whose static initializer crashes: loaded first in a forked child, then the run goes on
    "mutant-ffi-crash-on-load": (["harness.suites.packed_functions.test_registry", "harness.suites.numerics.test_quantized"],
                                 ["DriverCrash", "killed by signal SIGSEGV", "loading"]),
}
# Failures with no scenario or call sequence for a reproducer script to print.
NO_SCRIPT = {"mutant-deadlock-concurrent-writes",  # a deadlock of concurrent calls
             "mutant-cc-segfault-on-empty-message",  # a custom call: its case is in the record
             "mutant-ffi-segfault-on-empty-message",  # a packed function's arguments are in the record
             "mutant-ffi-crash-on-load"}  # a library's loading


@pytest.mark.requirement("SVC-1", "SVC-2")
@pytest.mark.parametrize("driver", list(CASES))
def test_failure_kind_is_reported_and_the_run_completes(pytester: pytest.Pytester, driver: str) -> None:
    targets, expected = CASES[driver]
    records, reproducers = pytester.path / "records.jsonl", pytester.path / "reproducers"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-profile=ci", "--driver-timeout=2",
                                           f"--driver={driver}", f"--harness-record={records}",
                                           f"--harness-reproducers={reproducers}", "--pyargs", *targets, timeout=900)
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    assert "INTERNALERROR" not in text
    # Judged on what the harness itself wrote, never on another library's wording (pytest's summary
    # line included): the tests' records, and for a scenario the harness can print, its reproducer
    # script.  A fault in a test's set-up (loading a library) is recorded as failed too; the run went
    # on after it, and a later test passed.
    tests = [r for r in map(json.loads, records.read_text().splitlines()) if "id" in r]
    failed = [r for r in tests if r["outcome"] == "failed"]
    assert failed and any(r["outcome"] == "passed" for r in tests), [(r["id"], r["outcome"]) for r in tests]
    written = text + "".join(r["details"] + r.get("driver_output", "") for r in failed)
    for phrase in expected:
        assert phrase in written, f"{phrase!r} missing from the report"
    assert failed and all(r["message"] for r in failed), failed
    assert any(r["error_type"] == expected[0] for r in failed), f"no failure is a {expected[0]}: {failed}"
    if driver not in NO_SCRIPT:
        scripts = [Path(r["reproducer"]).read_text() for r in failed if r["reproducer"]]
        printed = [s for s in scripts if "SCENARIO = Scenario(" in s or "STEPS = [" in s]
        reruns = [s for s in scripts if "\nTEST = " in s]  # a fixed test's failure: the script runs that test again
        assert printed and len(printed) + len(reruns) == len(scripts), failed
