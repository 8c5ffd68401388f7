"""One custom call on the driver, checked: red zones, inputs, status, outputs (SPEC section 5).

The same `CallCase` runs through the driver's executor (in its service, or inline) and
through the target's numpy reference; an assertion names the rule, the case and both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.judging.arena import Arena, changed_leaf, named_leaves
from harness.api.shapes import leaf_values, leaves
from harness.api.custom_calls import CallCase, CustomCallTarget
from harness.api.errors import ConformanceError, calls_into_driver, mark_raised_by_driver
from harness.judging.verdict import violation


@dataclass
class CallOutcome:
    result: tuple                  # what the executor returned: ("ok",), ("failed", ...), ("fault", ...)
    outputs: list[np.ndarray]      # output leaves in pre-order, as the call left them
    red_zones: list[str]           # guard bytes changed around outputs
    inputs_changed: list[str]      # input bytes that changed (the inputs are read-only)
    input_fault: str = ""          # a trapped write into the inputs: where


def describe_case(target: CustomCallTarget, case: CallCase) -> str:
    opaque = case.opaque if len(case.opaque) <= 48 else case.opaque[:48] + b"..."
    return (f"target {target.name!r} on {target.platform} ({target.convention}); operands "
            f"{', '.join(map(str, case.operands)) or 'none'}; output {case.output}; "
            f"opaque {len(case.opaque)} bytes {opaque!r}")


def run_case(executor: Any, target: CustomCallTarget, case: CallCase, operand_values: tuple) -> CallOutcome:
    """Lay out the operands and the output in red-zoned arenas and call the target."""
    in_leaves = named_leaves("operand", case.operands)
    out_leaves = named_leaves("output", [case.output], single=True)
    contents = [np.ascontiguousarray(v).tobytes() for v in leaf_values(tuple(operand_values))]
    inputs, outputs = Arena.create(in_leaves, contents), Arena.create(out_leaves)
    try:
        before = inputs.memory.read()
        result = executor.invoke(target.name, target.platform, inputs.memory, inputs.layout(case.operands),
                                 outputs.memory, outputs.layout([case.output])[0], case.opaque)
        fault = inputs.locate(result[2]) if result[0] == "fault" else ""
        return CallOutcome(result, [outputs.value(i) for i in range(len(out_leaves))], outputs.changed_red_zones(),
                           inputs.changed_leaves(before) + inputs.changed_red_zones(), fault)
    finally:
        inputs.close()
        outputs.close()


class XlaCallFailed(Exception):
    """XLA raised for a call of a target's handler (its error status), where the driver runs."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def call_under_xla(executor: Any, target: CustomCallTarget, case: CallCase, operand_values: tuple) -> list[np.ndarray]:
    """Run ``target``'s typed-FFI handler on ``case`` under jax.jit, through the driver's executor
    (in its service: a handler that crashes is a reported crash); its output leaves in pre-order.
    `XlaCallFailed` (the driver's) when XLA raised; CC-1 when the handler cannot be registered."""
    results = tuple((tuple(leaf.dims), leaf.dtype) for _, leaf in leaves(case.output))
    arguments = [np.asarray(v) for v in leaf_values(tuple(operand_values))]
    reply = executor.under_xla(target.name, target.platform, arguments, results, case.opaque)
    if reply[0] == "unprepared":  # a process new to XLA (the first call, or a replaced service)
        prepared = executor.prepare_xla(target.name, target.platform)
        if prepared[0] != "ok":
            raise violation("CC-1", f"target {target.name!r} cannot be registered with XLA: {prepared[1]}")
        reply = executor.under_xla(target.name, target.platform, arguments, results, case.opaque)
    if reply[0] == "failed":
        raise mark_raised_by_driver(XlaCallFailed(reply[1], reply[2]))
    changed = _operands_changed(case, arguments, reply[2])
    if changed:
        raise _fail("CC-5", target, case, "the handler modified its operands under XLA: " + "; ".join(changed))
    return [np.frombuffer(data, np.dtype(dtype)).reshape(dims) for dims, dtype, data in reply[1]]


def _operands_changed(case: CallCase, sent: list[np.ndarray], held: list[bytes]) -> list[str]:
    """Each operand leaf whose bytes XLA holds after the call are not those sent (CC-5)."""
    found = []
    for (name, leaf), argument, after in zip(named_leaves("operand", case.operands), sent, held):
        before = np.frombuffer(np.ascontiguousarray(argument).tobytes(), np.uint8)
        now = np.frombuffer(after, np.uint8)
        if now.size != before.size:
            found.append(f"{name} ({leaf}) holds {now.size} bytes, {before.size} were sent")
            continue
        changed = np.flatnonzero(now != before)
        if changed.size:
            found.append(changed_leaf(name, leaf, changed))
    return found


def _fail(requirement: str, target: CustomCallTarget, case: CallCase, problem: str) -> ConformanceError:
    return ConformanceError(f"[{requirement}] {problem}\n  case: {describe_case(target, case)}", requirement=requirement)


def assert_call_conforms(requirement: str, target: CustomCallTarget, case: CallCase, operand_values: tuple,
                         outcome: CallOutcome) -> None:
    """CC-5 (nothing written outside outputs, inputs untouched), CC-6 (status), then the
    outputs against the reference under ``requirement`` (CC-2, CC-3 or CC-4)."""
    __tracebackhide__ = True
    if outcome.input_fault:
        raise _fail("CC-5", target, case, f"the target wrote into its read-only input: {outcome.input_fault} "
                                          f"({outcome.result[1]} trapped)")
    if outcome.inputs_changed:
        raise _fail("CC-5", target, case, "the target modified its inputs: " + "; ".join(outcome.inputs_changed))
    if outcome.red_zones:
        raise _fail("CC-5", target, case, "the target wrote outside its output buffers: " + "; ".join(outcome.red_zones))
    kind = outcome.result[0]
    if kind == "unregistered":
        raise _fail("CC-1", target, case, f"the driver's service does not know the declared target: {outcome.result[1]}")
    if target.error is not None:
        expected = calls_into_driver(target.error)(case.opaque)  # the plugin's declaration: its code
        if kind != "failed":
            raise _fail("CC-6", target, case, f"the target reported success; it must fail with {expected!r}")
        message = outcome.result[1].decode("utf-8", "replace")
        if message != expected or outcome.result[2] != len(outcome.result[1]):
            raise _fail("CC-6", target, case, f"failure message differs:\n  reference: {expected!r}\n  driver:    {message!r}")
        return
    if kind == "failed":
        raise _fail("CC-6", target, case, f"the target failed on a case it accepts: {outcome.result[1]!r}")
    compare_outputs(requirement, target, case, operand_values, outcome.outputs)


def flush_subnormals(value: Any) -> Any:
    """``value`` with subnormal floats replaced by zero (tuples nest)."""
    if isinstance(value, tuple):
        return tuple(flush_subnormals(v) for v in value)
    array = np.asarray(value)
    if array.dtype.kind != "f":
        return value
    return np.where(np.abs(array) < np.finfo(array.dtype).tiny, np.copysign(np.zeros_like(array), array), array)


def compare_outputs(requirement: str, target: CustomCallTarget, case: CallCase, operand_values: tuple,
                    outputs: list[np.ndarray], *, denormals_are_zero: bool = False) -> None:
    """Every non-scratch output leaf equals the reference's (NaN equal to NaN).

    ``denormals_are_zero`` models a runtime that computes with subnormals flushed to zero,
    on the way in and on the way out (XLA's CPU runtime does): the reference then sees
    flushed operands, and both sides' outputs are compared flushed."""
    __tracebackhide__ = True
    if denormals_are_zero:
        operand_values, outputs = flush_subnormals(tuple(operand_values)), [flush_subnormals(o) for o in outputs]
    assert target.reference is not None, f"target {target.name!r} has no reference (it always fails)"
    expected_leaves = leaf_values(calls_into_driver(target.reference)(tuple(operand_values), case.opaque))
    if denormals_are_zero:
        expected_leaves = [None if leaf is None else flush_subnormals(leaf) for leaf in expected_leaves]
    scratch = set(target.scratch)
    for (path, leaf), expected, actual in zip(leaves(case.output), expected_leaves, outputs):
        if path in scratch or expected is None:
            continue
        expected = np.asarray(expected, dtype=leaf.dtype).reshape(leaf.dims)
        if not np.array_equal(expected, actual, equal_nan=expected.dtype.kind == "f"):
            differ = np.flatnonzero(expected.reshape(-1) != actual.reshape(-1))
            first = int(differ[0]) if differ.size else 0
            raise _fail(requirement, target, case,
                        f"output{''.join(f'[{k}]' for k in path)} ({leaf}) differs from the reference at "
                        f"{differ.size} element(s); first at element {first}: driver "
                        f"{actual.reshape(-1)[first]!r}, reference {expected.reshape(-1)[first]!r}")
