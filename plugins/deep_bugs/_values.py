"""What the faults read of an execution and how they get a result wrong."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from harness.api.hal import Operand, Operation, OperationType

from ._registry import Execution


def operations(execution: Execution, *kinds: OperationType) -> Iterator[Operation]:
    """The main subgraph's operations of these kinds whose first output is a model output (what a
    fault changes there reaches the caller)."""
    subgraph = execution.model.main
    for operation in subgraph.operations:
        if operation.type in kinds and operation.outputs and operation.outputs[0] in subgraph.output_indexes:
            yield operation


def operand(execution: Execution, index: int) -> Operand:
    return execution.model.main.operands[index]


def scalar(values: dict[int, np.ndarray], index: int) -> int | float | None:
    """A scalar operand's value, None when it has none (an omitted optional input)."""
    value = values.get(index)
    if value is None or value.size != 1:
        return None
    return value.reshape(-1)[0].item()


def wrong(array: np.ndarray, where: tuple | np.ndarray | slice = Ellipsis) -> np.ndarray:
    """A copy of ``array`` with the elements at ``where`` changed past any tolerance the
    contract allows: a float by one and its own magnitude, an integer by three steps (away from
    the end of its type's range)."""
    changed = np.array(array, copy=True)
    part = changed[where]
    if np.issubdtype(changed.dtype, np.floating):
        changed[where] = part + (np.abs(part) + 1).astype(changed.dtype)
    elif changed.dtype == np.bool_:
        changed[where] = ~part
    else:
        top = np.iinfo(changed.dtype).max
        wide = part.astype(np.int64)
        changed[where] = np.where(wide <= top - 3, wide + 3, wide - 3).astype(changed.dtype)
    return changed
