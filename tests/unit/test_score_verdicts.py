"""`harness score` counts a mutant caught only by a failure that judged the driver."""

from __future__ import annotations

import hypothesis.errors

from harness.api.errors import ConformanceError
from harness.commands.score import _is_verdict


def _failed(error: BaseException) -> dict:
    return {"outcome": "failed", "requirements": ["DOM-ALLOC-3"], "error_type": type(error).__name__,
            "error_module": type(error).__module__}


def test_a_conformance_error_or_an_assertion_is_a_verdict() -> None:
    assert _is_verdict(_failed(ConformanceError("[DOM-ALLOC-3] refused", requirement="DOM-ALLOC-3")))
    assert _is_verdict(_failed(AssertionError("[FFI-2] wrong value")))


def test_hypothesis_complaining_about_the_run_is_not_a_verdict() -> None:
    assert not _is_verdict(_failed(hypothesis.errors.FlakyStrategyDefinition("a bundle was unexpectedly empty")))
    assert not _is_verdict(_failed(hypothesis.errors.InvalidArgument("bad strategy")))
