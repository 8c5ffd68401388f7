"""Fuzz findings: failing tests grouped by the root cause they share (harness.report.findings).

The messages are in the forms the harness writes them (an oracle's value difference, a service's
report of an exception in the driver, a status verdict); what varies between two examples of one
bug (values, counts, call arguments) must not split it."""

from __future__ import annotations

from harness.report.findings import entry_point, group_findings, normalised_message, not_applicable_reason

VALUE = "[POOL-1] output {o} differs: element {e}: driver wrote np.{t}({w}), reference np.{t}({r}) ({n} elements outside {b})"
RAISED = ("[SVC-1] PreparedModel.execute(request of {i} inputs, 1 outputs, {p} pools) raised ValueError inside the "
          "driver service: cannot reshape array of size {s} into shape ({s},{k})")


def _failure(test: str, message: str, rule: str, reproducer: str = "") -> dict:
    return {"test": test, "message": message, "rule": rule, "requirements": [rule], "reproducer": reproducer}


def test_one_bug_met_by_several_tests_with_other_values_is_one_finding() -> None:
    failures = [
        _failure("suites/memory_pools/test_constants.py::test_a", VALUE.format(o=1, e=0, t="float32", w="-3.69e+28", r="0.0",
                                                                               n=1, b="14 terms x eps(float32) x sum of |terms|"),
                 "POOL-1", "/out/reproducers/a.py"),
        _failure("suites/memory_pools/test_constants.py::test_b", VALUE.format(o=0, e=7, t="uint8", w="238", r="0", n=3, b="1 step"),
                 "POOL-1", "/out/reproducers/b.py"),
        _failure("suites/requests/test_validation.py::test_c[x]", RAISED.format(i=2, p=1, s=6, k=2), "SVC-1", "/out/reproducers/c.py"),
        _failure("suites/requests/test_validation.py::test_c[y]", RAISED.format(i=3, p=2, s=10, k=5), "SVC-1"),
    ]
    findings = group_findings(failures)
    assert [(f.requirement, f.tests) for f in findings] == [
        ("POOL-1", ("suites/memory_pools/test_constants.py::test_a", "suites/memory_pools/test_constants.py::test_b")),
        ("SVC-1", ("suites/requests/test_validation.py::test_c[x]", "suites/requests/test_validation.py::test_c[y]")),
    ]
    assert findings[0].message == failures[0]["message"] and findings[0].reproducer == "/out/reproducers/a.py"
    assert findings[1].entry_point == "PreparedModel.execute" and findings[0].entry_point == ""


def test_another_requirement_entry_point_or_message_is_another_finding() -> None:
    base = _failure("t1", "[REQ-2] PreparedModel.execute succeeded; SPEC requires INVALID_ARGUMENT", "REQ-2")
    other_rule = _failure("t2", "[POOL-5] PreparedModel.execute succeeded; SPEC requires INVALID_ARGUMENT", "POOL-5")
    other_call = _failure("t3", "[REQ-2] Device.prepare_model succeeded; SPEC requires INVALID_ARGUMENT", "REQ-2")
    other_words = _failure("t4", "[REQ-2] PreparedModel.execute failed with GENERAL_FAILURE; SPEC requires INVALID_ARGUMENT", "REQ-2")
    findings = group_findings([base, other_rule, other_call, other_words])
    assert [f.tests for f in findings] == [("t1",), ("t2",), ("t3",), ("t4",)]
    assert [f.entry_point for f in findings] == ["PreparedModel.execute", "PreparedModel.execute", "Device.prepare_model",
                                                 "PreparedModel.execute"]


def test_a_failure_without_a_rule_takes_its_first_requirement() -> None:
    (finding,) = group_findings([{"id": "t", "message": "assert 1 == 2", "rule": "", "requirements": ["DOM-STATE-1", "DOM-STATE-2"]}])
    assert finding.requirement == "DOM-STATE-1" and finding.tests == ("t",) and finding.reproducer == ""


def test_normalised_message_keeps_the_words_and_names() -> None:
    assert normalised_message("[REQ-2] length 12 for float32 dims (3, 4) at 0x7ffd1234\nsecond line") == \
        "length # for float32 dims (#, #) at <hex>"
    assert normalised_message("[POOL-2] byte 12 changed from 0xa5 to 0xee (1 bytes changed)") == \
        "byte # changed from <hex> to <hex>"
    assert entry_point("copy_to of buffer 3 succeeded") == "copy_to"


def test_a_suite_is_not_applicable_only_when_every_test_says_so() -> None:
    skipped = {"outcome": "skipped", "skip": {"kind": "not-applicable", "reason": "the driver declares no memory-domain support"}}
    assert not_applicable_reason([skipped, skipped]) == "the driver declares no memory-domain support"
    assert not_applicable_reason([skipped, {"outcome": "passed", "skip": None}]) is None
    assert not_applicable_reason([{"outcome": "skipped", "skip": {"kind": "not-run", "reason": "refused"}}]) is None
    assert not_applicable_reason([]) is None


_RAISED = ('[SVC-1] PreparedModel.execute(...) raised IndexError inside the driver service: index 3 is out of bounds\n'
           'Traceback (most recent call last):\n'
           '  File "/srv/acme/driver.py", line 40, in execute\n    return self._run(request)\n'
           '  File "/srv/acme/{file}", line {line}, in {function}\n    out[i] = x\n'
           'IndexError: index 3 is out of bounds')


def test_a_driver_exception_is_grouped_by_the_frame_it_was_raised_in() -> None:
    def failure(test: str, file: str, line: int, function: str) -> dict:
        return {"id": test, "rule": "SVC-1", "message": _RAISED.format(file=file, line=line, function=function)}

    findings = group_findings([failure("a", "tiles.py", 12, "_tail"), failure("b", "tiles.py", 19, "_tail"),
                               failure("c", "pool.py", 12, "_window")])
    assert [(f.frame, f.tests) for f in findings] == [("tiles.py:_tail", ("a", "b")), ("pool.py:_window", ("c",))]


def test_a_crash_dump_is_grouped_by_its_innermost_frame() -> None:
    from harness.report.findings import frame_signature

    dump = ('[SVC-1] the driver service was killed by signal SIGSEGV\nCurrent thread 0x01 (most recent call first):\n'
            '  File "/srv/acme/native.py", line 9 in _call\n  File "/srv/acme/driver.py", line 40 in execute\n')
    assert frame_signature(dump) == "native.py:_call"
    assert frame_signature("[OPS-1] output 0 differs: element 3") == ""
