"""Drivers that segfault, exit, deadlock or hang are reported as such by the suites,
and the run continues to the end (SPEC SVC-1, SVC-2)."""

from __future__ import annotations

import pytest

CASES = {
    # driver: (what to run, what the report must say)
    "mutant-segfault-zero-dimension": (["suites.requests.test_validation", "-k", "input-without-full-dimensions or remove-input"],
                                       ["DriverCrash", "killed by signal SIGSEGV", "PreparedModel.execute"]),
    "mutant-exit-on-output-padding": (["suites.memory_pools.test_layouts", "suites.memory_domains.test_allocation",
                                       "-k", "generated or ashmem or allocation"],
                                      ["DriverCrash", "exited with code 7", "PreparedModel.execute"]),
    "mutant-deadlock-concurrent-writes": (["suites.memory_domains.test_concurrency"],
                                          ["DriverHang", "did not return within 2 s", "Service thread stacks", "copy_from"]),
    "mutant-hang-zero-sized-memory": (["suites.memory_domains.test_copies", "suites.memory_domains.test_allocation"],
                                      ["DriverHang", "of 0 bytes) did not return within 2 s", "_spin_if_empty"]),
}


@pytest.mark.requirement("SVC-1", "SVC-2")
@pytest.mark.parametrize("driver", list(CASES))
def test_failure_kind_is_reported_and_the_run_completes(pytester: pytest.Pytester, driver: str) -> None:
    targets, expected = CASES[driver]
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-profile=ci", "--driver-timeout=2",
                                           f"--driver={driver}", "--pyargs", *targets, timeout=900)
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text[-3000:]
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1 and outcomes.get("passed", 0) >= 1  # the run went on after the fault
    for phrase in expected:
        assert phrase in text, f"{phrase!r} missing from the report"
    # Hypothesis shrank the faulting example and shows it; a deadlock depends on thread timing,
    # so hypothesis may instead report that the example failed only on some of its runs.
    racy = driver == "mutant-deadlock-concurrent-writes"
    assert "Falsifying example" in text or (racy and "FlakyFailure" in text), text[-3000:]
    assert "INTERNALERROR" not in text
