"""Edge coverage from what the harness builds (`harness.tooling.coverage`): asked for, a native
driver's library is instrumented and its edges go with the service's replies, numbered the same
in every process; not asked for, the build is the plain one and nothing is sent.  A packed-function
library's edges come back from the forked child that called it, judged like a reply's."""

from __future__ import annotations

import numpy as np
import pytest

from harness.api.hal import OperandType, OperationType
from harness.api.packed import LoadedLibrary, unavailable
from harness.judging.builders import binary_model, pack_request
from harness.service import DriverService
from harness.service.coverage import COVERAGE_ENVIRONMENT, NATIVE_BASE, RECEIVED
from harness.tooling import coverage

WHY_NOT = unavailable()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "tvm-ffi is available")

F32, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32


@pytest.fixture
def asked(monkeypatch):
    monkeypatch.setenv(COVERAGE_ENVIRONMENT, "1")
    RECEIVED.take()
    yield
    RECEIVED.take()


def _execute(device, op: OperationType, type: OperandType) -> None:
    model = binary_model(op, type, dims=(2, 3))
    values = (np.arange(6) - 3).astype(np.float32 if type == F32 else np.int32).reshape(2, 3)
    request, _, _ = pack_request(model, [values, values])
    device.prepare_model(model).execute(request)


def _edges_of_one_service(op: OperationType, type: OperandType) -> set[int]:
    RECEIVED.take()
    service = DriverService("native-sample", timeout=30)
    try:
        _execute(service.device, op, type)
        return set(RECEIVED.take())
    finally:
        service.close()


def test_an_instrumented_build_is_cached_apart_and_a_plain_one_is_unchanged(monkeypatch) -> None:
    from harness.plugins.native_sample import build_sample

    monkeypatch.delenv(COVERAGE_ENVIRONMENT, raising=False)
    plain = build_sample()
    monkeypatch.setenv(COVERAGE_ENVIRONMENT, "1")
    instrumented = build_sample()
    assert instrumented != plain
    assert coverage.edge_map(plain) is None, "a plain build has no edge map"
    counters = coverage.edge_map(instrumented)
    assert counters is not None and len(counters) == 1 << 16
    assert coverage.edge_map("no/such/libdriver.so") is None, "a library not found by its name gives no edges"


def test_a_native_driver_s_edges_go_with_the_replies_and_are_the_same_in_every_process(asked) -> None:
    first = _edges_of_one_service(OperationType.ADD, F32)
    assert first and all(edge >= NATIVE_BASE for edge in first), "a native driver's edges are native"
    again = _edges_of_one_service(OperationType.ADD, F32)
    # the library is loaded at another address in each process; its edges are not (only which
    # service thread ran a call, whose previous block starts the call's first edge, may differ)
    assert len(first & again) >= 0.95 * len(first | again), (len(first), len(again), len(first & again))


def test_no_edges_unless_the_harness_asks(monkeypatch) -> None:
    monkeypatch.delenv(COVERAGE_ENVIRONMENT, raising=False)
    RECEIVED.take()
    assert _edges_of_one_service(OperationType.ADD, F32) == set()


def test_inputs_reaching_other_branches_reach_other_edges(asked) -> None:
    from harness.drivers.native import NativeDevice
    from harness.plugins.native_sample import build_sample

    path = build_sample()
    device = NativeDevice(path)
    counters = coverage.edge_map(path)
    assert counters is not None

    def reached(op: OperationType, type: OperandType) -> set[int]:
        counters[:] = bytes(len(counters))  # only this test writes the map: it starts each call afresh
        _execute(device, op, type)
        return set(np.flatnonzero(np.frombuffer(counters, np.uint8)).tolist())

    reached(OperationType.ADD, F32)  # so that each call below starts after the same one
    add = reached(OperationType.ADD, F32)
    assert add and add == reached(OperationType.ADD, F32), "the same call in the same thread, the same edges"
    multiply = reached(OperationType.MUL, I32)
    assert multiply - add and add - multiply


# ---------------------------------------------------------------- packed functions, in a forked child

def _add_in_child(library: LoadedLibrary) -> None:
    from harness.integration.forked import open_in_child, run_in_child
    from harness.integration.recording import judged

    def call() -> None:
        open_in_child(library)
        assert library.add_int(2, 3) == 5

    run_in_child(call, lambda error: judged(error, __file__), lambda: 0, lambda number: None, "add_int", 60.0)


def _probes() -> LoadedLibrary:
    from reference_driver.packed_functions import packed_library

    library = packed_library("reference")
    return LoadedLibrary(library, library.build())


def test_a_packed_function_child_sends_the_edges_it_reached(asked) -> None:
    _add_in_child(_probes())
    edges = RECEIVED.take()
    assert edges and all(edge >= NATIVE_BASE for edge in edges)


def test_a_child_sends_no_edges_unless_the_harness_asks(monkeypatch) -> None:
    monkeypatch.delenv(COVERAGE_ENVIRONMENT, raising=False)
    RECEIVED.take()
    _add_in_child(_probes())
    assert RECEIVED.take() == []


@pytest.mark.parametrize("sent", [[-1], ["7"], [1 << 32], [2.5], list(range((1 << 16) + 1))],
                         ids=["negative", "text", "too-large", "not-an-integer", "too-many"])
def test_a_malformed_edge_list_from_a_child_is_refused_and_the_verdict_stands(asked, monkeypatch, sent) -> None:
    from harness.integration import forked

    monkeypatch.setattr(forked, "_edges_reached", lambda inherited: sent)  # what a hostile child could write
    refused = RECEIVED.replies_refused
    _add_in_child(_probes())  # passes: coverage never decides a verdict
    assert RECEIVED.take() == [] and RECEIVED.replies_refused == refused + 1


# ---------------------------------------------------------------- custom-call targets, in the service

def test_a_custom_call_target_s_edges_go_with_the_replies(asked) -> None:
    import struct

    from harness.api.custom_calls import CallCase
    from harness.api.shapes import Leaf
    from harness.judging.custom_calls import run_case
    from reference_driver.custom_calls import reference_targets

    target = next(t for t in reference_targets() if t.key == ("add_mod128", "HarnessDevice"))
    case = CallCase((Leaf("float32", (128,)), Leaf("float32", (10,))), Leaf("float32", (10,)), struct.pack("<qq", 10, 0))
    service = DriverService("reference", timeout=30)
    try:
        RECEIVED.take()
        outcome = run_case(service.custom_calls, target, case, (np.ones(128, np.float32), np.ones(10, np.float32)))
        assert outcome.result == ("ok",)
        assert any(edge >= NATIVE_BASE for edge in RECEIVED.take()), "the target's native edges"
    finally:
        service.close()


def test_the_harness_s_own_code_is_built_plain_when_coverage_is_asked(asked, tmp_path, monkeypatch) -> None:
    from harness.tooling import build_shared_library

    monkeypatch.setenv("DRIVER_HARNESS_CACHE", str(tmp_path))
    source = tmp_path / "branches.c"
    source.write_text("int branches(int x) { return x > 3 ? x * 2 : -x; }\n")
    assert coverage.edge_map(build_shared_library("branches", [source])) is not None, "a driver's code: instrumented"
    assert coverage.edge_map(build_shared_library("branches", [source], coverage=False)) is None  # the runner's way
