"""Whose fault a failure is (`harness.report.attribution`): `harness score` counts a mutant
caught, and a certificate fails a requirement, only on a verdict on the driver; the record keeps
that verdict even when hypothesis raised its own error over it, and a fault of the harness itself
(an exception no driver code raised) is no verdict: its requirements did not run."""

from __future__ import annotations

import hypothesis.errors
import pytest

from harness.api.errors import ConformanceError, calls_into_driver
from harness.integration.recording import _verdict_of
from harness.report.attribution import failed_requirements, fault_of
from harness.report.certificate import build


def _in_this_file(filename: str) -> bool:
    return filename == __file__


def _fault(error: BaseException) -> str:
    return fault_of(error, _in_this_file)


def _raise(error: BaseException) -> None:
    raise error


def _caught(function, *args) -> BaseException:
    try:
        function(*args)
    except BaseException as error:  # noqa: BLE001 -- the test looks at what was raised
        return error
    raise AssertionError(f"{function} raised nothing")


def _assert_in(filename: str) -> BaseException:
    """An AssertionError raised by an ``assert`` in code from ``filename``."""
    namespace: dict = {}
    exec(compile("def invariant():\n    assert 1 == 2, 'the harness broke its own invariant'\n", filename, "exec"),
         namespace)
    return _caught(namespace["invariant"])


def test_what_judged_the_driver_is_a_verdict_on_it() -> None:
    assert _fault(ConformanceError("[DOM-ALLOC-3] refused", requirement="DOM-ALLOC-3")) == "driver"
    assert _fault(_assert_in(__file__)) == "driver"  # an assert in a test's own code is a check
    assert _fault(_caught(_did_not_raise)) == "driver"  # a pytest.raises the driver did not satisfy


def _did_not_raise() -> None:
    with pytest.raises(ValueError):
        pass


def test_what_the_drivers_own_code_raised_is_a_verdict_on_it() -> None:
    assert _fault(_caught(calls_into_driver(_raise), KeyError("slot"))) == "driver"


def test_what_the_harness_raised_on_its_own_is_its_fault() -> None:
    assert _fault(_caught(_raise, KeyError("slot"))) == "harness"
    assert _fault(_assert_in("harness_internals.py")) == "harness"  # an invariant of the harness's code
    group = ExceptionGroup("two", [_caught(_raise, KeyError("slot")), _caught(calls_into_driver(_raise), OSError(5))])
    assert _fault(group) == "driver"  # the driver's failure among them is a verdict
    assert _fault(ExceptionGroup("one", [_caught(_raise, KeyError("slot"))])) == "harness"


def test_hypothesis_complaining_about_the_run_is_not_a_verdict() -> None:
    assert _fault(hypothesis.errors.FlakyStrategyDefinition("a bundle was unexpectedly empty")) == "run"
    assert _fault(hypothesis.errors.InvalidArgument("bad strategy")) == "run"


def _record(fault: str, rule: str = "POOL-4") -> dict:
    return {"id": f"suites/memory_pools/test_x.py::{fault}", "requirements": ["POOL-4", "POOL-5"], "outcome": "failed",
            "fault": fault, "rule": rule, "message": "KeyError: 'slot'", "error_type": "KeyError", "waiver": "",
            "skip": None, "reproducer": ""}


def test_no_verdict_fails_no_requirement_and_the_certificate_is_incomplete() -> None:
    assert failed_requirements(_record("driver")) == ("POOL-4",)
    assert failed_requirements(_record("harness")) == failed_requirements(_record("run")) == ()
    passed = {**_record("driver"), "id": "suites/memory_pools/test_y.py::t", "outcome": "passed", "fault": ""}
    for fault in ("harness", "run"):
        certificate = build([_record(fault), passed], {}, "start", "end", complete=True, requirements=["POOL-4", "POOL-5"])
        assert certificate["verdict"] == "INCOMPLETE", certificate
        entry = certificate["requirements"]["POOL-4"]
        assert entry["status"] == "not-run" and entry["fixes"], entry
    certificate = build([_record("driver"), passed], {}, "start", "end", complete=True, requirements=["POOL-4", "POOL-5"])
    assert certificate["verdict"] == "FAIL" and certificate["requirements"]["POOL-4"]["status"] == "fail"


def _raised_while_propagating(verdict: BaseException, error: BaseException) -> BaseException:
    try:
        try:
            raise verdict
        except type(verdict):
            raise error  # noqa: B904 -- as hypothesis does: the verdict becomes the context
    except type(error) as raised:
        return raised


def test_a_verdict_that_hypothesis_interrupted_still_stands() -> None:
    # A leaking driver fails choices that passed earlier in the run; hypothesis' data tree then
    # disagrees, and its error is raised while the driver's verdict propagates.
    verdict = ConformanceError("[DOM-ALLOC-1] wrong status", requirement="DOM-ALLOC-1")
    flaky = _raised_while_propagating(verdict, hypothesis.errors.FlakyStrategyDefinition("stopped drawing earlier"))
    assert _verdict_of(flaky) is verdict
    assert _fault(_verdict_of(flaky)) == "driver"


def test_hypothesis_error_over_a_harness_bug_is_not_made_a_verdict() -> None:
    flaky = _raised_while_propagating(KeyError("buffer1"), hypothesis.errors.FlakyStrategyDefinition("stopped drawing earlier"))
    assert _verdict_of(flaky) is flaky
    assert _fault(_verdict_of(flaky)) == "run"


def test_a_failure_on_another_of_the_tests_rules_is_not_a_catch(monkeypatch) -> None:
    from harness.commands import score

    def record(test: str, requirements: list[str], rule: str) -> dict:
        return {"id": test, "requirements": requirements, "outcome": "failed", "rule": rule, "elapsed": 1.0,
                "examples": 3, "message": f"[{rule}] ...", "error_module": "harness.api.errors"}

    records = [record("handles", ["POOL-4", "POOL-5"], "POOL-5"),  # the test stopped on POOL-5: not a catch
               record("crash", ["POOL-4", "POOL-5"], "SVC-1"),  # the driver crashed during it: a catch
               record("stage", ["POOL-4"], "POOL-4")]
    monkeypatch.setattr(score, "run_suites", lambda driver, **_: records)
    caught = score.score_mutant("mutant-x", "POOL-4")
    assert caught.caught and caught.first_test == "crash" and caught.failures_elsewhere == 1
    assert caught.reproducer == "no script"  # the run wrote none for it
    monkeypatch.setattr(score, "run_suites", lambda driver, **_: records[:1])
    assert not score.score_mutant("mutant-x", "POOL-4").caught
    assert score.score_mutant("mutant-x", "POOL-4", seed=2).seed == 2  # the JSON says which seed caught (or missed) it
    asked: dict = {}  # a seeded bug run in the profile harness certify runs (--mutant-profile certify)
    monkeypatch.setattr(score, "run_suites", lambda driver, **options: asked.update(options) or records)
    in_certify = score.score_mutant("mutant-x", "POOL-4", profile="certify")
    assert asked["profile"] == "certify" and in_certify.profile == "certify" and in_certify.caught


def test_a_variant_passes_only_if_it_passes_every_profile_and_seed() -> None:
    from harness.commands.score import Score, format_variants, specificity

    runs = [Score("variant-a", "CHOICE-1", caught=False, profile=profile, seed=seed)
            for profile in ("ci", "certify") for seed in (1, 2)]
    runs += [Score("variant-b", "CHOICE-6", caught=False, profile="ci", seed=1),
             Score("variant-b", "CHOICE-6", caught=True, profile="certify", seed=2, first_test="suites/x.py::t",
                   message="[DOM-ALLOC-3] refused")]
    rows = [line.split() for line in format_variants(runs).splitlines()[2:]]
    assert rows[0] == ["a", "CHOICE-1", "yes", "4/4", "-"]
    assert rows[1][:5] == ["b", "CHOICE-6", "no", "1/2", "certify,"] and rows[1][-1] == "refused"
    assert specificity(runs) == "specificity: 1/2 correct variants pass in every run (2 profiles x 2 seeds)"


@pytest.mark.parametrize(("body", "outcome"), [
    ("raise SystemExit(1)", "fails"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "fails"),  # a native bug's segfault shows it too
    ("pass", "passes"),
    ("raise SystemExit(3)", "does not replay"),
    ("raise SystemExit(5)", "did not run"),
    ("raise SystemExit(4)", "exit 4"),
    ("import time; time.sleep(30)", "hung"),
])
def test_a_catch_s_reproducer_is_run_against_its_bug(tmp_path, monkeypatch, body: str, outcome: str) -> None:
    from harness.commands import score

    monkeypatch.setattr(score, "SCRIPT_TIMEOUT_S", 2)
    script = tmp_path / "reproducer.py"
    script.write_text(body + "\n")
    assert score.reproducer_outcome(str(script), str(tmp_path)) == outcome


def test_the_summary_counts_the_reproducers_that_fail_on_their_bug() -> None:
    from harness.commands.score import Score, summary

    scores = [Score("mutant-a", "POOL-1", caught=True, seconds_to_catch=1.0, reproducer="fails"),
              Score("mutant-b", "POOL-2", caught=True, seconds_to_catch=3.0, reproducer="hung"),
              Score("mutant-c", "POOL-3", caught=True, seconds_to_catch=2.0, reproducer="no script"),
              Score("mutant-d", "POOL-4", caught=False)]
    assert summary(scores) == ("sensitivity: caught 3/4 seeded bugs; median time to catch 2.0 s; "
                               "reproducers: 1/3 fail on their bug (1 hung, 1 no script); "
                               "attribution: 3/4 fail their own requirement and no other (75%)")


def test_attribution_counts_the_bugs_whose_run_fails_their_requirement_alone() -> None:
    from harness.commands.score import Score, attribution

    scores = [Score("mutant-a", "POOL-1", caught=True),
              Score("mutant-b", "POOL-2", caught=True, unrelated=("OPS-1",)),  # caught, but blamed on more
              Score("mutant-c", "POOL-3", caught=False)]
    assert [s.attributed for s in scores] == [True, False, False]
    assert attribution(scores) == "attribution: 1/3 fail their own requirement and no other (33%)"


def _variant_record(test: str, outcome: str, skip: dict | None = None, requirement: str = "DOM-ALLOC-3") -> dict:
    return {"id": f"suites/memory_domains/test_x.py::{test}", "requirements": [requirement], "outcome": outcome,
            "skip": skip, "message": "", "elapsed": 1.5, "examples": 12}


def test_a_correct_variant_with_a_test_not_run_is_a_false_alarm(monkeypatch) -> None:
    """Its certificate would say INCOMPLETE, not PASS; a skip its declarations explain is no alarm."""
    from harness.commands import score

    excluded = _variant_record("test_optional", "skipped", {"kind": "not-applicable", "capability": "memory_domains",
                                                             "reason": "declares none"})
    refused = _variant_record("test_refused", "skipped", {"kind": "not-run", "reason": "the driver refused a valid allocation",
                                                           "fix": "serve it"})
    runs = {"variant-excludes": [_variant_record("test_a", "passed"), excluded],
            "variant-refuses": [_variant_record("test_a", "passed"), excluded, refused]}
    monkeypatch.setattr(score, "run_suites", lambda driver, **_: runs[driver])
    assert not score.score_variant("variant-excludes", "CHOICE-5").caught
    alarm = score.score_variant("variant-refuses", "CHOICE-6")
    assert alarm.caught and alarm.first_test == refused["id"]
    assert alarm.message == "not run: the driver refused a valid allocation"


def test_a_variant_whose_declarations_rule_out_a_binding_requirement_is_a_false_alarm(monkeypatch) -> None:
    """A correct variant's run in which no test failed or was not run can still leave its
    certificate INCOMPLETE: a binding requirement (SPEC §2, §4) whose every test its declarations
    ruled out.  The score counts that as the harness's false alarm, as the certificate would."""
    from harness.commands import score

    no_ops = {"kind": "not-applicable", "capability": "operations", "reason": "the driver declares no operation"}
    no_domains = {"kind": "not-applicable", "capability": "memory_domains", "reason": "no memory domains"}
    runs = {
        "ruled-out": [_variant_record("a", "passed", requirement="POOL-1"),
                      _variant_record("b", "skipped", no_ops, requirement="REQ-1"),
                      _variant_record("c", "skipped", no_domains, requirement="DOM-ROLE-1")],
        "optional-only": [_variant_record("a", "passed", requirement="POOL-1"),
                          _variant_record("b", "passed", requirement="REQ-1"),
                          _variant_record("c", "skipped", no_domains, requirement="DOM-ROLE-1")],
    }
    monkeypatch.setattr(score, "run_suites", lambda driver, **_: runs[driver])
    alarm = score.score_variant("ruled-out", "CHOICE-5")
    assert alarm.caught and "REQ-1" in alarm.message and alarm.message.startswith("not run:")
    assert alarm.first_test == "suites/memory_domains/test_x.py::b"
    assert not score.score_variant("optional-only", "CHOICE-5").caught
