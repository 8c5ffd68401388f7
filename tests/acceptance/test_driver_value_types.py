"""A driver's answers are judged by their values: output shapes and dimensions given as lists,
where the reference gives tuples, are the same answer (SPEC's dimensions are a sequence), a
token that is a numpy integer is a positive integer, and a numpy array of bools is one bool per
operation (sent across the service boundary as Python bools)."""

from __future__ import annotations

import json
import pytest
from out_of_tree_drivers import NUMPY_ANSWERS, NUMPY_TOKENS, SHAPES_AS_LISTS


def _passes(pytester: pytest.Pytester, name: str, source: str, *selection: str, at_least: int) -> None:
    """The driver written from ``source`` as ``name``.py passes the ``selection`` of the suites
    (modules, then a -k expression) in ``ci``: no failure, and at least ``at_least`` tests passed."""
    pytester.makepyfile(**{name: source})
    records = pytester.path / "records.jsonl"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-profile=ci", "--harness-seed=0",
                                           f"--driver={name}.py:factory", f"--harness-record={records}", "--pyargs",
                                           *selection, timeout=600)
    assert result.ret == pytest.ExitCode.OK, "\n".join(result.outlines)[-3000:]
    # counted from the harness's own records, not from pytest's summary line
    passed = [r for r in map(json.loads, records.read_text().splitlines()) if r.get("outcome") == "passed"]
    assert len(passed) >= at_least, "\n".join(result.outlines)[-3000:]


@pytest.mark.requirement("DOM-DYN-2", "POOL-2")
def test_output_shapes_as_lists_pass(pytester: pytest.Pytester) -> None:
    # too-small outputs (OUTPUT_INSUFFICIENT_SIZE with the needed dimensions) are among them
    _passes(pytester, "shapes_as_lists", SHAPES_AS_LISTS, "harness.suites.memory_domains.test_dynamic",
            "harness.suites.memory_pools.test_layouts", "-k", "too_small or generated_scenarios or operation_family",
            at_least=8)


@pytest.mark.requirement("DOM-ALLOC-3")
def test_numpy_integer_tokens_pass(pytester: pytest.Pytester) -> None:
    _passes(pytester, "numpy_tokens", NUMPY_TOKENS, "harness.suites.memory_domains.test_allocation",
            "harness.suites.memory_domains.test_roles", "harness.suites.golden", "-k",
            "not test_golden_example or memory_domain", at_least=60)


@pytest.mark.requirement("POOL-4", "OPS-1")
def test_a_numpy_array_of_supported_operations_passes(pytester: pytest.Pytester) -> None:
    _passes(pytester, "numpy_answers", NUMPY_ANSWERS, "harness.suites.memory_pools.test_supported_operations",
            "harness.suites.golden", "-k", "not test_golden_example or general-ashmem", at_least=100)
