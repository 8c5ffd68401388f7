"""The native deep bugs (`harness.plugins.deep_bugs.native`): for each, a scenario meeting its
trigger fails under the harness's judging, on the rule the bug declares, and one missing a single
condition passes.  All run on ``deep-native-bugs``, the sample with every one of them: each
scenario meets one trigger and no other."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import DataLocation, OperandLifeTime, OperandType, OperationType
from harness.api.packed import unavailable
from harness.judging.builders import ModelBuilder
from harness.judging.oracle import assert_scenario_conforms
from harness.judging.scenario import MemorySpec, Scenario, with_constants
from harness.strategies.domains import request
from reference_driver import ReferenceDevice

WHY_NOT = unavailable()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "tvm-ffi is available")

F32, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32


@pytest.fixture(scope="module")
def buggy():
    from harness.plugins.deep_bugs.native import combined_device

    return combined_device()


def _binary(op: OperationType, type: OperandType, a: np.ndarray, b: np.ndarray, constant: int | None = None) -> Scenario:
    """``op(a, b)`` with no fused activation; operand ``constant`` (0 or 1) a constant of the model."""
    builder = ModelBuilder()
    x = builder.constant(type, a) if constant == 0 else builder.input(type, a.shape)
    y = builder.constant(type, b) if constant == 1 else builder.input(type, b.shape)
    shape = np.broadcast_shapes(a.shape, b.shape)
    builder.operation(op, [x, y, builder.scalar(0)], type, shape)
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=(op.name,))
    nbytes = int(np.prod(shape)) * 4
    inputs = [value for number, value in enumerate((a, b)) if number != constant]
    return request(model, inputs, [nbytes], label=op.name)


def _judged(test: str, scenario: Scenario, driver) -> ConformanceError | None:
    """The verdict of a test of requirement ``test`` (as the suites judge it) on ``scenario``."""
    try:
        assert_scenario_conforms(test, scenario, ReferenceDevice(), driver)
    except ConformanceError as error:
        return error
    return None


def _fails(bug: str, test: str, scenario: Scenario, driver) -> None:
    """The scenario meets ``bug``'s trigger: a test of ``test`` fails on the rule the bug breaks."""
    from harness.plugins.deep_bugs import DEEP_BUGS

    error = _judged(test, scenario, driver)
    assert error is not None, "the trigger is met, and the driver passed"
    assert error.requirement == DEEP_BUGS[bug].requirement, error


def _passes(test: str, scenario: Scenario, driver) -> None:
    error = _judged(test, scenario, driver)
    assert error is None, f"a condition is missing, and the driver failed: {error}"


# ---------------------------------------------------------------- REQ-2: an output's padding

def _padding_past_end(shape: tuple[int, ...], kind: str = "mmap_fd") -> Scenario:
    """ADD over ``shape``, its output's padding one byte past the end of its pool (pool 1, of ``kind``)."""
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    scenario = _binary(OperationType.ADD, F32, a, a + 1)
    output = scenario.outputs[0]
    number = output.location.pool_index
    pool = scenario.request_pools[number]
    assert isinstance(pool, MemorySpec) and number > 0
    past = replace(output.location, padding=pool.size - output.location.offset - output.location.length + 1)
    pools = list(scenario.request_pools)
    pools[number] = replace(pool, kind=kind)
    return replace(scenario, outputs=(replace(output, location=past),), request_pools=tuple(pools))


def test_output_padding_unchecked(buggy) -> None:
    _fails("native-output-padding-unchecked", "REQ-2", _padding_past_end((2, 2, 2)), buggy)
    _passes("REQ-2", _padding_past_end((2, 4)), buggy)  # rank 2
    _passes("REQ-2", _padding_past_end((2, 2, 2), "ashmem"), buggy)  # not mmap_fd


# ---------------------------------------------------------------- POOL-2: FLOAT32 ADD broadcast along axis 0

def _broadcast(row: int) -> Scenario:
    a = np.arange(2 * 2 * 1 * row, dtype=np.float32).reshape(2, 2, 1, row) / 8 + 1
    b = np.arange(2 * row, dtype=np.float32).reshape(1, 2, 1, row) / 4 + 1
    return _binary(OperationType.ADD, F32, a, b)


def test_broadcast_tail_dropped(buggy) -> None:
    _fails("native-broadcast-tail-dropped", "POOL-2", _broadcast(7), buggy)
    _passes("POOL-2", _broadcast(4), buggy)  # rows of 4


# ---------------------------------------------------------------- POOL-2: INT32 MUL of two negatives

def _negative_products(shape: tuple[int, ...]) -> Scenario:
    a = -np.full(shape, 70000, np.int32) - np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    return _binary(OperationType.MUL, I32, a, a.copy())


def test_int_mul_saturates(buggy) -> None:
    _fails("native-int-mul-saturates", "POOL-2", _negative_products((2, 2, 2, 2)), buggy)
    _passes("POOL-2", _negative_products((2, 2, 4)), buggy)  # rank 3


# ---------------------------------------------------------------- POOL-2: a FLOAT32 MUL's constant by reference

def _constant_at(offset: int, op: OperationType, constant: int = 0, kind: str = "mmap_fd") -> Scenario:
    """op(a, b) with operand ``constant`` a FLOAT32 constant of shape (2, 2, 2) at ``offset`` of a
    constant pool of ``kind``."""
    a = np.arange(8, dtype=np.float32).reshape(2, 2, 2) / 4 + 1
    b = np.arange(8, dtype=np.float32).reshape(2, 2, 2) / 2 + 3
    scenario = with_constants(_binary(op, F32, a, b, constant), "reference", kind)
    (pool,) = scenario.constant_pools
    operands = [replace(o, location=DataLocation(o.location.pool_index, o.location.offset + offset, o.location.length))
                if o.lifetime == OperandLifeTime.CONSTANT_REFERENCE else o for o in scenario.subgraph.operands]
    return replace(scenario, subgraph=replace(scenario.subgraph, operands=tuple(operands)),
                   constant_pools=(replace(pool, content=bytes(range(1, offset + 1)) + pool.content),))


def test_reference_constant_shifted(buggy) -> None:
    _fails("native-reference-constant-shifted", "POOL-2", _constant_at(8, OperationType.MUL), buggy)
    _passes("POOL-2", _constant_at(8, OperationType.ADD), buggy)  # read by an ADD
    _passes("POOL-2", _constant_at(0, OperationType.MUL), buggy)  # at the pool's start
    _passes("POOL-2", _constant_at(8, OperationType.MUL, constant=1), buggy)  # MUL's second operand
    _passes("POOL-2", _constant_at(8, OperationType.MUL, kind="ashmem"), buggy)  # not mmap_fd


def test_each_native_deep_bug_is_a_driver_and_all_are_one() -> None:
    from harness.drivers.registry import load_registry
    from harness.plugins.deep_bugs import DEEP_BUGS
    from harness.plugins.deep_bugs.native import COMBINED, FLAGS

    names = set(load_registry().names())
    assert len(FLAGS) >= 4 and COMBINED in names
    for name in FLAGS:
        bug = DEEP_BUGS[name]
        assert bug.factory is not None and bug.fault is None, "a native bug is a driver of its own, not a fault"
        assert bug.driver in names
