"""A golden example on which the driver's service crashes or hangs is reported as that fault, carrying
the example (``golden``), so that its reproducer runs that example again; a circuit breaker's refusal
carries the example of the call that really failed (one script per refused test, run
again in a session of its own each, was most of a crash-every-call driver's certify)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.api.errors import DriverCrash
from harness.cts.check import GoldenTest, check_example
from harness.cts.corpus import load_corpus
from harness.cts.kinds import GoldenKind
from harness.integration.golden import BUNDLED_SPECS
from harness.service import DriverService
from harness.service.breaker import THRESHOLD

DRILLS = Path(__file__).parents[1] / "reliability" / "drills.py"
CORPUS = load_corpus([BUNDLED_SPECS])


@pytest.fixture(scope="module")
def crashing() -> DriverService:
    service = DriverService(f"{DRILLS}:segfault_every_execute", timeout=5)
    yield service
    service.close()


def _example(kind: GoldenKind, memory_kind: str = "") -> GoldenTest:
    case = next(case for case in CORPUS.cases if not case.case.expect_failure and case.id.startswith("add_broadcast"))
    return GoldenTest(case, kind, memory_kind)


@pytest.mark.parametrize("kind, memory_kind", [(GoldenKind.GENERAL, "ashmem"), (GoldenKind.DYNAMIC_OUTPUT_SHAPE, ""),
                                               (GoldenKind.MEMORY_DOMAIN, "")])
def test_a_crash_on_a_golden_example_is_the_crash_and_carries_the_example(crashing: DriverService, kind, memory_kind) -> None:
    """The memory-domain kind releases its buffers after the crash: the service they were on is gone,
    and the release's own failure must not take the crash's place as the verdict."""
    test = _example(kind, memory_kind)
    with crashing.breaker.suspended():  # every call reaches the driver
        with pytest.raises(DriverCrash) as crashed:
            check_example(crashing.device, test)
    assert "PreparedModel.execute" in str(crashed.value) and "SIGSEGV" in str(crashed.value), str(crashed.value)
    assert crashed.value.golden == {"path": test.case.path, "case": test.case.id, "kind": kind.value,
                                    "memory_kind": memory_kind}


def test_a_refusal_carries_the_example_that_really_crashed(crashing: DriverService) -> None:
    first, later = _example(GoldenKind.GENERAL, "ashmem"), _example(GoldenKind.DYNAMIC_OUTPUT_SHAPE)
    for number in range(THRESHOLD):  # in two tests: the breaker opens
        crashing.breaker.context = f"test_{number % 2}"
        with pytest.raises(DriverCrash):
            check_example(crashing.device, first)
    crashing.breaker.context = "a later test"
    with pytest.raises(DriverCrash) as refused:
        check_example(crashing.device, later)
    assert refused.value.by_breaker and refused.value.golden["kind"] == first.kind.value
