"""The deep bugs of plugins/deep_bugs/reach.py that are drivers of their own (test_deep_bugs.py
holds the scenarios of its Python-level one): a scenario meeting each one's trigger fails the
harness's judging with the bug's requirement and passes on the reference, and one that misses a
condition of the trigger passes on the bug too.  Each scenario is the one a suite test draws,
given to that test's body directly (no search)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from harness.api.errors import ConformanceError
from harness.api.shapes import Leaf, TupleShape
from harness.drivers.registry import load_registry
from harness.integration.forked import run_in_child
from harness.integration.recording import judged
from harness.judging.custom_calls import assert_call_conforms, run_case
from harness.service.custom_calls import CustomCallExecutor
from harness.strategies.concurrency import CallPlan
from harness.strategies.custom_calls import fixed_values
from harness.strategies.dlpack import CPU
from harness.strategies.domains import declared_flavor
from harness.plugins.deep_bugs._registry import DEEP_BUGS
from reference_driver.custom_calls import concat_case, reference_targets

concurrency = importlib.import_module("harness.suites.memory_domains.test_concurrent_entry_points")
tensors = importlib.import_module("harness.suites.packed_functions.test_tensors")


def _verdict(call) -> ConformanceError | None:
    try:
        call()
    except ConformanceError as verdict:
        return verdict
    return None


def _device(name: str):
    return load_registry().drivers[name].create()


def _requirement(bug: str) -> str:
    return DEEP_BUGS[bug].requirement


# --------------------------------------------------------------------------- threads


def _plan_verdict(driver_name: str, plan: CallPlan) -> ConformanceError | None:
    driver = _device(driver_name)
    body = concurrency.test_every_entry_point_from_several_threads.hypothesis.inner_test
    return _verdict(lambda: body(driver, declared_flavor(driver.capabilities()), plan))


def test_allocations_overflowing_at_once_share_a_token_and_are_caught() -> None:
    many_at_once = CallPlan(8, ("allocate",) * 24)  # past 16 live buffers, from 8 threads
    verdict = _plan_verdict("deep-overflowing-allocations-share-a-token", many_at_once)
    assert verdict is not None and verdict.requirement == _requirement("overflowing-allocations-share-a-token")
    assert _plan_verdict("reference", many_at_once) is None


def test_allocations_overflowing_one_at_a_time_or_below_the_table_pass() -> None:
    assert _plan_verdict("deep-overflowing-allocations-share-a-token", CallPlan(1, ("allocate",) * 24)) is None
    assert _plan_verdict("deep-overflowing-allocations-share-a-token", CallPlan(8, ("allocate",) * 12)) is None


# --------------------------------------------------------------------------- limits


def _full(width: int, levels: int):
    return Leaf("float32", (4, 4)) if levels == 0 else TupleShape(tuple(_full(width, levels - 1) for _ in range(width)))


def _concat_verdict(flags: tuple[str, ...], operands) -> ConformanceError | None:
    targets = reference_targets(flags)
    target = next(t for t in targets if t.key == ("tuple_concat", "Host"))
    case = concat_case(operands)
    values = tuple(fixed_values(shape, seed=number) for number, shape in enumerate(case.operands))
    outcome = run_case(CustomCallExecutor(targets), target, case, values)
    return _verdict(lambda: assert_call_conforms("CC-2", target, case, values, outcome))


def test_a_host_leaf_table_of_24_is_caught_at_the_declared_limits() -> None:
    at_limits = (_full(3, 3), _full(2, 3), _full(2, 3))  # 27 + 8 + 8 leaves
    verdict = _concat_verdict(("-DCC_DEEP_LEAF_TABLE_24",), at_limits)
    assert verdict is not None and verdict.requirement == _requirement("cc-host-leaf-table-24")
    assert _concat_verdict((), at_limits) is None
    assert _concat_verdict(("-DCC_DEEP_LEAF_TABLE_24",), (_full(2, 3), _full(2, 3), _full(2, 3))) is None  # 24 leaves


# --------------------------------------------------------------------------- dtypes


def _tensor_verdict(driver_name: str, flags: tuple[str, ...], dtype: str) -> ConformanceError | None:
    from harness.api.packed import load, unavailable
    from reference_driver.packed_functions import packed_library

    if unavailable():
        pytest.skip(unavailable())
    probes = load(packed_library(driver_name, flags))
    array = np.arange(6, dtype=dtype).reshape(2, 3)
    body = tensors.test_tensors_cross_without_copying.hypothesis.inner_test
    return _verdict(lambda: run_in_child(lambda: body(probes, (array, array, CPU)), lambda error: judged(error, __file__),
                                         lambda: 0, lambda count: None, "tensor_info", 60.0))


def test_uint64_tensors_described_as_int64_are_caught() -> None:
    flags = ("-DFFI_DEEP_UINT64_AS_INT64",)
    verdict = _tensor_verdict("deep-ffi-uint64-as-int64", flags, "uint64")
    assert verdict is not None and verdict.requirement == _requirement("ffi-uint64-as-int64")
    assert _tensor_verdict("reference", (), "uint64") is None
    assert _tensor_verdict("deep-ffi-uint64-as-int64", flags, "uint32") is None
