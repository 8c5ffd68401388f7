"""`harness score` counts a mutant caught only by a failure that judged the driver; the record
keeps that verdict even when hypothesis raised its own error over it."""

from __future__ import annotations

import hypothesis.errors

from harness.api.errors import ConformanceError
from harness.commands.score import _is_verdict
from harness.integration.recording import _verdict_of


def _failed(error: BaseException) -> dict:
    return {"outcome": "failed", "requirements": ["DOM-ALLOC-3"], "error_type": type(error).__name__,
            "error_module": type(error).__module__}


def test_a_conformance_error_or_an_assertion_is_a_verdict() -> None:
    assert _is_verdict(_failed(ConformanceError("[DOM-ALLOC-3] refused", requirement="DOM-ALLOC-3")))
    assert _is_verdict(_failed(AssertionError("[FFI-2] wrong value")))


def test_hypothesis_complaining_about_the_run_is_not_a_verdict() -> None:
    assert not _is_verdict(_failed(hypothesis.errors.FlakyStrategyDefinition("a bundle was unexpectedly empty")))
    assert not _is_verdict(_failed(hypothesis.errors.InvalidArgument("bad strategy")))


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
    assert _is_verdict(_failed(_verdict_of(flaky)))


def test_hypothesis_error_over_a_harness_bug_is_not_made_a_verdict() -> None:
    flaky = _raised_while_propagating(KeyError("buffer1"), hypothesis.errors.FlakyStrategyDefinition("stopped drawing earlier"))
    assert _verdict_of(flaky) is flaky
    assert not _is_verdict(_failed(_verdict_of(flaky)))


def test_a_failure_on_another_of_the_tests_rules_is_not_a_catch(monkeypatch) -> None:
    from harness.commands import score

    def record(test: str, requirements: list[str], rule: str) -> dict:
        return {"id": test, "requirements": requirements, "outcome": "failed", "rule": rule, "elapsed": 1.0,
                "examples": 3, "message": f"[{rule}] ...", "error_module": "harness.api.errors"}

    records = [record("handles", ["POOL-4", "POOL-5"], "POOL-5"),  # the test stopped on POOL-5: not a catch
               record("crash", ["POOL-4", "POOL-5"], "SVC-1"),  # the driver crashed during it: a catch
               record("stage", ["POOL-4"], "POOL-4")]
    monkeypatch.setattr(score, "run_suites", lambda driver, stop_on="", seed=0: records)
    caught = score.score_mutant("mutant-x", "POOL-4")
    assert caught.caught and caught.first_test == "crash" and caught.failures_elsewhere == 1
    monkeypatch.setattr(score, "run_suites", lambda driver, stop_on="", seed=0: records[:1])
    assert not score.score_mutant("mutant-x", "POOL-4").caught


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
