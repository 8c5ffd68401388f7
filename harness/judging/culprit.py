"""Which rule a wrong output (its values, its shape, or a failure of a valid request) breaks,
whatever the theme of the test that saw it.

A test of handles (POOL-5) or of layouts (POOL-2) that reads a wrong value back has not by
itself found a handle or a layout bug: the driver may compute the operation wrong everywhere.
`rule_of_wrong_output` tells them apart with one more run of the same model on both devices,
*plainly*: its constants as copies, each argument alone in a fresh pool at offset 0 with no
padding, each output's region filled beforehand with `CANARY` bytes.

- the plain run is right: the value came wrong through how the operands travel.  When the same
  run with its constants as copies (the request as it was) is right too in a test of constants
  or layouts (POOL-1, POOL-2), constants read from a pool are the cause, POOL-1 (`CONSTANT_RULE`); otherwise the
  test's own requirement (the kinds or handles it varies), or POOL-2 for a test of constants
  whose request's layout is the cause;
- the plain run leaves output bytes as the canary where the reference wrote values: the driver
  does not deliver that output through its region, POOL-2 (`OUTPUT_RULE`);
- the plain run is wrong too: the operation computes wrong values, `VALUE_RULE`.

An argument in a driver-managed buffer travels plainly too, as the bytes the reference's buffer
holds (the memory-domain lockstep gives them); a right plain run then leaves the test's rule (the
buffer's handling is the cause).  Anything else (the plain run fails, crashes or is not built: a
buffer whose contents are not given) leaves the test's requirement: nothing shows that another
rule is the one broken.

The extra runs are made once per failure: for the example a test reports (hypothesis' final run
of it), never for each example hypothesis tries while it shrinks, where they would multiply a
failing driver's run time.  Shrinking keeps the failure's type and place, which they do not change.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

import numpy as np

from harness.api.errors import ConformanceError
from harness.api.hal import DataLocation, Device, RequestArgument, numpy_dtype, truth_value_outputs
from harness.api.requirements import CONSTANT_RULE, OUTPUT_RULE, VALUE_RULE
from harness.judging import bounds
from harness.judging.distributions import random_outputs, samples_mismatch
from harness.judging.scenario import MemorySpec, Scenario, TokenRef, with_constants

__all__ = ["CANARY", "plain_scenario", "reported_example", "rule_of_wrong_output"]

#: What an output's region holds before the plain run: a byte no kernel of the reference writes
#: as a whole element of any type by chance (0xa5a5a5a5 as float32 is about -2.9e-16).
CANARY: Final = 0xA5


def plain_scenario(scenario: Scenario, buffers: Mapping[str, tuple[bytes, tuple[int, ...]]] | None = None,
                   room: Sequence[int] = ()) -> Scenario | None:
    """``scenario``'s model and input values, plainly laid out (see the module), or None when its
    request has no plain form: an argument in a driver-managed buffer whose contents ``buffers``
    (name -> the reference's bytes and dimensions of it) does not give.  Pools the test made
    unusable are left out or made afresh: the plain run asks what the model computes.  ``room``:
    bytes each output's region holds at least (an output of data-dependent size given too little)."""
    held = buffers or {}
    pools: list[MemorySpec] = []

    def region(argument: RequestArgument) -> tuple[bytes, tuple[int, ...]] | None:
        location = argument.location
        source = scenario.request_pools[location.pool_index]
        if isinstance(source, MemorySpec):
            return source.content[location.offset: location.offset + location.length], tuple(argument.dimensions)
        if isinstance(source, TokenRef) and source.buffer in held:
            content, dimensions = held[source.buffer]
            return content, tuple(argument.dimensions) or dimensions
        return None

    def alone(argument: RequestArgument, output: int | None) -> RequestArgument | None:
        if argument.has_no_value:
            return RequestArgument(True, DataLocation(), argument.dimensions)
        found = region(argument)
        if found is None:
            return None
        content, dimensions = found
        if output is not None:
            content = bytes([CANARY]) * max(len(content), room[output] if output < len(room) else 0)
        pools.append(MemorySpec("ashmem", content))
        return RequestArgument(False, DataLocation(len(pools) - 1, 0, len(content), 0), dimensions)

    inputs = [alone(argument, None) for argument in scenario.inputs]
    outputs = [alone(argument, i) for i, argument in enumerate(scenario.outputs)]
    plain_inputs = tuple(argument for argument in inputs if argument is not None)
    plain_outputs = tuple(argument for argument in outputs if argument is not None)
    if len(plain_inputs) < len(inputs) or len(plain_outputs) < len(outputs):
        return None
    return replace(with_constants(scenario, "copy"), inputs=plain_inputs, outputs=plain_outputs,
                   request_pools=tuple(pools), executions=1, notes=(*scenario.notes, "plain I/O"))


def reported_example() -> bool:
    """Whether the running example is one a test reports: outside hypothesis, or its final run."""
    # imported here: `harness certify` imports this module before pytest loads hypothesis' plugin,
    # which then could not be rewritten and would warn in every certify run
    from hypothesis.control import current_build_context, currently_in_test_context

    return not currently_in_test_context() or current_build_context().is_final


def rule_of_wrong_output(requirement: str, scenario: Scenario, reference: Device, driver: Device,
                         buffers: Mapping[str, tuple[bytes, tuple[int, ...]]] | None = None,
                         room: Sequence[int] = ()) -> tuple[str, str]:
    """The rule a wrong output of ``scenario`` breaks (``requirement``: the test's), and why;
    ``buffers``: what its driver-managed buffers hold, ``room``: the bytes each output's region
    holds at least in the plain run (`plain_scenario`)."""
    plain = plain_scenario(scenario, buffers, room)
    if plain is None:
        return requirement, ""
    verdict = _first_wrong_output(plain, reference, driver)
    if verdict is None:
        return requirement, ""
    if verdict != _RIGHT:
        return verdict
    request = "the difference comes from how this request's pools and layout are handled"
    if requirement in (CONSTANT_RULE, OUTPUT_RULE) and not buffers and scenario.constant_pools and _first_wrong_output(with_constants(scenario, "copy"), reference, driver) == _RIGHT:
        return CONSTANT_RULE, (f"{_PLAIN} every output is right, and so is this request with its constants as "
                               f"copies: the constants read from a pool are the cause")
    return (OUTPUT_RULE if requirement == CONSTANT_RULE else requirement), f"{_PLAIN} every output is right: {request}"


_PLAIN = "with plain I/O (constants as copies, each argument alone at offset 0)"
#: What `_first_wrong_output` says of a run whose every output is right.
_RIGHT = ("", "")


def _first_wrong_output(scenario: Scenario, reference: Device, driver: Device) -> tuple[str, str] | None:
    """The rule and why of the first wrong output of ``scenario`` on ``driver``; `_RIGHT` when every
    output is right; None when the run says nothing of the values (a failure, a crash, a shape)."""
    from harness.judging.oracle import compare_values, run_on_both  # the oracle asks this module

    try:
        expected, actual = run_on_both(reference, driver, scenario)
    except ConformanceError:  # a crash or a hang of the plain run: the test's own failure stands
        return None
    if not expected.ok or actual.shape_problem:
        return None
    if not actual.ok:
        return VALUE_RULE, f"{_PLAIN} too, the driver fails the valid request: {actual.summary()}"
    want_shapes = [s.dimensions for s in expected.output_shapes]
    got_shapes = [tuple(s.dimensions) for s in actual.output_shapes]
    if sorted(want_shapes) == sorted(got_shapes) and want_shapes != got_shapes:
        return None  # the right shapes reported out of order: how results are reported, not computed
    if want_shapes != got_shapes:
        return VALUE_RULE, f"{_PLAIN} too, output shapes {got_shapes}, reference {want_shapes}"
    steps, terms = bounds.quantized_tolerances(scenario), bounds.terms_in_model(scenario)
    truths, randoms = truth_value_outputs(scenario.subgraph), random_outputs(scenario.subgraph)
    for i, (want, got, index) in enumerate(zip(expected.outputs, actual.outputs, scenario.subgraph.output_indexes)):
        if want is None or got is None:
            continue
        operand_type = scenario.subgraph.operands[index].type
        magnitudes = functools.partial(_nth, expected, i)
        # samples differ between correct drivers: only their distribution is judged
        difference = samples_mismatch(scenario, index, got) if index in randoms else compare_values(
            operand_type, want, got, steps=steps.get(index, 1), terms=terms, magnitudes=magnitudes,
            judge_bias=scenario.sampled_values, relaxed=scenario.relaxed, truth=index in truths)
        if not difference:
            continue
        if _unwritten(np.dtype(numpy_dtype(operand_type)).itemsize, want, got):
            return OUTPUT_RULE, (f"{_PLAIN} too, output {i} keeps the bytes its region held before the "
                                 f"execution where the reference wrote values: the driver does not write it")
        return VALUE_RULE, f"{_PLAIN} too, output {i} differs: {difference}"
    return _RIGHT


def _nth(outcome: object, index: int) -> bytes | None:
    magnitudes = getattr(outcome, "magnitudes", None)
    computed = magnitudes() if magnitudes is not None else None
    return computed[index] if computed is not None and index < len(computed) else None


def _unwritten(itemsize: int, want: bytes, got: bytes) -> bool:
    """Whether every element of ``got`` that differs from ``want`` is still all canary bytes."""
    if len(want) != len(got) or not got:
        return False
    expected = np.frombuffer(want, np.uint8).reshape(-1, itemsize)
    actual = np.frombuffer(got, np.uint8).reshape(-1, itemsize)
    differs = (expected != actual).any(axis=1)
    return bool(differs.any()) and bool((actual[differs] == CANARY).all())
