"""A correct driver with a memory limit (DOM-ALLOC-3 lets it refuse past one with GENERAL_FAILURE)
fails no test: a test or golden example that needs more buffers live at once than it holds is not
run, and says so; it is never judged a leak or a wrong result."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from out_of_tree_drivers import HOLDS_TWO


@pytest.mark.requirement("DOM-ALLOC-3")
def test_a_driver_with_room_for_two_buffers_fails_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(holds_two=HOLDS_TWO)
    records = pytester.path / "records.jsonl"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-profile=ci", "--harness-seed=0",
                                           "--driver=holds_two.py:factory", f"--harness-record={records}",
                                           "--pyargs", "harness.suites.memory_domains.test_allocation", "harness.suites.golden",
                                           "-k", "not test_golden_example or memory_domain", timeout=600)
    tests = {r["id"].split("::")[-1]: r for r in map(json.loads, records.read_text().splitlines()) if "id" in r}
    assert result.ret == pytest.ExitCode.OK, "\n".join(result.outlines)[-3000:]
    assert tests["test_released_buffers_free_what_they_held[one-at-a-time]"]["outcome"] == "passed"
    for needs_more in ("test_released_buffers_free_what_they_held[three-live]", "test_simple_fully_specified_buffer_is_served"):
        record = tests[needs_more]
        assert record["outcome"] == "skipped" and record["skip"]["kind"] == "not-run", record
        assert "holds 2" in record["skip"]["reason"], record
    golden = Counter((r["skip"] or {}).get("kind", r["outcome"]) for name, r in tests.items()
                     if name.startswith("test_golden_example"))
    # examples on three buffers or more are not run; none failed (ret above), none was waved through
    assert golden["passed"] and golden["not-run"] and set(golden) <= {"passed", "not-run", "not-applicable"}, golden
