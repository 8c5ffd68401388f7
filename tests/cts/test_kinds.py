"""Each VTS test kind on the harness's own corpus: the reference passes, a seeded bug fails."""

from __future__ import annotations

import numpy as np
import pytest

from harness.api.hal import DriverError, ErrorStatus, ExecutionResult, OperationType
from harness.api.memory import REQUIRED_KINDS
from harness.cts.check import GoldenTest, check_example
from harness.cts.corpus import load_corpus
from harness.cts.failure import GoldenMismatch
from harness.cts.kinds import GoldenKind
from harness.integration.golden import BUNDLED_SPECS
from harness.plugins.mutants._registry import MUTANTS, with_kernels
from reference_driver import ReferenceDevice, ReferencePreparedModel

CORPUS = load_corpus([BUNDLED_SPECS])
KINDS = [(GoldenKind.GENERAL, kind) for kind in REQUIRED_KINDS] + [(GoldenKind.DYNAMIC_OUTPUT_SHAPE, ""),
                                                                  (GoldenKind.MEMORY_DOMAIN, "")]


def _example_of(case) -> str:
    """A case's name without its variations: spec file, model and example."""
    variations = case.case.variations
    return case.id.removesuffix("_" + "_".join(variations)) if variations else case.id


def _tests(kind: GoldenKind, memory_kind: str, example: str = ""):
    return [GoldenTest(case, kind, memory_kind) for case in CORPUS.cases if example in ("", _example_of(case))
            and (kind is GoldenKind.GENERAL or not case.case.expect_failure)]


def test_the_corpus_is_fully_expressed() -> None:
    assert CORPUS.files >= 6 and not CORPUS.unexpressed and len(CORPUS.cases) > 100


@pytest.mark.parametrize("kind, memory_kind", KINDS)
def test_the_reference_passes_every_example(kind, memory_kind) -> None:
    device = ReferenceDevice()
    for test in _tests(kind, memory_kind):
        check_example(device, test)


@pytest.mark.parametrize("kind, memory_kind", KINDS)
@pytest.mark.parametrize("mutant, example", [("conv-same-pads-at-start", "conv2d_signatures_same"),
                                             ("conv-same-padding-ignores-dilation", "conv2d_signatures_same_dilated"),
                                             ("conv-dilation-above-2-runs-dilation-2", "conv2d_signatures_padded_dilated"),
                                             ("div-int32-truncates", "div_int32"),
                                             ("conv-per-channel-first-scale", "conv2d_signatures_two_channels")])
def test_a_seeded_bug_fails_in_every_kind(mutant, example, kind, memory_kind) -> None:
    device = MUTANTS[mutant].factory()
    failures = []
    for test in _tests(kind, memory_kind, example):
        with pytest.raises(GoldenMismatch) as caught:
            check_example(device, test)
        failures.append(caught.value)
    # wrong values however they travel: the value rule in every kind, not the kind's own requirement
    assert failures and all(f.requirement == "OPS-1" and example in f.golden["case"] for f in failures)
    if kind is not GoldenKind.GENERAL:
        assert all("why OPS-1: in the general test kind too" in str(f) for f in failures)


def test_a_bug_of_driver_managed_buffers_alone_fails_their_kind() -> None:
    """Right values in the general kind, scrambled ones through a driver-managed buffer: OPS-3."""
    device = MUTANTS["rank-4-buffers-kept-channels-first"].factory()
    failures = []
    for test in _tests(GoldenKind.MEMORY_DOMAIN, ""):
        try:
            check_example(device, test)
        except GoldenMismatch as failure:
            failures.append(failure)
    assert failures and {f.requirement for f in failures} == {"OPS-3"}


class _NoShapeWhenShort(ReferencePreparedModel):
    """Reports success with truncated outputs instead of OUTPUT_INSUFFICIENT_SIZE."""

    def execute(self, request):
        try:
            return super().execute(request)
        except DriverError as error:
            if error.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
                raise
            return ExecutionResult(True, ())


def test_dynamic_output_shape_needs_insufficient_size() -> None:
    device = ReferenceDevice(prepared_model_class=_NoShapeWhenShort)
    (test,) = _tests(GoldenKind.DYNAMIC_OUTPUT_SHAPE, "", "div_int32")
    with pytest.raises(GoldenMismatch, match="OUTPUT_INSUFFICIENT_SIZE"):
        check_example(device, test)


def test_dynamic_output_shape_judges_is_sufficient_per_output() -> None:
    device = MUTANTS["every-output-marked-insufficient"].factory()
    tests = [t for t in _tests(GoldenKind.DYNAMIC_OUTPUT_SHAPE, "", "relu_family") if len(t.case.outputs) > 1]
    assert tests
    for test in tests:
        with pytest.raises(GoldenMismatch, match="though their regions hold them"):
            check_example(device, test)


def test_an_invalid_example_must_be_refused() -> None:
    (test,) = [t for t in _tests(GoldenKind.GENERAL, "ashmem") if t.case.id == "concat_reshape_mismatched_mismatched"]
    check_example(ReferenceDevice(), test)  # the reference refuses it: no GoldenMismatch
    lenient = with_kernels({OperationType.CONCATENATION: lambda values, ins, out_op, out: np.zeros((2, 2), np.float32)})
    with pytest.raises(GoldenMismatch, match="ExpectFailure"):
        check_example(lenient, test)
