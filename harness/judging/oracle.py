"""Run a scenario on a driver, and compare the driver under test with the reference.

An expected outcome is the reference's: success (output shapes and bytes) or a set of
acceptable statuses.  SPEC leaves a choice for some failures (POOL-4/POOL-5 handle
errors: any error, GENERAL_FAILURE recommended), so the acceptable set is derived from
the rule the reference names in its message.  Every mismatch explains itself: the
requirement, the scenario, and both outcomes.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from harness.judging import bounds
from harness.api.errors import ConformanceError, DriverFault
from harness.api.hal import (
    Device,
    DriverError,
    ErrorStatus,
    ExecutionResult,
    OperandLifeTime,
    OperandType,
    OutputShape,
    PreparedModel,
    dimensions_at_execution,
    is_fully_specified,
    is_quantized_type,
    numpy_dtype,
    operand_byte_size,
    truth_value_outputs,
    undefined_outputs,
)
from harness.api.memory import Memory, MemoryMapError
from harness.judging.culprit import reported_example, rule_of_wrong_output
from harness.judging.distributions import random_outputs, samples_mismatch
from harness.judging.scenario import MemorySpec, Scenario
from harness.service.proxies import begin_call

__all__ = ["Outcome", "assert_conforms", "assert_scenario_conforms", "checking", "describe_scenario", "execute_on_both", "execute_scenario",
           "expect_status", "run_on_both", "run_scenario"]

#: Rules for which SPEC accepts any error status, not one exact status: handle defects (CHOICE-1).
_ANY_ERROR_RULES = {"POOL-4", "POOL-5", "POOL-3"}
_ANY_ERROR = frozenset(status for status in ErrorStatus if status != ErrorStatus.NONE)


class Stage(enum.StrEnum):
    """Where a scenario's call failed (or ended): the model's preparation, or the execution;
    a lockstep step's single call is CALL."""

    PREPARE = "prepare"
    EXECUTE = "execute"
    CALL = "call"


@dataclass
class Outcome:
    """What one driver did with one scenario."""

    stage: Stage
    status: ErrorStatus = ErrorStatus.NONE
    message: str = ""
    output_shapes: tuple[OutputShape, ...] = ()
    outputs: tuple[bytes | None, ...] = ()
    pools_after: tuple[bytes, ...] = field(default=(), repr=False)
    shape_problem: str = ""  # a success whose outputShapes SPEC does not allow (CHOICE-4)
    # Where the driver wrote into the client's constant pools (`constant_pool_change`): "" if nowhere.
    constants_changed: str = ""
    rule: str = ""  # the SPEC rule that decided a failure (DriverError.rule), when the driver says
    # For the reference's successes: the outputs of the same model run on magnitudes, computed
    # only when a float comparison needs them (harness.judging.bounds, CHOICE-7).
    magnitudes: Callable[[], tuple[bytes | None, ...] | None] | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == ErrorStatus.NONE

    def acceptable_statuses(self) -> frozenset[ErrorStatus]:
        if self.rule in _ANY_ERROR_RULES:
            return _ANY_ERROR
        return frozenset({self.status})

    def summary(self) -> str:
        if self.ok:
            return f"success, output shapes {[s.dimensions for s in self.output_shapes]}"
        shapes = f", output shapes {[(s.dimensions, s.is_sufficient) for s in self.output_shapes]}" if self.output_shapes else ""
        return f"{self.status.name} at {self.stage}{shapes}: {self.message}"


def run_scenario(device: Device, scenario: Scenario, tokens: Mapping[str, int] | None = None) -> Outcome:
    """Prepare the scenario's model and execute its request on ``device``, with fresh memories."""
    return _Run(_scenario_steps(device, scenario, tokens)).complete()


def run_on_both(reference: Device, driver: Device, scenario: Scenario) -> tuple[Outcome, Outcome]:
    """`run_scenario` on the reference and on the driver, call by call side by side: each of the
    driver's calls is sent first, the reference makes the same call in process meanwhile, then
    the driver's reply is read.  A driver in its own service works while the reference does,
    on the other core, and its reply is usually waiting when it is read.  (The reference on a
    thread instead was measured slower: it holds the GIL the waiting call needs for its reply.)"""
    return _side_by_side(_scenario_steps(reference, scenario, None), _scenario_steps(driver, scenario, None))


def execute_on_both(reference: PreparedModel, driver: PreparedModel, scenario: Scenario,
                    reference_tokens: Mapping[str, int] | None = None,
                    driver_tokens: Mapping[str, int] | None = None) -> tuple[Outcome, Outcome]:
    """`execute_scenario` on both prepared models, side by side like `run_on_both`."""
    return _side_by_side(_execution_steps(reference, scenario, reference_tokens),
                         _execution_steps(driver, scenario, driver_tokens))


def _side_by_side(expected_steps: _Steps, actual_steps: _Steps) -> tuple[Outcome, Outcome]:
    actual = _Run(actual_steps)  # started first: its first call is on its way
    try:
        expected = _Run(expected_steps)
        try:
            while not (expected.done and actual.done):
                if not expected.done:
                    expected.advance()
                if not actual.done:
                    actual.advance()
        finally:
            expected.close()
    finally:
        actual.close()
    assert expected.outcome is not None and actual.outcome is not None
    return expected.outcome, actual.outcome


_Steps = Generator[Callable[[], Any], Any, Outcome]


class _Run:
    """One device's run of a scenario (a `_Steps` generator), advanced one call at a time."""

    __slots__ = ("_steps", "call", "outcome")

    def __init__(self, steps: _Steps) -> None:
        self._steps = steps
        self.call: Callable[[], Any] | None = None
        self.outcome: Outcome | None = None
        self._resume(steps.send, None)

    @property
    def done(self) -> bool:
        return self.call is None

    def advance(self) -> None:
        """Finish (or make) the pending call, and run on to the next call or the outcome."""
        assert self.call is not None
        try:
            result = self.call()
        except Exception as error:  # thrown into the run: it judges a DriverError, anything else ends it
            self._resume(self._steps.throw, error)
        else:
            self._resume(self._steps.send, result)

    def complete(self) -> Outcome:
        while not self.done:
            self.advance()
        assert self.outcome is not None
        return self.outcome

    def close(self) -> None:
        self._steps.close()

    def _resume(self, resume: Callable[[Any], Callable[[], Any]], value: Any) -> None:
        try:
            self.call = resume(value)
        except StopIteration as end:
            self.call, self.outcome = None, end.value


def _scenario_steps(device: Device, scenario: Scenario, tokens: Mapping[str, int] | None) -> _Steps:
    """`run_scenario`'s work, yielding each call to the device as it is begun (`begin_call`)
    and receiving its result, or what it raised, thrown in."""
    model = scenario.build_model()
    try:
        try:
            prepared = yield begin_call(device, "prepare_model", model)
        except DriverError as error:
            return Outcome(Stage.PREPARE, error.status, error.message, rule=error.rule,
                           constants_changed=constant_pool_change(scenario, model.pools))
        for _ in range(scenario.executions - 1):  # the runs before the last (`Scenario.executions`)
            yield from _execution_steps(prepared, scenario, tokens)
        outcome = yield from _execution_steps(prepared, scenario, tokens)
        outcome.constants_changed = constant_pool_change(scenario, model.pools)
        if outcome.ok and tokens is None:
            outcome.magnitudes = functools.partial(_magnitude_outputs, device, scenario)
        return outcome
    except DriverFault as fault:
        # A crash or hang is a failure of this scenario: carry it, so a reproducer is written.
        if fault.scenario is None:
            fault.scenario = scenario  # the crash or hang is reproduced by this scenario
        raise
    finally:
        for pool in model.pools:
            pool.close()


@contextmanager
def checking(requirement: str) -> Iterator[None]:
    """Calls in the block are made to check ``requirement``: a crash or a hang of one breaks it
    (`DriverFault.checking`), where it would otherwise fail every requirement the test names."""
    try:
        yield
    except DriverFault as fault:
        fault.checking = fault.checking or requirement
        raise


def assert_scenario_conforms(requirement: str, scenario: Scenario, reference: Device, driver: Device,
                             attributed: bool = True) -> None:
    """Run ``scenario`` on the reference and on the driver; the driver's outcome is one SPEC allows.
    ``attributed``: whether a wrong value may fail the rule `culprit` finds (`assert_conforms`);
    not where what the driver kept from an earlier model is on trial, which culprit's own runs on
    the same driver would carry too."""
    __tracebackhide__ = True
    with checking(requirement):
        expected, actual = run_on_both(reference, driver, scenario)
    assert_conforms(requirement, scenario, expected, actual, devices=(reference, driver) if attributed else None)


def execute_scenario(prepared: PreparedModel, scenario: Scenario, tokens: Mapping[str, int] | None = None) -> Outcome:
    """Execute the scenario's request (fresh memories; `TokenRef` pools from ``tokens``)."""
    return _Run(_execution_steps(prepared, scenario, tokens)).complete()


def _execution_steps(prepared: PreparedModel, scenario: Scenario, tokens: Mapping[str, int] | None) -> _Steps:
    request, memories = scenario.build_request(tokens)
    try:
        try:
            result = yield begin_call(prepared, "execute", request)
        except DriverError as error:
            return Outcome(Stage.EXECUTE, error.status, error.message, _as_tuples(error.output_shapes),
                           pools_after=_read_pools(scenario, memories), rule=error.rule)
        pools_after = _read_pools(scenario, memories)
        _check_result(result, scenario)
    finally:
        for memory in memories:
            if memory is not None:
                memory.close()
    shapes = _as_tuples(result.output_shapes)
    if not shapes and scenario.outputs:
        # CHOICE-4: empty outputShapes on success means "every output is as specified"; that is
        # only possible when every output's dimensions are fully known at execution.
        specified = _specified_output_shapes(scenario)
        if specified is None:
            return Outcome(Stage.EXECUTE, ErrorStatus.NONE, "", (), (), pools_after,
                           shape_problem="outputShapes is empty although an output's dimensions are not fully "
                                         "specified at execution (CHOICE-4 allows it only when they all are)")
        shapes = specified
    elif len(shapes) != len(scenario.outputs):
        return Outcome(Stage.EXECUTE, ErrorStatus.NONE, "", shapes, (), pools_after,
                       shape_problem=f"outputShapes has {len(shapes)} entries for {len(scenario.outputs)} outputs")
    outputs = []
    for argument, shape, index in zip(scenario.outputs, shapes, scenario.subgraph.output_indexes):
        operand = scenario.subgraph.operands[index]
        loc = argument.location
        nbytes = operand_byte_size(operand.type, tuple(shape.dimensions))
        is_memory = not argument.has_no_value and isinstance(scenario.request_pools[loc.pool_index], MemorySpec)
        outputs.append(pools_after[loc.pool_index][loc.offset : loc.offset + nbytes] if is_memory else None)
    return Outcome(Stage.EXECUTE, ErrorStatus.NONE, "", shapes, tuple(outputs), pools_after)


def _as_tuples(shapes: Sequence[OutputShape] | None) -> tuple[OutputShape, ...]:
    """Output shapes with their dimensions as tuples: SPEC's dimensions are a sequence, and a driver
    that reports [1, 1] reports what one reporting (1, 1) does."""
    return tuple(OutputShape(tuple(s.dimensions), s.is_sufficient)
                 if isinstance(s, OutputShape) and isinstance(s.dimensions, (list, tuple)) else s for s in shapes or ())


def _check_result(result: object, scenario: Scenario) -> None:
    """A success must be an ExecutionResult whose output shapes are OutputShapes: anything else
    is a conformance failure naming the call and what came back, not a crash of the judge."""
    if not isinstance(result, ExecutionResult):
        raise ConformanceError(f"[POOL-2] PreparedModel.execute returned {type(result).__name__} ({result!r:.100}); "
                               f"SPEC requires an ExecutionResult", requirement="POOL-2", scenario=scenario)
    shapes = result.output_shapes
    if not isinstance(shapes, (tuple, list)) or not all(isinstance(s, OutputShape) for s in shapes):
        raise ConformanceError(f"[POOL-2] PreparedModel.execute returned outputShapes {shapes!r:.100}; SPEC requires "
                               f"a sequence of OutputShape", requirement="POOL-2", scenario=scenario)


def _magnitude_outputs(device: Device, scenario: Scenario) -> tuple[bytes | None, ...] | None:
    magnitudes = bounds.magnitude_scenario(scenario)
    if magnitudes is None:
        return None
    outcome = run_scenario(device, magnitudes)
    return outcome.outputs if outcome.ok else None


def _specified_output_shapes(scenario: Scenario) -> tuple[OutputShape, ...] | None:
    """Each output's dimensions from the model and the request, when all are fully specified."""
    shapes = []
    for argument, index in zip(scenario.outputs, scenario.subgraph.output_indexes):
        operand = scenario.subgraph.operands[index]
        dims = dimensions_at_execution(operand.dimensions, argument.dimensions)
        if not is_fully_specified(operand.type, dims):
            return None
        shapes.append(OutputShape(dims, True))
    return tuple(shapes)


def _read_pools(scenario: Scenario, memories) -> tuple[bytes, ...]:
    """Pool contents after the call; pools built with a defect have none to compare."""
    return tuple(
        m.read() if m is not None and isinstance(spec, MemorySpec) and not spec.defect else b""
        for spec, m in zip(scenario.request_pools, memories)
    )


def describe_scenario(scenario: Scenario) -> str:
    """A compact human-readable account of a scenario, for failure messages."""
    sub = scenario.subgraph
    lines = [f"scenario: {', '.join(scenario.notes) or 'model'}"]
    for i, operand in enumerate(sub.operands):
        quant = f" scale={operand.scale} zp={operand.zero_point}" if operand.scale or operand.zero_point else ""
        lines.append(f"  operand {i}: {operand.type.name} dims={operand.dimensions} {operand.lifetime.name}{quant}")
    for operation in sub.operations:
        lines.append(f"  {operation.type.name}{operation.inputs} -> {operation.outputs}")
    for name, pools in (("constant pool", scenario.constant_pools), ("request pool", scenario.request_pools)):
        for i, pool in enumerate(pools):
            if isinstance(pool, MemorySpec):
                defect = f" (defect: {pool.defect})" if pool.defect else ""
                lines.append(f"  {name} {i}: {pool.kind}, {pool.size} bytes{defect}")
            else:
                lines.append(f"  {name} {i}: token {pool!r}")
    for name, args in (("input", scenario.inputs), ("output", scenario.outputs)):
        for i, arg in enumerate(args):
            loc = arg.location
            lines.append(f"  {name} {i}: pool {loc.pool_index} offset {loc.offset} length {loc.length} "
                         f"padding {loc.padding} dims {arg.dimensions}{' (no value)' if arg.has_no_value else ''}")
    return "\n".join(lines)


def _fail(requirement: str, what: str, scenario: Scenario, expected: Outcome, actual: Outcome) -> None:
    __tracebackhide__ = True
    raise ConformanceError(
        f"[{requirement}] {what}\n"
        f"  reference:          {expected.summary()}\n"
        f"  driver under test:  {actual.summary()}\n"
        f"{describe_scenario(scenario)}",
        requirement=requirement, scenario=scenario,  # for the record and the reproducer printer
    )


def compare_values(operand_type: OperandType, expected: bytes, actual: bytes, *, steps: int = 1, terms: int = 1,
                   magnitudes: Callable[[], bytes | None] | None = None, judge_bias: bool = False,
                   relaxed: bool = False, truth: bool = False) -> str:
    """Empty when ``actual`` is within what CHOICE-7 allows of ``expected``; otherwise the first
    element outside it and why.  ``steps``: quantized tolerance; ``terms`` and ``magnitudes``
    (the sum of |terms| per element, computed on demand): the float error bound.  ``judge_bias``:
    the values come from a uniform sample (`Scenario.sampled_values`), so a quantized tensor's mean
    signed error is judged too.  ``relaxed``: the model lets TENSOR_FLOAT32 be computed in float16
    (`bounds.float_format`); an element whose terms reach past float16's range is then not judged,
    as float16 has no value for it.  ``truth``: the bytes are truth values (`truth_value_outputs`),
    equal when both are zero or both are not."""
    dtype = np.dtype(numpy_dtype(operand_type))
    want = np.frombuffer(expected, dtype)
    got = np.frombuffer(actual, dtype)
    if want.shape != got.shape:
        return f"{got.size} elements written, {want.size} expected"
    if truth:
        bad = (want != 0) != (got != 0)
        allowed = "as truth values (any non-zero byte is True)"
    elif is_quantized_type(operand_type):
        error = got.astype(np.int64) - want.astype(np.int64)
        bad = np.abs(error) > steps
        info = np.iinfo(dtype)
        rounded = (want != info.min) & (want != info.max)  # saturated elements say nothing about rounding
        if judge_bias and not bad.any() and int(rounded.sum()) >= bounds.BIAS_MIN_ELEMENTS:
            bias = float(np.clip(error[rounded], -1, 1).mean())
            if abs(bias) > bounds.BIAS_LIMIT:
                return (f"systematic rounding error: the mean signed error over {int(rounded.sum())} unsaturated elements "
                        f"is {bias:+.3f} steps (at most {bounds.BIAS_LIMIT} allowed); {int((error != 0).sum())} elements differ")
        allowed = f"{steps} step{'s' if steps > 1 else ''}"
    elif operand_type in bounds.FLOAT_TYPES:
        w, g = want.astype(np.float64), got.astype(np.float64)
        same = (w == g) | (np.isnan(w) & np.isnan(g))
        if same.all():
            return ""
        computed_in = bounds.float_format(operand_type, relaxed)
        eps, tiny = float(computed_in.eps), float(computed_in.tiny)
        magnitude_bytes = magnitudes() if magnitudes is not None else None
        if magnitude_bytes is not None and len(magnitude_bytes) == len(expected):
            magnitude = np.abs(np.frombuffer(magnitude_bytes, dtype).astype(np.float64))
        else:  # the terms are not known (a driver-managed input): bound by the result, generously
            magnitude, terms = np.abs(w), 4 * terms
        bound = terms * eps * magnitude + eps * np.abs(w) + tiny
        with np.errstate(invalid="ignore"):
            bad = ~(same | (np.abs(g - w) <= bound))
            if computed_in.max < np.finfo(dtype).max:  # past the narrower format's range it has no value
                bad &= ~((magnitude > computed_in.max) | (np.abs(w) > computed_in.max))  # NaN stays judged
        allowed = f"{terms} terms x eps({computed_in.dtype}) x sum of |terms|"
    else:
        bad = want != got
        allowed = "exact"
    if not bad.any():
        return ""
    i = int(np.flatnonzero(bad)[0])
    return f"element {i}: driver wrote {got[i]!r}, reference {want[i]!r} ({int(bad.sum())} elements outside {allowed})"


def assert_conforms(requirement: str, scenario: Scenario, expected: Outcome, actual: Outcome,
                    devices: tuple[Device, Device] | None = None,
                    buffers: Callable[[], Mapping[str, tuple[bytes, tuple[int, ...]]]] | None = None) -> None:
    """The driver's outcome is one SPEC allows, given the reference's.  ``requirement`` is the
    test's; a byte written outside the outputs fails POOL-2 whatever it is, and, given the
    (reference, driver) ``devices``, a wrong output value fails the rule `culprit` finds it breaks.
    A test of what one prepared model or one device keeps between runs gives no ``devices`` after
    its first run: culprit's plain run prepares afresh (losing what an execution left behind) on
    the same driver (keeping what a model left behind), so it cannot tell what broke.  ``buffers``:
    what the scenario's driver-managed buffers hold on the reference, for that plain run (asked
    only when an output is wrong)."""
    __tracebackhide__ = True
    if actual.constants_changed:
        _fail("POOL-2", f"the driver wrote into the client's constant pool: {actual.constants_changed}", scenario,
              expected, actual)
    if not expected.ok:
        if actual.ok:
            _fail(requirement, f"the driver succeeded; SPEC requires {expected.status.name} ({expected.rule or 'see reference'})",
                  scenario, expected, actual)
        if actual.status not in expected.acceptable_statuses():
            allowed = " or ".join(sorted(s.name for s in expected.acceptable_statuses()))
            _fail(requirement, f"wrong status {actual.status.name}; SPEC requires {allowed}", scenario, expected, actual)
        if actual.stage != expected.stage:
            _fail(requirement, f"failed at {actual.stage}; SPEC requires failure at {expected.stage}", scenario, expected, actual)
        if expected.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
            for i, (needed, reported) in enumerate(zip(expected.output_shapes, actual.output_shapes)):
                if not needed.is_sufficient and (reported.dimensions, reported.is_sufficient) != (needed.dimensions, False):
                    # a size the data decides (NMS's kept boxes) may be wrong because the values are: asked with
                    # room for both sizes, the culprit tells a wrong computation (OPS-1) from a wrong report
                    _fail_on_output("DOM-DYN-2", f"output {i}: insufficient output must report its needed dimensions "
                                    f"{needed.dimensions} with isSufficient=false, got {reported}", scenario, expected,
                                    actual, devices, buffers, room=_room(scenario, expected, actual))
                if needed.is_sufficient and not reported.is_sufficient:  # the client would grow a region that holds it
                    _fail("DOM-DYN-2", f"output {i}: its region holds its {needed.dimensions}, yet it is reported "
                          f"with isSufficient=false ({reported})", scenario, expected, actual)
            if len(actual.output_shapes) != len(expected.output_shapes):
                _fail("DOM-DYN-2", "OUTPUT_INSUFFICIENT_SIZE must carry one output shape per output", scenario, expected, actual)
        if actual.stage == Stage.EXECUTE and actual.pools_after:
            assert_outside_outputs_untouched(scenario, actual)  # a failed execution writes nothing outside its outputs
        return
    if not actual.ok:
        if _unused_defective_pool_explains(scenario, actual):
            return  # CHOICE-2: a driver may validate a pool nothing uses, and then fail as POOL-4 says
        _fail_on_output(requirement, "the driver failed a valid request", scenario, expected, actual, devices, buffers)
    if actual.shape_problem:
        _fail(requirement, actual.shape_problem, scenario, expected, actual)
    want_shapes = [s.dimensions for s in expected.output_shapes]
    got_shapes = [tuple(s.dimensions) for s in actual.output_shapes]
    if want_shapes != got_shapes:
        _fail_on_output(requirement, f"output shapes {got_shapes}, reference {want_shapes}", scenario, expected, actual,
                        devices, buffers)
    assert_outside_outputs_untouched(scenario, actual)  # before the values: a stray write explains wrong ones
    steps = bounds.quantized_tolerances(scenario)
    terms = bounds.terms_in_model(scenario)
    truths, randoms = truth_value_outputs(scenario.subgraph), random_outputs(scenario.subgraph)
    undefined = undefined_outputs(scenario.subgraph)  # LSTM's scratch buffer: any content is right
    magnitudes = functools.cache(expected.magnitudes) if expected.magnitudes is not None else None
    for i, (want, got, index) in enumerate(zip(expected.outputs, actual.outputs, scenario.subgraph.output_indexes)):
        if want is None or index in undefined:
            continue
        if index in randoms:  # samples: their distribution is NNAPI's, their values the driver's
            difference = samples_mismatch(scenario, index, got or b"")
            if difference:
                _fail_on_output(requirement, f"output {i}'s samples do not follow their distribution: {difference}",
                                scenario, expected, actual, devices, buffers)
            continue
        difference = compare_values(scenario.subgraph.operands[index].type, want, got or b"", steps=steps.get(index, 1),
                                    terms=terms, magnitudes=functools.partial(_nth, magnitudes, i),
                                    judge_bias=scenario.sampled_values, relaxed=scenario.relaxed,
                                    truth=index in truths)
        if difference:
            _fail_on_output(requirement, f"output {i} differs: {difference}", scenario, expected, actual, devices, buffers)


def _fail_on_output(requirement: str, what: str, scenario: Scenario, expected: Outcome, actual: Outcome,
                    devices: tuple[Device, Device] | None,
                    buffers: Callable[[], Mapping[str, tuple[bytes, tuple[int, ...]]]] | None = None,
                    room: Sequence[int] = ()) -> None:
    """Fail a wrong output of a valid request on the rule it breaks (`culprit`), given ``devices``;
    ``room``: bytes each output's region holds at least in culprit's plain run."""
    __tracebackhide__ = True
    rule, why = ((requirement, "") if not devices or not reported_example() else
                 rule_of_wrong_output(requirement, scenario, *devices, buffers() if buffers else None, room))
    _fail(rule, what + (f"\n  why {rule}: {why}" if why else ""), scenario, expected, actual)


#: The most bytes culprit's plain run gives an output whose size a driver reported (a wrong report may be huge).
_MOST_ROOM = 1 << 20


def _room(scenario: Scenario, expected: Outcome, actual: Outcome) -> tuple[int, ...]:
    """Per output, bytes for the larger of the sizes the reference and the driver say it needs."""
    room = []
    for i, index in enumerate(scenario.subgraph.output_indexes):
        operand_type = scenario.subgraph.operands[index].type
        sizes = [0]
        for outcome in (expected, actual):
            shape = outcome.output_shapes[i] if i < len(outcome.output_shapes) else None
            dims = tuple(getattr(shape, "dimensions", ()) or ())
            if dims and all(isinstance(d, int) and d > 0 for d in dims):
                sizes.append(min(operand_byte_size(operand_type, dims), _MOST_ROOM))
        room.append(max(sizes))
    return tuple(room)


def _nth(outputs: Callable[[], tuple[bytes | None, ...] | None] | None, index: int) -> bytes | None:
    """Output ``index`` of a lazily computed set of outputs (None when there is none)."""
    computed = outputs() if outputs is not None else None
    return computed[index] if computed is not None and index < len(computed) else None


def _unused_defective_pool_explains(scenario: Scenario, actual: Outcome) -> bool:
    """Whether an unusable pool that nothing references explains the failure: a constant pool
    at preparation, a request pool at execution (CHOICE-2)."""
    if actual.stage == Stage.PREPARE:
        used = {o.location.pool_index for o in scenario.subgraph.operands if o.lifetime == OperandLifeTime.CONSTANT_REFERENCE}
        pools = scenario.constant_pools
    else:
        used = {a.location.pool_index for a in (*scenario.inputs, *scenario.outputs) if not a.has_no_value}
        pools = scenario.request_pools  # type: ignore[assignment]
    return any(isinstance(pool, MemorySpec) and pool.defect and index not in used for index, pool in enumerate(pools))


def constant_pool_change(scenario: Scenario, pools: Sequence[Memory]) -> str:
    """POOL-2: a driver writes nothing but its outputs, and a model's constant pools are the
    client's (one pool often holds the weights of several models).  Where the first pool whose
    bytes are not what the client wrote differs, or "" where every pool is as written."""
    for index, (spec, pool) in enumerate(zip(scenario.constant_pools, pools)):
        change = written_over(spec, pool)
        if change:
            return f"constant pool {index} ({spec.kind}): {change}"
    return ""


def written_over(spec: MemorySpec, memory: Memory) -> str:
    """Where ``memory``'s bytes differ from what the client wrote in it (``spec``), or "" where
    they do not (or the handle was made unusable on purpose, or is closed)."""
    if spec.defect or memory.closed:
        return ""
    try:
        now = np.frombuffer(memory.read(), np.uint8)
    except MemoryMapError as error:  # the driver shrank it, or replaced its file
        return f"it can no longer be read whole: {error}"
    before = np.frombuffer(spec.content, np.uint8)
    if now.size != before.size:
        return f"it holds {now.size} bytes, {before.size} were written"
    changed = now != before
    return _first_change(before, now, changed) if changed.any() else ""


def _first_change(before: np.ndarray, now: np.ndarray, changed: np.ndarray, where: str = "") -> str:
    """The first byte ``changed`` marks, with both its values, and how many it marks."""
    at = int(np.flatnonzero(changed)[0])
    return f"byte {at}{where} changed from {before[at]:#04x} to {now[at]:#04x} ({int(changed.sum())} bytes changed)"


def assert_outside_outputs_untouched(scenario: Scenario, actual: Outcome) -> None:
    """POOL-2: every byte of every request pool outside output regions is as it was.

    An output's region is [offset, offset + length + padding): the padding is there for a device
    that accesses memory in chunks, and a driver may overwrite it (CHOICE-3)."""
    __tracebackhide__ = True
    for index, (spec, after) in enumerate(zip(scenario.request_pools, actual.pools_after)):
        if not isinstance(spec, MemorySpec) or spec.defect or len(after) != spec.size:
            continue
        before = np.frombuffer(spec.content, np.uint8)
        now = np.frombuffer(after, np.uint8)
        changed = before != now
        for arg in scenario.outputs:
            if arg.location.pool_index == index and not arg.has_no_value:
                changed[arg.location.offset : arg.location.offset + arg.location.length + arg.location.padding] = False
        if changed.any():
            raise ConformanceError(
                f"[POOL-2] request pool {index} ({spec.kind}) "
                f"{_first_change(before, now, changed, ' outside every output region')}\n{describe_scenario(scenario)}",
                requirement="POOL-2", scenario=scenario)


@contextmanager
def expect_status(*statuses: ErrorStatus, rule: str = "", call: str = "") -> Iterator[pytest.ExceptionInfo[DriverError]]:
    """The block must fail with a DriverError carrying one of ``statuses``."""
    __tracebackhide__ = True
    wanted = " or ".join(s.name for s in statuses)
    context = f"[{rule}] " if rule else ""
    with pytest.raises(DriverError) as info:
        yield info
        raise ConformanceError(f"{context}{call or 'the call'} succeeded; SPEC requires {wanted}")
    if info.value.status not in statuses:
        raise ConformanceError(f"{context}{call or 'the call'} failed with {info.value}; SPEC requires {wanted}")
