"""The custom-call machinery itself: building, the registry, trapped input writes, crashes in the service."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from harness.api.custom_calls import CallCase, CustomCallError, TargetRegistry
from harness.api.shapes import Leaf
from harness.judging.custom_calls import run_case
from harness.service.custom_calls import CustomCallExecutor
from harness.api.errors import DriverCrash
from harness.tooling import CompilerMissing, build_shared_library
from reference_driver.custom_calls import reference_targets


def _target(targets, name, platform):
    return next(t for t in targets if t.key == (name, platform))


def test_no_compiler_is_one_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    source = tmp_path / "x.c"
    source.write_text("int x;\n")
    with pytest.raises(CompilerMissing, match="no C compiler .*found"):
        build_shared_library("x", [source])


def test_registry_errors_name_the_target() -> None:
    registry = TargetRegistry()
    [target, *_] = reference_targets()
    registry.register(target)
    with pytest.raises(CustomCallError, match="no custom-call target 'missing' is registered for platform 'Host'"):
        registry.lookup("missing", "Host")


def test_a_write_into_an_input_is_trapped_and_located() -> None:
    targets = reference_targets(("-DCC_MUTANT_INPUT_IN_PLACE",))
    executor = CustomCallExecutor(targets)
    target = _target(targets, "add_mod128", "HarnessDevice")
    case = CallCase((Leaf("float32", (128,)), Leaf("float32", (10,))), Leaf("float32", (10,)), struct.pack("<qq", 10, 0))
    outcome = run_case(executor, target, case, (np.ones(128, np.float32), np.ones(10, np.float32)))
    assert outcome.result[0] == "fault" and outcome.result[1] in ("SIGSEGV", "SIGBUS")
    assert outcome.input_fault == "operand 1 (float32[10]) at byte offset 0"  # and this process lives on


def test_a_crashing_target_is_a_reported_crash_and_the_service_recovers() -> None:
    from harness.service import DriverService

    service = DriverService("mutant-cc-segfault-on-empty-message")
    try:
        targets = reference_targets(("-DCC_MUTANT_SEGFAULT",))
        target = _target(targets, "fail_with_status", "Host")
        with pytest.raises(DriverCrash, match="SIGSEGV"):
            run_case(service.custom_calls, target, CallCase((), Leaf("float32", (1,)), b""), ())
        again = run_case(service.custom_calls, target, CallCase((), Leaf("float32", (1,)), b"x"), ())
        assert again.result == ("failed", b"fail_with_status: x", 19) and service.starts == 2
    finally:
        service.close()
