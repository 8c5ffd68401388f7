"""Checking one golden example on a driver: run it in its test kind and judge it as CTS does."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.api.errors import DriverFault
from harness.api.hal import Device, DriverError, OperandType, truth_value_outputs
from harness.api.memory import MemoryKind

from .corpus import GoldenCase
from .criteria import compare, criterion_for, multinomial_mismatch
from .failure import GoldenMismatch, golden_of
from .kinds import GoldenFailure, GoldenKind, dynamic_main, run_dynamic_output_shape, run_general, run_memory_domain

__all__ = ["REQUIREMENT", "GoldenTest", "ReportedUnsupported", "check_example"]

#: The requirement each test kind checks.
REQUIREMENT = {GoldenKind.GENERAL: "OPS-1", GoldenKind.DYNAMIC_OUTPUT_SHAPE: "OPS-2", GoldenKind.MEMORY_DOMAIN: "OPS-3"}


@dataclass(frozen=True)
class GoldenTest:
    case: GoldenCase
    kind: GoldenKind
    memory_kind: str = ""

    @property
    def id(self) -> str:
        return f"{self.case.id}-{self.kind.value}{'-' + self.memory_kind if self.memory_kind else ''}"


class ReportedUnsupported(Exception):
    """The driver's get_supported_operations reports this example's model unsupported."""


def _supported(driver: Device, test: GoldenTest) -> bool:
    main = dynamic_main(test.case) if test.kind is GoldenKind.DYNAMIC_OUTPUT_SHAPE else None
    with test.case.open_model(main) as model:
        try:
            return all(driver.get_supported_operations(model))
        except DriverError:
            return False


def check_example(driver: Device, test: GoldenTest) -> None:
    """Raise `GoldenMismatch` unless the driver's outputs meet CTS's criteria (or, for an
    ExpectFailure example, unless the driver refuses it); `ReportedUnsupported` when the driver
    says beforehand it does not support the model.  A crash or hang of the driver's service on the
    example (`DriverFault`) carries the example as a mismatch does (``golden``): its reproducer runs
    that example again.  A circuit breaker's refusal keeps the example of the call that really
    failed, which it replays (`harness.service.breaker`)."""
    try:
        _check_example(driver, test)
    except DriverFault as fault:
        if not fault.by_breaker and fault.golden is None:
            fault.golden = golden_of(test)
        raise


def _check_example(driver: Device, test: GoldenTest) -> None:
    golden, kind = test.case, test.kind
    requirement = REQUIREMENT[kind]
    if golden.case.expect_failure:
        try:
            run_general(driver, golden, test.memory_kind)
        except GoldenFailure:
            return  # an invalid example refused: what CTS expects
        raise GoldenMismatch(test, requirement, "the example is invalid (ExpectFailure) but the driver ran it")
    if not _supported(driver, test):
        raise ReportedUnsupported(test.id)
    try:
        if kind is GoldenKind.GENERAL:
            outputs = run_general(driver, golden, test.memory_kind)
        elif kind is GoldenKind.DYNAMIC_OUTPUT_SHAPE:
            outputs = run_dynamic_output_shape(driver, golden)
        else:
            outputs = run_memory_domain(driver, golden)
    except GoldenFailure as failure:
        raise GoldenMismatch(test, requirement, str(failure)) from None
    if golden.case.tolerance > 0:  # RANDOM_MULTINOMIAL: its samples' distribution, not their values
        logits = golden.inputs[0] if golden.inputs and golden.inputs[0] is not None else np.zeros((0, 0))
        distribution = multinomial_mismatch(logits, outputs[0], golden.case.tolerance)
        if distribution is not None:
            raise GoldenMismatch(test, requirement, f"output 0: {distribution}")
        return
    mismatch = _mismatch(golden, outputs)
    if mismatch is None:
        return
    if kind is not GoldenKind.GENERAL:
        plainly = _plain_mismatch(driver, golden)
        if plainly is not None:  # the values are wrong however they travel: the value rule, whatever the kind
            raise GoldenMismatch(test, REQUIREMENT[GoldenKind.GENERAL],
                                 f"{mismatch}\n  why {REQUIREMENT[GoldenKind.GENERAL]}: in the general test kind too, {plainly}")
    raise GoldenMismatch(test, requirement, mismatch)


def _mismatch(golden: GoldenCase, outputs: list[np.ndarray]) -> str | None:
    """How the first output that misses CTS's criteria misses them (None: every one meets them)."""
    has_float16 = any(o.type == OperandType.TENSOR_FLOAT16 for o in golden.main.operands)
    truths = truth_value_outputs(golden.main)
    for number, (expected, actual, ignored, index) in enumerate(
            zip(golden.outputs, outputs, golden.ignored, golden.main.output_indexes)):
        if ignored:
            continue
        operand = golden.main.operands[index]
        if index in truths:  # truth values: any non-zero byte is True, whatever byte a driver writes
            expected, actual = np.not_equal(expected, 0), np.not_equal(actual, 0)
        mismatch = compare(expected, actual, criterion_for(operand.type, golden.case.relaxed, has_float16))
        if mismatch is not None:
            return f"output {number} ({operand.type.name}): {mismatch.describe()}"
    return None


def _plain_mismatch(driver: Device, golden: GoldenCase) -> str | None:
    """The example's mismatch in the general test kind, its I/O in ashmem (every driver's memory
    kind): when a dynamic-shape or memory-domain run's values are wrong, they are wrong here too if
    the operation computes them wrong (`harness.judging.culprit` asks the generated tests' same
    question).  None when the plain run is right, or fails or crashes: nothing then shows that
    another rule than the kind's own is broken."""
    try:
        return _mismatch(golden, run_general(driver, golden, MemoryKind.ASHMEM))
    except (GoldenFailure, DriverFault):
        return None
