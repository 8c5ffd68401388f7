"""Verdict semantics: one status per requirement, and PASS only when everything applicable ran."""

from __future__ import annotations

import os
import stat

import pytest

from harness.report import certificate, html
from harness.report.files import write_atomically
from harness.api.requirements import BINDING_REQUIREMENTS, EXCUSED_BY, REQUIREMENTS


def record(test: str, requirement: str, outcome: str, skip: dict | None = None, waiver: str = "") -> dict:
    return {"id": test, "requirements": [requirement], "outcome": outcome, "skip": skip, "waiver": waiver}


NOT_APPLICABLE = {"kind": "not-applicable", "capability": "memory_domains", "reason": "no memory domains"}
NOT_RUN = {"kind": "not-run", "reason": "jax is not installed", "fix": "pip install 'driver-harness[xla]'"}
WAIVED_SKIP = {"kind": "waived", "reason": "lands in 2.1", "source": "expect.toml:1"}


def every_requirement_passing() -> list[dict]:
    return [record(f"t::{r}", r, "passed") for r in REQUIREMENTS]


@pytest.mark.parametrize("outcomes, status", [
    ([("passed", None)], "pass"),
    ([("passed", None), ("skipped", NOT_APPLICABLE)], "pass"),
    ([("skipped", NOT_APPLICABLE), ("skipped", NOT_APPLICABLE)], "not-applicable"),
    ([("passed", None), ("skipped", NOT_RUN)], "not-run"),
    ([("skipped", NOT_APPLICABLE), ("skipped", None)], "not-run"),  # a skip the harness did not explain
    ([("passed", None), ("xfailed", None)], "waived"),
    ([("passed", None), ("skipped", WAIVED_SKIP)], "waived"),
    ([("xfailed", None), ("skipped", NOT_RUN)], "not-run"),
    ([("failed", None), ("skipped", NOT_RUN), ("xfailed", None)], "fail"),
])
def test_one_status_per_requirement(outcomes, status) -> None:
    tests = [record(f"t{i}", "POOL-1", outcome, skip) for i, (outcome, skip) in enumerate(outcomes)]
    assert certificate.requirement_status(tests)["status"] == status


def test_a_requirement_no_test_ran_is_not_run_with_the_fix() -> None:
    entry = certificate.requirement_status([])
    assert entry["status"] == "not-run" and entry["fixes"]


def test_reasons_capabilities_and_fixes_are_kept() -> None:
    applicable = certificate.requirement_status([record("a", "DOM-ROLE-1", "skipped", NOT_APPLICABLE)])
    assert applicable["capabilities"] == ["memory_domains"] and applicable["reasons"] == ["no memory domains"]
    missing = certificate.requirement_status([record("a", "CC-2", "passed"), record("b", "CC-2", "skipped", NOT_RUN)])
    assert missing["reasons"] == ["jax is not installed"] and missing["fixes"] == ["pip install 'driver-harness[xla]'"]
    waived = certificate.requirement_status([record("a", "CC-2", "xfailed", waiver="fixed in 2.1 [expect.toml:3]")])
    assert waived["reasons"] == ["fixed in 2.1 [expect.toml:3]"]


NO_OPERATIONS = {"kind": "not-applicable", "capability": "operations", "reason": "the driver declares no operation"}


@pytest.mark.parametrize("requirement", sorted(BINDING_REQUIREMENTS))
def test_a_binding_requirement_the_declarations_ruled_out_is_not_run(requirement) -> None:
    """SPEC §2, §4 and §7 bind every driver: one whose declarations left none of their tests able
    to run is not certified on them.  An optional section is not applicable instead."""
    entry = certificate.requirement_status([record("a", requirement, "skipped", NO_OPERATIONS)], requirement)
    assert entry["status"] == "not-run" and entry["fixes"] == [certificate.DECLARE_FIX]
    assert entry["capabilities"] == ["operations"] and NO_OPERATIONS["reason"] in entry["reasons"]
    records = [r for r in every_requirement_passing() if r["requirements"] != [requirement]]
    document = certificate.build([*records, record(f"t::{requirement}", requirement, "skipped", NO_OPERATIONS)],
                                 {"driver": "d"}, "start", "end", True, 61.0)
    assert document["verdict"] == "INCOMPLETE" and document["not_run"] == [requirement]
    assert document["fixes"] == [certificate.DECLARE_FIX]


@pytest.mark.parametrize("requirement", sorted(set(REQUIREMENTS) - BINDING_REQUIREMENTS))
def test_a_requirement_left_out_by_a_capability_that_excuses_it_is_not_applicable(requirement) -> None:
    capability = sorted(EXCUSED_BY[requirement])[0]
    excused = {"kind": "not-applicable", "capability": capability, "reason": f"declares no {capability}"}
    records = [r for r in every_requirement_passing() if r["requirements"] != [requirement]]
    document = certificate.build([*records, record(f"t::{requirement}", requirement, "skipped", excused)],
                                 {"driver": "d"}, "start", "end", True, 61.0)
    assert document["verdict"] == "PASS" and document["not_applicable"] == [requirement]


@pytest.mark.parametrize("requirement", sorted(r for r, excuses in EXCUSED_BY.items() if excuses and "operations" not in excuses))
def test_a_requirement_left_out_by_a_capability_that_does_not_excuse_it_is_not_run(requirement) -> None:
    """A driver that declares memory domains, but no operation the memory-domain models can be
    built from, has had nothing of SPEC §3 checked: INCOMPLETE, not PASS over it."""
    entry = certificate.requirement_status([record("a", requirement, "skipped", NO_OPERATIONS)], requirement)
    assert entry["status"] == "not-run" and entry["fixes"] == [certificate.DECLARE_FIX]
    assert any(f"only {', '.join(sorted(EXCUSED_BY[requirement]))} may leave it out" in r for r in entry["reasons"])


def test_a_binding_requirement_with_one_test_run_passes() -> None:
    tests = [record("a", "POOL-3", "skipped", NO_OPERATIONS), record("b", "POOL-3", "passed")]
    assert certificate.requirement_status(tests, "POOL-3")["status"] == "pass"


@pytest.mark.parametrize("statuses, complete, verdict", [
    (["pass", "pass"], True, "PASS"),
    (["pass", "not-applicable"], True, "PASS"),
    (["pass", "waived"], True, "PASS-WITH-WAIVERS"),
    (["pass", "not-run"], True, "INCOMPLETE"),
    (["pass", "waived", "not-run"], True, "INCOMPLETE"),
    (["pass"], False, "INCOMPLETE"),
    (["pass", "not-run", "fail"], True, "FAIL"),
    (["fail"], False, "FAIL"),
    # PASS only over checks that ran: nothing passed, nothing failed, nothing left to run
    (["not-applicable", "not-applicable"], True, "INCOMPLETE"),
    (["not-applicable", "waived"], True, "INCOMPLETE"),
    ([], True, "INCOMPLETE"),
])
def test_verdict(statuses, complete, verdict) -> None:
    assert certificate.verdict_of(statuses, complete) == verdict


def test_certificate_and_report_state_every_reason() -> None:
    records = every_requirement_passing()
    records[0] = record("t::POOL-1", "POOL-1", "skipped", NOT_RUN)
    records[5] = record("t::DOM-ALLOC-1", "DOM-ALLOC-1", "skipped", NOT_APPLICABLE)
    document = certificate.build(records, {"driver": "d"}, "start", "end", True, 61.0)
    assert document["verdict"] == "INCOMPLETE" and document["not_run"] == ["POOL-1"]
    assert document["not_applicable"] == ["DOM-ALLOC-1"] and document["fixes"] == [NOT_RUN["fix"]]
    assert sum(document["counts"].values()) == len(REQUIREMENTS) and document["counts"]["pass"] == len(REQUIREMENTS) - 2
    page = html.render(document)
    assert NOT_RUN["reason"] in page and NOT_RUN["fix"].replace("'", "&#x27;") in page and "no memory domains" in page
    assert "1 min 1 s" in page and "<svg" in page.split("<table>")[0]
    assert "{" not in page.split("platform</th><td>")[1].split("</td>")[0]  # platform as text, not a dict


@pytest.mark.parametrize("rule, failed", [
    ("POOL-4", ["POOL-4"]),  # a verdict on one of the test's rules fails that rule alone
    ("SVC-1", ["POOL-4", "POOL-5"]),  # a crash during the test: nothing says which rule
    ("", ["POOL-4", "POOL-5"]),  # an unexpected exception
    ("REQ-2", ["REQ-2"]),  # a verdict on a rule the test does not name: the rule broken, whatever the theme
])
def test_a_failure_fails_the_rule_it_carries_and_leaves_the_others_not_run(rule, failed) -> None:
    records = every_requirement_passing()
    records.append({**record("t::handles", "POOL-4", "failed"), "requirements": ["POOL-4", "POOL-5"], "rule": rule})
    document = certificate.build(records, {"driver": "d"}, "start", "end", True, 61.0)
    assert document["verdict"] == "FAIL"
    assert sorted(r for r, entry in document["requirements"].items() if entry["status"] == "fail") == failed
    for other in {"POOL-4", "POOL-5"} - set(failed):
        entry = document["requirements"][other]
        assert entry["status"] == "not-run" and entry["reasons"] == [f"t::handles stopped at its failure of {rule}"]
        assert entry["fixes"] == [f"fix the driver's failure of {rule}: the tests that stopped there check the rest once it passes"]
        assert [t["outcome"] for t in entry["tests"] if t["test"] == "t::handles"] == ["stopped"]


def test_a_rule_a_failed_test_checked_before_its_failure_counts_as_checked() -> None:
    """A test of the allocation and roles rules whose execution crashed had served its buffers
    first: it passes the allocation rule (held before the failure), and fails the roles rule."""
    records = every_requirement_passing()
    records.append({**record("t::first_buffers", "DOM-ALLOC-3", "failed"), "requirements": ["DOM-ALLOC-3", "DOM-ROLE-1"],
                    "rule": "SVC-1", "checking": "DOM-ROLE-1", "held": ["DOM-ALLOC-3"], "message": "[SVC-1] crashed"})
    document = certificate.build(records, {"driver": "d"}, "start", "end", True, 61.0)
    allocation, roles = document["requirements"]["DOM-ALLOC-3"], document["requirements"]["DOM-ROLE-1"]
    assert (allocation["status"], roles["status"]) == ("pass", "fail")
    line = next(t for t in allocation["tests"] if t["test"] == "t::first_buffers")
    assert line["outcome"] == "held" and line["message"].startswith("checked, and met, before the test stopped at its "
                                                                    "failure of DOM-ROLE-1")
    # without it, the same failure leaves the allocation rule not run
    records[-1]["held"] = []
    document = certificate.build(records, {"driver": "d"}, "start", "end", True, 61.0)
    assert document["requirements"]["DOM-ALLOC-3"]["status"] == "not-run"


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_reports_get_the_users_umask(tmp_path, umask, mode) -> None:
    previous = os.umask(umask)
    try:
        write_atomically(tmp_path / "report.html", "text")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "report.html").stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_both_reports_say_a_failure_is_no_verdict_in_the_same_words() -> None:
    from harness.report.attribution import no_verdict_note
    from harness.report.fuzz_report import _no_verdict

    records = every_requirement_passing()
    records[0] = {**record("t::POOL-1", "POOL-1", "failed"), "fault": "harness", "message": "KeyError: slot"}
    page = html.render(certificate.build(records, {"driver": "d"}, "start", "end", True, 1.0))
    note = no_verdict_note("harness")
    assert note and note in page and note in _no_verdict({"fault": "harness"})
    assert no_verdict_note("driver") == "" and _no_verdict({"fault": "driver"}) == ""


def test_the_fuzz_report_marks_a_failure_recorded_before_it_was_shrunk() -> None:
    from harness.report.fuzz_report import _UNSHRUNK, render_fuzz_report

    failure = {"test": "suites/memory_pools/test_x.py::test_y", "suite": "memory_pools", "requirements": ["POOL-2"],
               "fault": "driver", "message": "ConformanceError: wrote past the output", "reproducer": "", "found_at_s": 1.0}
    summary = {"driver": "d", "database": "db", "rounds": 1, "workers": 1, "suites": ["memory_pools"], "seconds": 2.0,
               "examples_per_suite": {"memory_pools": 10}, "timeline": []}
    shrunk = render_fuzz_report({**summary, "failures": [failure]}, "/tmp")
    unshrunk = render_fuzz_report({**summary, "failures": [{**failure, "unshrunk": True}]}, "/tmp")
    assert _UNSHRUNK not in shrunk and _UNSHRUNK in unshrunk


@pytest.mark.parametrize("note, marking, not_marking", [
    # its call sequence passed on a fresh driver, and its test run again too
    ("NEEDS_EARLIER_CALLS", {"replays": False}, ({"replays": True}, {"replays": None})),
    # written before its check, which never came (the deadline, or the time for checks spent): its
    # pass is no sign of a fix, and the reader is told before running it
    ("UNCHECKED_NOTE", {"checked": False}, ({"replays": True}, {})),
])
def test_both_reports_mark_how_a_reproducer_was_checked(tmp_path, note: str, marking: dict, not_marking: tuple) -> None:
    from harness.report import reproducer
    from harness.report.fuzz_report import render_fuzz_report

    script = tmp_path / "repro.py"
    script.write_text("STEPS = []\n")
    failure = {"test": "suites/memory_domains/test_x.py::test_y", "suite": "memory_domains", "requirements": ["DOM-ALLOC-1"],
               "fault": "driver", "message": "ConformanceError: wrong status", "reproducer": str(script), "found_at_s": 1.0}
    summary = {"driver": "d", "database": "db", "rounds": 1, "workers": 1, "suites": ["memory_domains"], "seconds": 2.0,
               "examples_per_suite": {"memory_domains": 10}, "timeline": []}
    record = {"id": failure["test"], "requirements": ["DOM-ALLOC-1"], "outcome": "failed", "rule": "DOM-ALLOC-1",
              "fault": "driver", "message": "wrong status", "reproducer": str(script)}
    marked = html._e(getattr(reproducer, note))
    for fields, shown in ((marking, True), *((other, False) for other in not_marking)):
        page = render_fuzz_report({**summary, "failures": [{**failure, **fields}]}, str(tmp_path))
        document = certificate.build([{**record, **fields}], {"driver": "d"}, "start", "end", True, 1.0)
        assert (marked in page) is shown and (marked in html.render(document)) is shown, fields


def test_the_fuzz_report_says_why_a_failure_is_unshrunk(tmp_path) -> None:
    from harness.report.fuzz_report import render_fuzz_report

    failure = {"test": "suites/memory_domains/test_x.py::test_y", "suite": "memory_domains", "requirements": ["DOM-ALLOC-1"],
               "fault": "driver", "message": "ConformanceError: wrong status", "reproducer": "", "found_at_s": 1.0}
    summary = {"driver": "d", "database": "db", "rounds": 1, "workers": 1, "suites": ["memory_domains"], "seconds": 2.0,
               "examples_per_suite": {"memory_domains": 10}, "timeline": []}
    stopped = render_fuzz_report({**summary, "failures": [{**failure, "unshrunk": True}]}, str(tmp_path))
    hidden = render_fuzz_report({**summary, "failures": [{**failure, "unshrunk": True, "hidden_by": "SomeHypothesisError"}]},
                                str(tmp_path))
    shrunk = render_fuzz_report({**summary, "failures": [failure]}, str(tmp_path))
    assert "the run ended before it was shrunk" in stopped and "SomeHypothesisError" not in stopped
    assert "SomeHypothesisError" in hidden and "the run ended before it was shrunk" not in hidden
    assert "as first found" not in shrunk


def test_a_requirement_whose_tests_ran_only_in_part_is_not_run() -> None:
    """A test left out by -k, -m or --deselect is recorded (once per xdist worker that collected
    it): its requirement's other tests passing make no PASS."""
    records = every_requirement_passing() + [{"deselected": [{"id": "t::also-OPS-1", "requirements": ["OPS-1"]}]}] * 2
    document = certificate.build(records, {"driver": "d"}, "start", "end", complete=True)
    assert document["verdict"] == "INCOMPLETE" and document["not_run"] == ["OPS-1"]
    assert document["requirements"]["OPS-1"]["fixes"] == [certificate.ALL_SUITES_FIX]
    assert [t["test"] for t in document["requirements"]["OPS-1"]["tests"]] == ["t::OPS-1", "t::also-OPS-1"]


def test_a_run_with_files_left_out_is_incomplete_though_every_requirement_passed() -> None:
    """--ignore keeps whole files out of collection, with no record of their tests: whatever ran
    passing is no PASS."""
    document = certificate.build(every_requirement_passing(), {"driver": "d", "files_left_out": ["suites/golden"]},
                                 "start", "end", complete=True)
    assert document["verdict"] == "INCOMPLETE" and document["not_run"] == []
    assert document["files_left_out"] == ["suites/golden"] and certificate.ALL_SUITES_FIX in document["fixes"]
    assert "Files left out of the run, their tests unrecorded: suites/golden" in html.render(document)
    assert certificate.build(every_requirement_passing(), {"driver": "d", "files_left_out": []}, "start", "end",
                             complete=True)["verdict"] == "PASS"


def test_a_certificate_whose_every_test_was_not_applicable_says_nothing_was_checked() -> None:
    refused = {"kind": "not-applicable", "capability": "operations", "reason": "reports it unsupported"}
    records = [record(f"t::{r}", r, "skipped", refused) for r in ("OPS-1", "OPS-2", "OPS-3")]
    document = certificate.build(records, {"driver": "d"}, "start", "end", True, 1.0, ["OPS-1", "OPS-2", "OPS-3"])
    assert document["counts"]["not-applicable"] == 3 and document["verdict"] == "INCOMPLETE"
    assert document["nothing_checked"] and document["fixes"] == [certificate.NOTHING_CHECKED_FIX]
    assert "give the run something to check" in html.render(document)
    records[0] = record("t::OPS-1", "OPS-1", "passed")
    document = certificate.build(records, {"driver": "d"}, "start", "end", True, 1.0, ["OPS-1", "OPS-2", "OPS-3"])
    assert document["verdict"] == "PASS" and not document["nothing_checked"] and not document["fixes"]
