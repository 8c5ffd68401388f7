"""IF and WHILE, as NeuralNetworks.h (HAL 1.3) defines them: operations that run referenced subgraphs.

IF reads a TENSOR_BOOL8 condition of shape [1] and runs one of two branches (SUBGRAPH operands
naming subgraphs of ``Model.referenced``) on its remaining inputs; the branch's outputs are IF's.
WHILE runs a condition subgraph and, while it outputs true, a body subgraph.  Its inputs after the
two references are m input-output operands (their final values are WHILE's m outputs), k
state-only operands (carried from one iteration to the next, not output) and n input-only
operands (the same every iteration); the body has m + k + n inputs and m + k outputs, the
condition m + k + n inputs and one TENSOR_BOOL8 [1] output.

Every operand passed between an outer operation and a subgraph has the same type, scale, zeroPoint
and per-channel parameters on both sides, and dimensions that agree (an unknown extent or rank on
either side agrees with any); the values' actual shapes flow through at run time.

A WHILE whose condition still says true after the execution's loop timeout is cut off: the
request's ``loop_timeout_ns`` (HAL 1.3's loopTimeoutDuration; at most
``ANeuralNetworks_getMaximumLoopTimeout``, 15 s), or NNAPI's default, `LOOP_TIMEOUT_S`
(``ANeuralNetworks_getDefaultLoopTimeout``, 2 s).  The execution then fails with
MISSED_DEADLINE_TRANSIENT, the status the HAL gives an execution aborted for a deadline it could
not meet when a later one may be met (the next execution may be given other inputs).

The static checks here see one operation's operands only; the checks against the referenced
subgraphs (`referenced_refusal`) and the running of the subgraphs (`run_if`, `run_while`) need the
model, so the device and the executor call them; the table's ``run`` is never called.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar

import numpy as np

from harness.api.hal import DriverError, ErrorStatus, Operand, OperandLifeTime, OperandType, OperationType, Subgraph

from ._numeric import KernelError, Refusal

#: Seconds a WHILE may run before it is cut off: NNAPI's default loop timeout.
LOOP_TIMEOUT_S = 2.0
#: The longest loop timeout NNAPI lets an application ask for.
MAX_LOOP_TIMEOUT_S = 15.0
#: The status of an execution cut off by the loop timeout.
LOOP_TIMEOUT_STATUS = ErrorStatus.MISSED_DEADLINE_TRANSIENT

#: The running execution's loop timeout in seconds, when its request sets one (`loop_timeout`).
_EXECUTION_LOOP_TIMEOUT_S: ContextVar[float | None] = ContextVar("execution_loop_timeout_s", default=None)


@contextlib.contextmanager
def loop_timeout(nanoseconds: int | None) -> Iterator[None]:
    """The loop timeout of the WHILEs run in the block: an execution's ``loop_timeout_ns``, which
    the executor, not each runner, reads from the request."""
    seconds = None if nanoseconds is None else min(max(nanoseconds, 0) / 1e9, MAX_LOOP_TIMEOUT_S)
    token = _EXECUTION_LOOP_TIMEOUT_S.set(seconds)
    try:
        yield
    finally:
        _EXECUTION_LOOP_TIMEOUT_S.reset(token)


def current_loop_timeout() -> float:
    """Seconds the WHILE being run may take: its execution's loop timeout, or NNAPI's default."""
    seconds = _EXECUTION_LOOP_TIMEOUT_S.get()
    return LOOP_TIMEOUT_S if seconds is None else seconds


#: IF's inputs: the condition, the then and else references, then the branch inputs from here.
IF_FIRST_INPUT = 3
#: WHILE's inputs: the condition and body references, then the loop's inputs from here.
WHILE_FIRST_INPUT = 2

#: Runs referenced subgraph ``index`` on the given input values; returns its output values.
RunSubgraph = Callable[[int, Sequence[np.ndarray]], list[np.ndarray]]


# --------------------------------------------------------------------------- static checks, operands only


def _condition(operand: Operand, position: int | None, output: bool, what: str) -> Refusal | None:
    """NeuralNetworks.h: a condition is a TENSOR_BOOL8 of fully specified shape [1]."""
    if operand.type != OperandType.TENSOR_BOOL8:
        return Refusal(f"{what} of type {operand.type.name} (NNAPI: TENSOR_BOOL8)", position, output)
    if tuple(operand.dimensions) != (1,):
        return Refusal(f"{what} of dimensions {list(operand.dimensions)} (NNAPI: [1], fully specified)", position, output)
    if operand.lifetime == OperandLifeTime.NO_VALUE:
        return Refusal(f"{what} has no value (NNAPI: a required input)", position, output)
    return None


def _reference(operands: Sequence[Operand], position: int, what: str) -> Refusal | None:
    operand = operands[position]
    if operand.type != OperandType.SUBGRAPH or operand.lifetime != OperandLifeTime.SUBGRAPH:
        return Refusal(f"{what} of type {operand.type.name} and lifetime {operand.lifetime.name} "
                       "(NNAPI: a SUBGRAPH operand naming a referenced subgraph)", position)
    return None


def _data(operands: Sequence[Operand], start: int, output: bool) -> Refusal | None:
    for position in range(start, len(operands)):
        if operands[position].type == OperandType.SUBGRAPH:
            return Refusal("a subgraph reference passed as data (NNAPI: only the references' own inputs)", position, output)
    return None


def validate_if(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) < IF_FIRST_INPUT or not outs:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI IF: a condition, two branches and "
                       "their inputs; at least 1 output)")
    return (_condition(ins[0], 0, False, "condition") or _reference(ins, 1, "then branch")
            or _reference(ins, 2, "else branch") or _data(ins, IF_FIRST_INPUT, False) or _data(outs, 0, True))


def validate_while(ins: Sequence[Operand], outs: Sequence[Operand]) -> Refusal | None:
    if len(ins) < WHILE_FIRST_INPUT + 1 or not outs:
        return Refusal(f"{len(ins)} inputs and {len(outs)} outputs (NNAPI WHILE: condition and body references and "
                       "at least 1 loop input; at least 1 output)")
    return (_reference(ins, 0, "condition subgraph") or _reference(ins, 1, "body subgraph")
            or _data(ins, WHILE_FIRST_INPUT, False) or _data(outs, 0, True))


def run_in_executor(values: Sequence[np.ndarray], ins: Sequence[Operand], out_op: Operand,
                    out: np.ndarray | None) -> np.ndarray:
    # IF and WHILE need the model's referenced subgraphs, which a kernel is not given
    raise KernelError("IF and WHILE run their referenced subgraphs through the executor, not as a kernel")


TABLE = {
    OperationType.IF: (validate_if, run_in_executor),
    OperationType.WHILE: (validate_while, run_in_executor),
}


# --------------------------------------------------------------------------- static checks against the subgraphs


def _dimensions_agree(a: Sequence[int], b: Sequence[int]) -> bool:
    if not a or not b:
        return True
    return len(a) == len(b) and all(x == 0 or y == 0 or x == y for x, y in zip(a, b))


def mismatch(inner: Operand, outer: Operand) -> str | None:
    """How two operands passed into each other differ (None: they are compatible, as NNAPI asks)."""
    if inner.type != outer.type:
        return f"type {outer.type.name} where the subgraph's is {inner.type.name}"
    if (inner.scale, inner.zero_point) != (outer.scale, outer.zero_point):
        return (f"scale {outer.scale} and zeroPoint {outer.zero_point} where the subgraph's are "
                f"{inner.scale} and {inner.zero_point}")
    if inner.channel_quant != outer.channel_quant:
        return "per-channel quantization differs from the subgraph's"
    if not _dimensions_agree(inner.dimensions, outer.dimensions):
        return f"dimensions {list(outer.dimensions)} conflict with the subgraph's {list(inner.dimensions)}"
    return None


def _compare(pairs: Sequence[tuple[Operand, Operand]], positions: Sequence[int], output: bool,
             places: Sequence[str]) -> Refusal | None:
    """The first (subgraph operand, outer operand) pair that differs, refused at the operation's
    operand ``positions[n]`` and described as at ``places[n]``."""
    for (inner, outer), position, place in zip(pairs, positions, places):
        problem = mismatch(inner, outer)
        if problem is not None:
            return Refusal(f"{problem}, at {place} (NNAPI: same type, scale, zeroPoint, compatible dimensions)",
                           position, output)
    return None


def _subgraph(ins: Sequence[Operand], position: int, referenced: Sequence[Subgraph]) -> tuple[int, Subgraph | None]:
    """The subgraph the reference at ``position`` names; None when there is none whose inputs and
    outputs can be compared (the subgraph's own index checks refuse it then, whatever the order)."""
    index = ins[position].location.offset
    if not 0 <= index < len(referenced):
        return index, None
    graph = referenced[index]
    if not all(0 <= i < len(graph.operands) for i in (*graph.input_indexes, *graph.output_indexes)):
        return index, None
    return index, graph


def _io(graph: Subgraph, output: bool) -> list[Operand]:
    return [graph.operands[i] for i in (graph.output_indexes if output else graph.input_indexes)]


def if_refusal(ins: Sequence[Operand], outs: Sequence[Operand], referenced: Sequence[Subgraph]) -> Refusal | None:
    """IF against its branches: each takes IF's inputs after the references and gives its outputs."""
    data = list(ins[IF_FIRST_INPUT:])
    for position, name in ((1, "then branch"), (2, "else branch")):
        index, branch = _subgraph(ins, position, referenced)
        if branch is None:
            return Refusal(f"{name} names subgraph {index}, of {len(referenced)}, which has no valid inputs and outputs",
                           position)
        label = f"{name} (referenced subgraph {index})"
        inner_ins, inner_outs = _io(branch, False), _io(branch, True)
        if len(inner_ins) != len(data) or len(inner_outs) != len(outs):
            return Refusal(f"{label} has {len(inner_ins)} inputs and {len(inner_outs)} outputs, IF passes it {len(data)} "
                           f"and takes {len(outs)} (NNAPI: the same counts)", position)
        refusal = (_compare(list(zip(inner_ins, data)), range(IF_FIRST_INPUT, len(ins)), False,
                            [f"{label} input {n}" for n in range(len(data))])
                   or _compare(list(zip(inner_outs, outs)), range(len(outs)), True,
                               [f"{label} output {n}" for n in range(len(outs))]))
        if refusal is not None:
            return refusal
    return None


def while_refusal(ins: Sequence[Operand], outs: Sequence[Operand], referenced: Sequence[Subgraph]) -> Refusal | None:
    """WHILE against its condition and body: input-output, state-only and input-only operands."""
    data, m = list(ins[WHILE_FIRST_INPUT:]), len(outs)
    cond_index, cond = _subgraph(ins, 0, referenced)
    body_index, body = _subgraph(ins, 1, referenced)
    if cond is None:
        return Refusal(f"condition subgraph names subgraph {cond_index}, of {len(referenced)}, which has no valid inputs "
                       "and outputs", 0)
    if body is None:
        return Refusal(f"body subgraph names subgraph {body_index}, of {len(referenced)}, which has no valid inputs and "
                       "outputs", 1)
    cond_label, body_label = f"condition (referenced subgraph {cond_index})", f"body (referenced subgraph {body_index})"
    cond_ins, cond_outs = _io(cond, False), _io(cond, True)
    if len(cond_ins) != len(data) or len(cond_outs) != 1:
        return Refusal(f"{cond_label} has {len(cond_ins)} inputs and {len(cond_outs)} outputs, WHILE passes it "
                       f"{len(data)} (NNAPI: all the loop's inputs; 1 output)", 0)
    refusal = _condition(cond_outs[0], 0, False, f"{cond_label} output 0")
    if refusal is not None:
        return refusal
    body_ins, body_outs = _io(body, False), _io(body, True)
    if len(body_ins) != len(data) or not m <= len(body_outs) <= len(body_ins):
        return Refusal(f"{body_label} has {len(body_ins)} inputs and {len(body_outs)} outputs, WHILE passes it "
                       f"{len(data)} and takes {m} (NNAPI: all the loop's inputs; m input-output and k state-only "
                       "outputs, m the WHILE's outputs)", 1)
    carried = len(body_outs)  # m input-output and k state-only operands
    data_positions = range(WHILE_FIRST_INPUT, len(ins))
    return (_compare(list(zip(cond_ins, data)), data_positions, False, [f"{cond_label} input {n}" for n in range(len(data))])
            or _compare(list(zip(body_ins, data)), data_positions, False, [f"{body_label} input {n}" for n in range(len(data))])
            or _compare(list(zip(body_outs, outs)), range(m), True, [f"{body_label} output {n}" for n in range(m)])
            or _compare(list(zip(body_ins[:carried], body_outs)), [1] * carried, False,
                        [f"{body_label} output {n} against its input {n}, which it feeds" for n in range(carried)]))


#: The checks of each control-flow operation against the referenced subgraphs.
REFERENCED_CHECKS: dict[OperationType, Callable[[Sequence[Operand], Sequence[Operand], Sequence[Subgraph]], Refusal | None]] = {
    OperationType.IF: if_refusal,
    OperationType.WHILE: while_refusal,
}


def referenced_refusal(operation_type: OperationType, ins: Sequence[Operand], outs: Sequence[Operand],
                       referenced: Sequence[Subgraph]) -> Refusal | None:
    check = REFERENCED_CHECKS.get(operation_type)
    return None if check is None else check(ins, outs, referenced)


def subgraph_references(graph: Subgraph) -> list[int]:
    """The referenced subgraphs ``graph``'s SUBGRAPH operands name, in operand order."""
    return [o.location.offset for o in graph.operands if o.lifetime == OperandLifeTime.SUBGRAPH]


# --------------------------------------------------------------------------- execution


def _truth(condition: np.ndarray, what: str) -> bool:
    flat = np.asarray(condition).reshape(-1)
    if flat.size != 1:
        raise KernelError(f"{what} has {flat.size} elements (NNAPI: 1)")
    return bool(flat[0])


def run_if(values: Sequence[np.ndarray], ins: Sequence[Operand], outputs: int, run: RunSubgraph) -> tuple[np.ndarray, ...]:
    position = 1 if _truth(values[0], "IF's condition") else 2
    return tuple(run(ins[position].location.offset, values[IF_FIRST_INPUT:]))


def run_while(values: Sequence[np.ndarray], ins: Sequence[Operand], outputs: int, run: RunSubgraph) -> tuple[np.ndarray, ...]:
    cond_index, body_index = ins[0].location.offset, ins[1].location.offset
    state = list(values[WHILE_FIRST_INPUT:])
    timeout = current_loop_timeout()  # read at each WHILE, so a test may shorten the default
    started = time.monotonic()
    iterations = 0
    while _truth(run(cond_index, state)[0], "WHILE's condition output"):
        if time.monotonic() - started > timeout:
            raise DriverError(LOOP_TIMEOUT_STATUS, f"WHILE still running after {iterations} iterations and "
                              f"{timeout:g} s, NNAPI's loop timeout")
        produced = run(body_index, state)
        state[:len(produced)] = produced
        iterations += 1
    return tuple(state[:outputs])


#: How the executor runs one control-flow operation: (its input values, its input operands, its number
#: of outputs, how to run a referenced subgraph) -> its output values.
Runner = Callable[[Sequence[np.ndarray], Sequence[Operand], int, RunSubgraph], tuple[np.ndarray, ...]]

#: How the executor runs each control-flow operation.
RUNNERS: dict[OperationType, Runner] = {
    OperationType.IF: run_if,
    OperationType.WHILE: run_while,
}
