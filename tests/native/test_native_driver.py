"""A C++ driver through tvm-ffi: the sample passes the suites for what it declares, bad libraries
are one clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.api.errors import DriverLoadError
from harness.api.packed import unavailable

WHY_NOT = unavailable()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "tvm-ffi is available")


@pytest.fixture(scope="module")
def sample_library() -> str:
    from harness.plugins.native_sample import build_sample

    return build_sample()


def test_the_sample_declares_what_it_implements(sample_library) -> None:
    from harness.api.hal import OperandType, OperationType
    from harness.drivers.native import NativeDevice

    capabilities = NativeDevice(sample_library).capabilities()
    assert capabilities.operations == {OperationType.ADD, OperationType.MUL} and capabilities.memory_domains
    assert {OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32} <= capabilities.operand_types


def test_native_path_passes_the_suites_for_its_operations(sample_library, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", "harness.suites.memory_pools",
         "harness.suites.requests", "harness.suites.numerics", "harness.suites.memory_domains", f"--driver=native:{sample_library}",
         "--harness-profile=ci", "--harness-seed=0", f"--harness-record={record}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    tests = [line for line in map(json.loads, record.read_text().splitlines()) if "id" in line]
    outcomes = Counter(line["outcome"] for line in tests)
    assert outcomes["passed"] > 0 and set(outcomes) <= {"passed", "skipped"}, outcomes
    # Only what the sample does not declare is skipped (other operations, quantized types): each
    # skip is the harness's own not-applicable, naming the capability it lacks.
    skips = [line["skip"] for line in tests if line["outcome"] == "skipped"]
    assert skips and all(skip["kind"] == "not-applicable" and skip["capability"] for skip in skips), skips


def test_a_library_without_the_abi_names_what_it_lacks(tmp_path: Path) -> None:
    from harness.drivers.native import NativeDevice
    from reference_driver.packed_functions import packed_library

    probes = packed_library("reference").build()  # a tvm-ffi library, but not a driver
    with pytest.raises(DriverLoadError, match="does not export harness_capabilities"):
        NativeDevice(probes)


def test_a_missing_library_is_one_clear_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "harness.commands.cli", "run", "--driver", "native:no/such/libdriver.so"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "no such library 'no/such/libdriver.so'" in run.stderr + run.stdout
    assert "Traceback" not in run.stderr
