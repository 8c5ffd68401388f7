"""The driver's coverage: collected in its service, only from its own files, sent with each reply,
and refused when a reply's edges are not what a service sends."""

from __future__ import annotations

import numpy as np
import pytest

from harness.judging.builders import binary_model, pack_request
from harness.api.hal import OperationType
from harness.service import DriverService
from harness.service.coverage import (COVERAGE_ENVIRONMENT, MAX_EDGES_PER_REPLY, NATIVE_BASE, RECEIVED,
                                      ReceivedCoverage, ServiceCoverage, driver_paths, valid_edges)
from reference_driver import ReferenceDevice


@pytest.fixture
def covered_service(monkeypatch):
    monkeypatch.setenv(COVERAGE_ENVIRONMENT, "1")
    RECEIVED.take()
    service = DriverService("reference", timeout=10)
    yield service
    service.close()
    RECEIVED.take()


def _run(device, op: OperationType, dims=(4,)) -> None:
    model = binary_model(op, dims=dims)
    a = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims)
    request, _, _ = pack_request(model, [a, a])
    device.prepare_model(model).execute(request)


def test_each_reply_carries_the_edges_first_reached_and_only_those(covered_service) -> None:
    device = covered_service.device
    _run(device, OperationType.ADD)
    first = RECEIVED.take()
    assert first and all(0 <= edge < NATIVE_BASE for edge in first), "a Python driver's edges are below NATIVE_BASE"
    assert len(set(first)) == len(first), "an edge is sent once"
    _run(device, OperationType.ADD)
    again = RECEIVED.take()
    assert not set(again) & set(first), f"{len(set(again) & set(first))} edges sent twice"
    _run(device, OperationType.MUL)
    assert RECEIVED.take(), "an operation never run before reaches edges of its own"


def test_no_coverage_unless_the_harness_asks(monkeypatch) -> None:
    monkeypatch.delenv(COVERAGE_ENVIRONMENT, raising=False)
    RECEIVED.take()
    service = DriverService("reference", timeout=10)
    try:
        _run(service.device, OperationType.ADD)
        assert RECEIVED.take() == []
    finally:
        service.close()


def test_only_the_drivers_own_files_are_traced() -> None:
    import harness
    import reference_driver

    paths = driver_paths(ReferenceDevice())
    assert paths == (reference_driver.__path__[0],)
    assert not any(p.startswith(harness.__path__[0]) for p in paths)
    coverage = ServiceCoverage(paths)
    coverage.start()
    try:
        np.add(np.ones(3), 1)  # numpy's Python code and this file are not the driver's
        assert coverage.take() == ()
        _run(ReferenceDevice(), OperationType.ADD)
    finally:
        import sys
        import threading

        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    assert coverage.take()


def test_a_native_map_adds_an_edge_per_set_byte() -> None:
    counters = bytearray(64)
    coverage = ServiceCoverage(())
    coverage.add_native_map(memoryview(counters))
    assert coverage.take() == ()
    counters[3] = counters[40] = 1
    assert coverage.take() == (NATIVE_BASE + 3, NATIVE_BASE + 40)
    counters[5] = 7
    assert coverage.take() == (NATIVE_BASE + 5,)


@pytest.mark.parametrize("value", [
    [1, 2], (1, "2"), (1, True), (-1,), (1 << 32,), (1.0,), tuple(range(MAX_EDGES_PER_REPLY + 1)), None,
])
def test_edges_that_no_service_sends_are_refused(value) -> None:
    assert valid_edges(value) is None
    received = ReceivedCoverage()
    received.add(value)
    assert received.take() == [] and received.replies_refused == 1


def test_edges_a_service_sends_are_kept() -> None:
    received = ReceivedCoverage()
    received.add((0, 5, (1 << 32) - 1))
    assert received.take() == [0, 5, (1 << 32) - 1]
    assert received.take() == []


def test_a_driver_made_of_parts_is_traced_in_each_part_and_never_in_the_harness() -> None:
    """A seeded bug's kernel lives in the harness's mutants plugin, the rest in the reference: both
    are the driver's code.  A plugin the harness ships is a package of its own, not the harness."""
    import harness
    from harness.drivers.registry import load_registry

    registry = load_registry()
    mutant = driver_paths(registry.resolve("mutant-relu6-clamps-at-6.5").create())
    assert {path.rsplit("/", 1)[1] for path in mutant} == {"reference_driver", "mutants"}
    harness_root = harness.__path__[0]
    assert all(path != harness_root for path in mutant)


def _edges_of_a_run(monkeypatch, tracer_path: str) -> set[int]:
    import sys
    import threading

    from harness.service.coverage import LINE_TRACER_ENVIRONMENT

    monkeypatch.setenv(LINE_TRACER_ENVIRONMENT, tracer_path)
    coverage = ServiceCoverage(driver_paths(ReferenceDevice()))
    device = ReferenceDevice()
    coverage.start()
    try:
        _run(device, OperationType.ADD, dims=(2, 3))
        _run(device, OperationType.MUL, dims=(2, 3))
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    return set(coverage.take()), coverage.tracer


def test_the_compiled_tracer_reaches_the_same_edges_as_the_python_one(monkeypatch) -> None:
    from harness.service.coverage import build_line_tracer

    path = build_line_tracer()
    assert path is not None, "the test extra's machine has a C compiler and Python's headers"
    compiled, how = _edges_of_a_run(monkeypatch, path)
    assert how == "compiled"
    python, how = _edges_of_a_run(monkeypatch, "")
    assert how == "python"
    assert compiled and compiled == python, (len(compiled), len(python), len(compiled ^ python))


def test_a_tracer_that_cannot_be_loaded_leaves_the_python_one(monkeypatch, tmp_path) -> None:
    broken = tmp_path / "harness_linetrace.so"
    broken.write_bytes(b"not a library")
    edges, how = _edges_of_a_run(monkeypatch, str(broken))
    assert how == "python" and edges
