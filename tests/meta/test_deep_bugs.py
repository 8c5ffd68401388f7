"""The deep seeded bugs are real, detectable, and apart from the mutants.

For each bug, one scenario meets its trigger: the harness's own judging reports a failure naming
the bug's requirement, on the bug's driver and on ``deep-bugs`` (composition does not hide it),
while the reference passes the same scenario.  Another misses one of its conditions, and the
bug's driver passes it.  Each runs in process, in milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import (BufferDesc, BufferRole, DataLocation, Device, OperandType, OperationType, RequestArgument,
                             SymmPerChannelQuantParams, numpy_dtype, operand_byte_size)
from harness.commands.score import _selected
from harness.drivers.registry import load_registry
from harness.judging.builders import ModelBuilder
from harness.judging.lockstep import Lockstep
from harness.judging.oracle import assert_conforms, assert_scenario_conforms, run_scenario
from harness.judging.scenario import MemorySpec, Scenario
from harness.plugins.deep_bugs import COMPOSED
from harness.plugins.deep_bugs._registry import DEEP_BUGS, composable
from harness.plugins.deep_bugs.native import COMBINED as NATIVE_COMBINED
from harness.plugins.mutants._registry import MUTANTS
from harness.strategies.domains import TokenUse, binary_model, nbytes, request, values_for
from reference_driver import ReferenceDevice

F32, F16, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32
U8, S8 = OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED
_CANARY = 0xA5

#: (pool, gap before, padding after) of each argument, inputs then outputs.
Places = Sequence[tuple[int, int, int]]
#: (kind, file offset, in a regular file) of each request pool.
Pools = Sequence[tuple[str, int, bool]]


def _laid_out(b: ModelBuilder, inputs: Sequence[np.ndarray], *, pools: Pools = (("ashmem", 0, False),),
              places: Places | None = None, tails: Sequence[int] = (), constants: str = "ashmem",
              executions: int = 1) -> Scenario:
    """The builder's model with ``inputs``, each argument where ``places`` puts it (all in pool 0,
    one after another, by default), canary bytes in every gap, padding and pool tail."""
    subgraph = b.subgraph()
    operands = subgraph.operands
    payloads: list[bytes | int] = [np.ascontiguousarray(v, numpy_dtype(operands[i].type)).tobytes()
                                   for v, i in zip(inputs, subgraph.input_indexes)]
    payloads += [operand_byte_size(operands[i].type, operands[i].dimensions) for i in subgraph.output_indexes]
    places = places or [(0, 0, 0)] * len(payloads)
    data = [bytearray() for _ in pools]
    arguments = []
    for payload, (pool, gap, padding) in zip(payloads, places):
        data[pool].extend(bytes([_CANARY]) * gap)
        offset = len(data[pool])
        data[pool].extend(payload if isinstance(payload, bytes) else bytes([_CANARY]) * payload)
        length = len(data[pool]) - offset
        data[pool].extend(bytes([_CANARY]) * padding)
        arguments.append(DataLocation(pool, offset, length, padding))
    for pool, tail in enumerate(tails):
        data[pool].extend(bytes([_CANARY]) * tail)
    memories = tuple(MemorySpec(kind, bytes(content or bytes([_CANARY])), file_offset, in_file=in_file)
                     for (kind, file_offset, in_file), content in zip(pools, data))
    ins = tuple(RequestArgument(False, at, tuple(np.shape(v))) for at, v in zip(arguments, inputs))
    outs = tuple(RequestArgument(False, at) for at in arguments[len(inputs):])
    constant_pools = (MemorySpec(constants, bytes(b.pool_data)),) if b.pool_data else ()
    return Scenario(subgraph, bytes(b.values), constant_pools, ins, outs, memories, executions=executions)


def _judged(requirement: str, scenario: Scenario) -> Callable[[Device], None]:
    """As a suite's test judges a scenario: on both devices, a wrong value's rule found by culprit."""
    return lambda driver: assert_scenario_conforms(requirement, scenario, ReferenceDevice(), driver)


def _values(kind: OperandType, shape: tuple[int, ...], seed: int = 0, low: int = -4, high: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(numpy_dtype(kind))


# --------------------------------------------------------------------------- the scenarios, per bug


def _conv_nchw(hit: bool) -> Callable[[Device], None]:
    n = 2 if hit else 1
    b = ModelBuilder()
    x = b.input(F32, (n, 1, 2, 2))
    f = b.constant(F32, _values(F32, (9, 1, 1, 1), 1))
    bias = b.constant(F32, _values(F32, (9,), 2))
    scalars = [b.scalar(v) for v in (0, 0, 0, 0, 1, 1, 0)] + [b.constant(OperandType.BOOL, True)]
    scalars += [b.scalar(1), b.scalar(1)]  # dilation factors
    b.operation(OperationType.CONV_2D, [x, f, bias, *scalars], F32, (n, 9, 2, 2))
    return _judged("POOL-2", _laid_out(b, [_values(F32, (n, 1, 2, 2))]))


def _depthwise(hit: bool) -> Callable[[Device], None]:
    stride_h = 2 if hit else 1
    b = ModelBuilder()
    x = b.input(U8, (2, 3, 3, 1), 0.5, 10)
    f = b.constant(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, np.array([[[[4, -6, 9]]]], np.int8),
                   channel_quant=SymmPerChannelQuantParams((0.5, 0.25, 0.5), 3))
    bias = b.constant(I32, np.array([3, -3, 1], np.int32))
    scalars = [b.scalar(v) for v in (0, 0, 0, 0, 1, stride_h, 3, 3)]
    out_h = (3 - 1) // stride_h + 1
    b.operation(OperationType.DEPTHWISE_CONV_2D, [x, f, bias, *scalars], U8, (2, out_h, 3, 3), 1.0, 100)
    return _judged("POOL-2", _laid_out(b, [_values(U8, (2, 3, 3, 1), 3, 8, 14)]))


def _fully_connected(hit: bool) -> Callable[[Device], None]:
    b = ModelBuilder()
    x = b.input(F32, (1, 1, 5, 12))
    w = b.constant(F32, _values(F32, (8, 12), 1) / 16)
    bias = b.constant(F32, _values(F32, (8,), 2) / 8, by_reference=True)
    act = b.scalar(2 if hit else 0)
    b.operation(OperationType.FULLY_CONNECTED, [x, w, bias, act], F32, (5, 8))
    return _judged("POOL-2", _laid_out(b, [_values(F32, (1, 1, 5, 12)) / 16]))


def _broadcast(hit: bool) -> Callable[[Device], None]:
    b = ModelBuilder()
    a = b.input(F32, (1, 2, 2, 5))
    vector = b.constant(F32, _values(F32, (5,), 1), by_reference=True) if hit else b.input(F32, (5,))
    b.operation(OperationType.ADD, [a, vector, b.scalar(1)], F32, (1, 2, 2, 5))
    inputs = [_values(F32, (1, 2, 2, 5))] + ([] if hit else [_values(F32, (5,), 1)])
    return _judged("POOL-2", _laid_out(b, inputs))


def _average_pool(hit: bool) -> Callable[[Device], None]:
    kind = F16 if hit else F32
    b = ModelBuilder()
    x = b.input(kind, (2, 1, 3, 9))
    scalars = [b.scalar(v) for v in (1, 1, 0, 0, 1, 1, 2, 1, 0)]
    b.operation(OperationType.AVERAGE_POOL_2D, [x, *scalars], kind, (2, 1, 4, 9))
    return _judged("POOL-2", _laid_out(b, [_values(kind, (2, 1, 3, 9))]))


def _concatenation(hit: bool) -> Callable[[Device], None]:
    count = 5 if hit else 4
    b = ModelBuilder()
    shapes = [(4, 1, 1, 1)] * (count - 1) + [(4, 1, 1, 3)]
    parts = [b.input(S8, shape, 0.5 if i < 2 else 1.0, -20) for i, shape in enumerate(shapes)]
    b.operation(OperationType.CONCATENATION, [*parts, b.scalar(3)], S8, (4, 1, 1, count + 2), 0.5, -20)
    return _judged("POOL-2", _laid_out(b, [_values(S8, shape, i, -25, -14) for i, shape in enumerate(shapes)]))


def _transpose_conv(hit: bool) -> Callable[[Device], None]:
    stride_h = 3 if hit else 2
    b = ModelBuilder()
    x = b.input(U8, (2, 2, 2, 9), 0.5, 100)
    f = b.constant(U8, _values(U8, (1, 2, 2, 9), 1, 98, 104), 0.5, 100)
    bias = b.constant(I32, np.array([4], np.int32), 0.25, 0)
    scalars = [b.scalar(v) for v in (0, 0, 0, 0, 3, stride_h, 0)] + [b.constant(OperandType.BOOL, False)]
    b.operation(OperationType.TRANSPOSE_CONV_2D, [x, f, bias, *scalars], U8, (2, stride_h + 2, 5, 1), 4.0, 100)
    return _judged("POOL-2", _laid_out(b, [_values(U8, (2, 2, 2, 9), 0, 98, 104)]))


def _resize(hit: bool) -> Callable[[Device], None]:
    depth = 3 if hit else 2
    b = ModelBuilder()
    x = b.input(F32, (2, depth, 3, 3))
    scales = [b.constant(OperandType.FLOAT32, 2.0), b.constant(OperandType.FLOAT32, 2.0)]
    flags = [b.constant(OperandType.BOOL, v) for v in (True, True, False)]
    b.operation(OperationType.RESIZE_NEAREST_NEIGHBOR, [x, *scales, *flags], F32, (2, depth, 6, 6))
    return _judged("POOL-2", _laid_out(b, [_values(F32, (2, depth, 3, 3))]))


def _quantized_add(hit: bool) -> Callable[[Device], None]:
    b = ModelBuilder()
    x = b.input(S8, (1, 2, 4), 1.0, 0)
    y = b.input(S8, (4,), 0.25, 0)
    b.operation(OperationType.ADD, [x, y, b.scalar(3 if hit else 0)], S8, (1, 2, 4), 0.25, 0)
    return _judged("POOL-2", _laid_out(b, [np.array([[[1, 2, 0, 3], [0, 1, 2, 1]]], np.int8),
                                           np.array([3, -2, 5, 1], np.int8)]))


def _int32_mul(hit: bool) -> Callable[[Device], None]:
    b = ModelBuilder()
    a = b.input(I32, (1, 1, 2, 3))
    factors = np.array([-70000, -80000, 5], np.int32)
    factor = b.constant(I32, factors, by_reference=True) if hit else b.input(I32, (3,))
    b.operation(OperationType.MUL, [a, factor, b.scalar(0)], I32, (1, 1, 2, 3))
    inputs = [np.array([[[[-90000, -100000, 7], [-50000, 4, -2]]]], np.int32)] + ([] if hit else [factors])
    return _judged("POOL-2", _laid_out(b, inputs))


def _relu1(hit: bool) -> Callable[[Device], None]:
    zero_point = -120 if hit else -100
    b = ModelBuilder()
    x = b.input(S8, (1, 1, 1, 4), 0.05, zero_point)
    b.operation(OperationType.RELU1, [x], S8, (1, 1, 1, 4), 0.05, zero_point)
    return _judged("POOL-2", _laid_out(b, [np.array([[[[-128, -110, -90, 0]]]], np.int8)]))


def _blob_odd_offset(hit: bool) -> Callable[[Device], None]:
    b = ModelBuilder()
    x, y = b.input(F16, (16,)), b.input(F16, (16,))
    b.operation(OperationType.ADD, [x, y, b.scalar(0)], F16, (16,))
    pools = (("ashmem", 0, False), ("hardware_buffer_blob", 0, False), ("ashmem", 0, False))
    places = ((0, 0, 0), (1, 1 if hit else 2, 0), (2, 0, 0))
    return _judged("POOL-2", _laid_out(b, [_values(F16, (16,)), _values(F16, (16,), 1)], pools=pools, places=places))


def _four_pools(hit: bool) -> Callable[[Device], None]:
    b = ModelBuilder()
    x, y = b.input(F32, (4,)), b.input(F32, (4,))
    b.operation(OperationType.ADD, [x, y, b.scalar(0)], F32, (4,))
    pools = (("hardware_buffer_blob", 0, False), ("ashmem", 0, False), ("ashmem", 0, False), ("mmap_fd", 8, True))
    places = ((0, 0, 0), (3, 0 if hit else 4, 0), (1, 0, 0))
    return _judged("POOL-2", _laid_out(b, [_values(F32, (4,)), _values(F32, (4,), 1)], pools=pools, places=places))


def _vector_tail(hit: bool) -> Callable[[Device], None]:
    b = ModelBuilder()
    x, y = b.input(F16, (3,)), b.input(F16, (3,))
    b.operation(OperationType.ADD, [x, y, b.scalar(0)], F16, (3,))
    b.operation(OperationType.SUB, [x, y, b.scalar(0)], F16, (3,))
    pools = (("ashmem", 0, False), ("mmap_fd", 4096 + 16, False), ("ashmem", 0, False))
    places = ((0, 0, 0), (0, 0, 0), (2, 0, 0), (1, 0, 0 if hit else 2))
    return _judged("POOL-2", _laid_out(b, [_values(F16, (3,)), _values(F16, (3,), 1)], pools=pools, places=places,
                                       tails=(0, 8, 0)))


def _weights_in_place(hit: bool) -> Callable[[Device], None]:
    b = ModelBuilder()
    x = b.input(S8, (2, 2), 0.5, 0)
    w = b.constant(S8, np.array([[1, -2], [3, 4]], np.int8), 0.5, 0, by_reference=True)
    b.operation(OperationType.ADD, [x, w, b.scalar(0)], S8, (2, 2), 0.5, 0)
    scenario = _laid_out(b, [np.array([[2, 1], [0, -3]], np.int8)], constants="mmap_fd", executions=4 if hit else 3)
    # judged as the test of one prepared model run again and again judges its later runs
    return lambda driver: assert_conforms("POOL-1", scenario, run_scenario(ReferenceDevice(), scenario),
                                          run_scenario(driver, scenario))


def _recycled_buffer(hit: bool) -> Callable[[Device], None]:
    def sequence(driver: Device) -> None:
        with Lockstep(driver, ReferenceDevice()) as step:
            pair = step.prepare(binary_model(F32, (2, 2)))
            assert pair is not None
            step.allocate("shared", BufferDesc((2, 2)), [pair], [BufferRole(0, 0), BufferRole(0, 1)], [BufferRole(0, 0)])
            if hit:  # written by an execution
                scenario = request(binary_model(F32, (2, 2)), [values_for(F32, (2, 2), 1), values_for(F32, (2, 2), 2)],
                                   [TokenUse("shared")])
                step.execute(pair, scenario, "DOM-STATE-1")
            else:
                step.copy_from("shared", MemorySpec("ashmem", values_for(F32, (2, 2), 1).tobytes()), (2, 2))
            step.release("shared")
            step.allocate("fresh", BufferDesc((2, 2)), [pair], [BufferRole(0, 0)], [])
            step.copy_to("fresh", nbytes(F32, (2, 2)))
    return sequence


def _dynamic_buffer(hit: bool) -> Callable[[Device], None]:
    first, second = ((2, 3, 1), (3, 2, 1)) if hit else ((2, 3), (3, 2))
    unknown = (0,) * len(first)

    def sequence(driver: Device) -> None:
        with Lockstep(driver, ReferenceDevice()) as step:
            pair = step.prepare(binary_model(F32, unknown))
            assert pair is not None
            step.allocate("b", BufferDesc(), [pair], [BufferRole(0, 0)], [])
            for seed, dims in enumerate((first, second), 1):
                step.copy_from("b", MemorySpec("ashmem", values_for(F32, dims, seed).tobytes()), dims,
                               requirement="DOM-COPY-2")
            scenario = request(binary_model(F32, unknown), [TokenUse("b"), values_for(F32, second, 3)],
                               [nbytes(F32, second)])
            step.execute(pair, scenario, "DOM-COPY-2")
    return sequence


def _results_cached(trigger: bool) -> Callable[[Device], None]:
    """One model run five times on one reused memory (three: the cache never serves)."""
    from harness.strategies.domains import declared_flavor
    from harness.strategies.sequences import ExecutionSequence, Step
    from harness.suites.memory_pools.test_sequences import test_executions_in_sequence_depend_only_on_their_requests

    runs = tuple(Step(0, seed) for seed in range(5 if trigger else 3))
    sequence = ExecutionSequence(((2, 2),), runs, reuse_memories=True)
    body = test_executions_in_sequence_depend_only_on_their_requests.hypothesis.inner_test

    def check(driver: Device) -> None:
        reference = ReferenceDevice()
        body(driver, reference, declared_flavor(reference.capabilities()), sequence)
    return check


SCENARIOS: dict[str, Callable[[bool], Callable[[Device], None]]] = {
    "conv-nchw-wide-tail": _conv_nchw,
    "depthwise-multiplier-uneven-strides": _depthwise,
    "fully-connected-batched-referenced-bias": _fully_connected,
    "broadcast-vector-constant-stride": _broadcast,
    "average-pool-padded-half": _average_pool,
    "concatenation-three-rescaled": _concatenation,
    "transpose-conv-stride-three": _transpose_conv,
    "resize-nearest-align-corners-enlarging": _resize,
    "quantized-add-shift-rescale": _quantized_add,
    "int32-broadcast-mul-saturates": _int32_mul,
    "relu1-signed-bound-wraps": _relu1,
    "blob-odd-offset-half-words": _blob_odd_offset,
    "four-pools-last-input-at-zero": _four_pools,
    "mmap-fd-output-vector-tail": _vector_tail,
    "weights-requantized-in-place": _weights_in_place,
    "recycled-buffer-keeps-contents": _recycled_buffer,
    "dynamic-buffer-same-size-keeps-shape": _dynamic_buffer,
    "results-cached-by-input-location": _results_cached,
}
PYTHON_BUGS = sorted(bug.name for bug in composable())


def _driver(name: str) -> Device:
    return load_registry().resolve(name).create()


# --------------------------------------------------------------------------- the tests


def test_the_deep_bugs_are_apart_from_the_mutants() -> None:
    registry = load_registry()
    deep = {name: spec for name, spec in registry.drivers.items() if name.startswith("deep-")}
    assert len(composable()) >= 16
    assert set(deep) == {bug.driver for bug in DEEP_BUGS.values()} | {COMPOSED, NATIVE_COMBINED}
    assert not set(DEEP_BUGS) & set(MUTANTS), "a bug both deep and a mutant"
    assert not any(spec.breaks or spec.exercises for spec in deep.values()), "harness score would run a deep bug"
    assert not any(entry.name.startswith("deep-") for entry in _selected(None, "breaks"))
    assert all(bug.requirement and bug.description and bug.reach for bug in DEEP_BUGS.values())


def test_every_python_bug_has_its_scenarios() -> None:
    assert sorted(SCENARIOS) == PYTHON_BUGS


@pytest.mark.parametrize("name", PYTHON_BUGS)
def test_a_bug_fails_its_requirement_where_its_trigger_holds(name: str) -> None:
    check = SCENARIOS[name](True)
    check(ReferenceDevice())  # the scenario is one the reference passes
    for driver in (f"deep-{name}", COMPOSED):
        with pytest.raises(ConformanceError) as failure:
            check(_driver(driver))
        assert failure.value.requirement == DEEP_BUGS[name].requirement, (driver, str(failure.value))


@pytest.mark.parametrize("name", PYTHON_BUGS)
def test_a_bug_stays_quiet_where_a_condition_misses(name: str) -> None:
    SCENARIOS[name](False)(_driver(f"deep-{name}"))


def test_the_composed_driver_holds_every_python_bug() -> None:
    device = _driver(COMPOSED)
    assert sorted(type(fault).__name__ for fault in device.faults) == sorted(bug.fault.__name__ for bug in composable()
                                                                            if bug.fault is not None)
