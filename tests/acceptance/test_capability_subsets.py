"""A driver that declares a small subset (CHOICE-5) passes: a test needing what its declarations
cannot build (a fused activation on TENSOR_INT32, a constant tensor in a one-input model) is not
applicable and says why, rather than failing on hypothesis finding no example to run."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from out_of_tree_drivers import ACTIVATIONS_ONLY, INTEGER_ARITHMETIC


def _outcomes(pytester: pytest.Pytester, name: str, source: str) -> Counter:
    """Run the memory-pool suite on the driver written from ``source``; what its tests came to."""
    pytester.makepyfile(**{name: source})
    records = pytester.path / "records.jsonl"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-profile=ci", "--harness-seed=0",
                                           f"--driver={name}.py:factory", f"--harness-record={records}",
                                           "--pyargs", "harness.suites.memory_pools", timeout=600)
    assert result.ret == pytest.ExitCode.OK, "\n".join(result.outlines)[-3000:]
    return Counter((r["skip"] or {}).get("kind", r["outcome"])
                   for r in map(json.loads, records.read_text().splitlines()) if "id" in r)


@pytest.mark.requirement("POOL-2")
def test_integer_arithmetic_alone_passes(pytester: pytest.Pytester) -> None:
    outcomes = _outcomes(pytester, "integer_arithmetic", INTEGER_ARITHMETIC)
    assert outcomes["passed"] and set(outcomes) <= {"passed", "not-applicable"}, outcomes


@pytest.mark.requirement("POOL-1", "POOL-2")
def test_activations_alone_pass(pytester: pytest.Pytester) -> None:
    outcomes = _outcomes(pytester, "activations_only", ACTIVATIONS_ONLY)
    assert outcomes["passed"] and set(outcomes) <= {"passed", "not-applicable"}, outcomes
