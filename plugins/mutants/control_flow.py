"""Seeded bugs of control flow (IF and WHILE, NeuralNetworks.h HAL 1.3): each runs referenced
subgraphs with one rule wrong.  The reference's executor drives IF and WHILE through its
``runners``; each mutant here gives one of them a runner of its own, or refuses what a rule
allows, and leaves every kernel as it is."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

import numpy as np

from harness.api.hal import (DataLocation, DriverError, ErrorStatus, ExecutionResult, Model, Operand, OperandLifeTime,
                              OperationType, Request)
from reference_driver import ReferenceDevice
from reference_driver.device import ReferencePreparedModel
from reference_driver.ops.control_flow import (IF_FIRST_INPUT, RUNNERS, WHILE_FIRST_INPUT, RunSubgraph, Runner, loop_timeout,
                                               run_while, subgraph_references)
from reference_driver.validation import INVALID, OK, subgraph_reference_cycle

from ._registry import mutant, with_rule

Op = OperationType


def _with_runner(op: OperationType, runner: Runner) -> ReferenceDevice:
    return ReferenceDevice(runners={**RUNNERS, op: runner})


def _run_if_on(truth) -> Runner:
    """IF that decides its branch by ``truth`` (the condition's values -> bool)."""
    def run(values: Sequence[np.ndarray], ins, outputs: int, subgraph: RunSubgraph) -> tuple[np.ndarray, ...]:
        position = 1 if truth(np.asarray(values[0])) else 2
        return tuple(subgraph(ins[position].location.offset, values[IF_FIRST_INPUT:]))
    return run


@mutant("if-condition-equals-one", "FLOW-1",
        "IF takes its then branch only when the condition's byte is 1, not for any non-zero value (NeuralNetworks.h: "
        "a TENSOR_BOOL8 is true when non-zero)", operations=(Op.IF,))
def if_condition_equals_one():
    return _with_runner(Op.IF, _run_if_on(lambda condition: int(condition.reshape(-1)[0]) == 1))


@mutant("if-branch-inputs-reversed", "FLOW-1",
        "IF binds its inputs after the references to the branch's inputs from the last to the first, as a driver "
        "walking the operand list from its end would", operations=(Op.IF,))
def if_branch_inputs_reversed():
    def run(values: Sequence[np.ndarray], ins, outputs: int, subgraph: RunSubgraph) -> tuple[np.ndarray, ...]:
        position = 1 if bool(np.asarray(values[0]).reshape(-1)[0]) else 2
        return tuple(subgraph(ins[position].location.offset, values[IF_FIRST_INPUT:][::-1]))

    return _with_runner(Op.IF, run)


def _loop(values: Sequence[np.ndarray], ins) -> tuple[int, int, list[np.ndarray]]:
    return ins[0].location.offset, ins[1].location.offset, list(values[WHILE_FIRST_INPUT:])


@mutant("while-body-before-condition", "FLOW-2",
        "WHILE runs its body before it first evaluates the condition (a do-while): a loop whose condition is false at "
        "the start still runs its body once", operations=(Op.WHILE,))
def while_body_before_condition():
    def run(values, ins, outputs: int, subgraph: RunSubgraph) -> tuple[np.ndarray, ...]:
        cond, body, state = _loop(values, ins)
        while True:
            produced = subgraph(body, state)
            state[:len(produced)] = produced
            if not bool(np.asarray(subgraph(cond, state)[0]).reshape(-1)[0]):
                return tuple(state[:outputs])

    return _with_runner(Op.WHILE, run)


@mutant("while-outputs-before-last-body", "FLOW-2",
        "WHILE's outputs are the values the condition was last given true for, the operands before the last run of "
        "the body, not the last body's outputs", operations=(Op.WHILE,))
def while_outputs_before_last_body():
    def run(values, ins, outputs: int, subgraph: RunSubgraph) -> tuple[np.ndarray, ...]:
        cond, body, state = _loop(values, ins)
        previous = list(state)
        while bool(np.asarray(subgraph(cond, state)[0]).reshape(-1)[0]):
            previous = list(state)
            produced = subgraph(body, state)
            state[:len(produced)] = produced
        return tuple(previous[:outputs])

    return _with_runner(Op.WHILE, run)


@mutant("while-outputs-from-state-only", "FLOW-2",
        "WHILE takes its m outputs from the last m operands the body carries (its state-only ones, when there are "
        "some), not from the first m, the input-output operands", operations=(Op.WHILE,))
def while_outputs_from_state_only():
    def run(values, ins, outputs: int, subgraph: RunSubgraph) -> tuple[np.ndarray, ...]:
        cond, body, state = _loop(values, ins)
        carried = outputs
        while bool(np.asarray(subgraph(cond, state)[0]).reshape(-1)[0]):
            produced = subgraph(body, state)
            state[:len(produced)] = produced
            carried = len(produced)
        return tuple(state[carried - outputs:carried])

    return _with_runner(Op.WHILE, run)


@mutant("while-ignores-loop-timeout", "FLOW-3",
        "WHILE runs until its condition is false, with no loop timeout: a loop that never ends hangs the execution",
        operations=(Op.WHILE,))
def while_ignores_loop_timeout():
    def run(values, ins, outputs: int, subgraph: RunSubgraph) -> tuple[np.ndarray, ...]:
        cond, body, state = _loop(values, ins)
        while bool(np.asarray(subgraph(cond, state)[0]).reshape(-1)[0]):
            produced = subgraph(body, state)
            state[:len(produced)] = produced
        return tuple(state[:outputs])

    return _with_runner(Op.WHILE, run)


@mutant("while-ignores-requested-loop-timeout", "FLOW-3",
        "WHILE is cut off after NNAPI's default loop timeout of 2 s whatever the execution sets (HAL 1.3's "
        "loopTimeoutDuration ignored)", operations=(Op.WHILE,))
def while_ignores_requested_loop_timeout():
    def run(values, ins, outputs: int, subgraph: RunSubgraph) -> tuple[np.ndarray, ...]:
        with loop_timeout(None):
            return run_while(values, ins, outputs, subgraph)

    return _with_runner(Op.WHILE, run)


def _nested_as_cycle(model: Model):
    """The reference's acyclicity rule, broken: any reference from a referenced subgraph is taken
    for recursion, as a driver that walks references without tracking the path would."""
    if subgraph_reference_cycle(model):
        return INVALID
    nested = any(o.lifetime == OperandLifeTime.SUBGRAPH for graph in model.referenced for o in graph.operands)
    return INVALID if nested else OK


@mutant("nested-subgraphs-refused", "FLOW-4",
        "the driver refuses every model whose referenced subgraphs reference subgraphs in turn (an IF in a WHILE's "
        "body, a WHILE in an IF's branch) as if it were recursive; NNAPI allows any nesting without a cycle")
def nested_subgraphs_refused():
    return with_rule("subgraph_references_acyclic", _nested_as_cycle)


@mutant("subgraph-cycles-accepted", "FLOW-4",
        "the driver prepares a model whose referenced subgraphs reference each other in a cycle (NNAPI: no "
        "recursion; such a model is INVALID_ARGUMENT)")
def subgraph_cycles_accepted():
    return with_rule("subgraph_references_acyclic", lambda model: OK)


#: While an execution of the main-table mutant runs: the references of its model's main subgraph,
#: and how deep in referenced subgraphs the running operation is.
_MAIN_REFERENCES: ContextVar[tuple[int, ...]] = ContextVar("main_references", default=())
_DEPTH: ContextVar[int] = ContextVar("referenced_depth", default=0)


class _MainReferencesKnown(ReferencePreparedModel):
    def execute(self, request: Request) -> ExecutionResult:
        token = _MAIN_REFERENCES.set(tuple(subgraph_references(self.model.main)))
        try:
            return super().execute(request)
        finally:
            _MAIN_REFERENCES.reset(token)


@contextlib.contextmanager
def _deeper() -> Iterator[None]:
    token = _DEPTH.set(_DEPTH.get() + 1)
    try:
        yield
    finally:
        _DEPTH.reset(token)


def _resolved_in_main_table(runner: Runner, first: int, end: int) -> Runner:
    """``runner`` with inputs ``first`` to ``end`` (its SUBGRAPH operands) of an operation inside a
    referenced subgraph taken as positions among the main subgraph's references, not as indexes of
    Model.referenced."""
    def run(values: Sequence[np.ndarray], ins: Sequence[Operand], outputs: int, subgraph: RunSubgraph
            ) -> tuple[np.ndarray, ...]:
        if _DEPTH.get() > 0:
            table = _MAIN_REFERENCES.get()
            resolved = []
            for operand in ins[first:end]:
                if not 0 <= operand.location.offset < len(table):
                    raise DriverError(ErrorStatus.GENERAL_FAILURE, f"no subgraph {operand.location.offset} in the "
                                      f"model's table of {len(table)}")
                resolved.append(dataclasses.replace(operand, location=DataLocation(0, table[operand.location.offset], 0)))
            ins = [*ins[:first], *resolved, *ins[end:]]

        def nested(index: int, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
            with _deeper():
                return subgraph(index, arrays)

        return runner(values, ins, outputs, nested)
    return run


@mutant("nested-references-in-main-table", "FLOW-4",
        "an IF or WHILE inside a referenced subgraph resolves its subgraph references against the main model's: "
        "reference k is taken for the main subgraph's k-th reference, as a driver that builds one table of "
        "subgraphs from the main subgraph's operands would; the main model's own IF and WHILE are right",
        operations=(Op.IF, Op.WHILE))
def nested_references_in_main_table():
    # IF's two references follow its condition (inputs 1 and 2); WHILE's lead (inputs 0 and 1)
    runners = {Op.IF: _resolved_in_main_table(RUNNERS[Op.IF], 1, IF_FIRST_INPUT),
               Op.WHILE: _resolved_in_main_table(RUNNERS[Op.WHILE], 0, WHILE_FIRST_INPUT)}
    return ReferenceDevice(runners={**RUNNERS, **runners}, prepared_model_class=_MainReferencesKnown)
