"""The deep-bug registry: what each bug is, and the hooks through which it acts.

A deep bug is a `Fault`: an object with one method per Driver API entry point, each of which
passes unless the bug's trigger holds.  `DeepDevice` (`_device.py`) calls every fault it holds
at every entry point, so any set of faults composes into one driver and each acts alone.

How to add a bug (in a module of this package, one module per concern; `__init__` imports it):

1. Subclass `Fault`, overriding only the entry points where the bug acts.  Test each condition of
   the trigger in a branch of its own (``if not ...: return``), cheapest first: a coverage-guided
   fuzzer sees each condition met as a new line, which is the partial progress it climbs.  Keep
   any state the bug needs over several calls on the fault itself (a fresh fault per device).
2. Decorate it with ``@deep_bug(name, requirement, description, reach)``: ``requirement`` is the
   spec ID its failure breaks, ``reach`` why a short run misses it.  The bug's failure must be
   told apart from every other's (another operation, rule, or entry point): they share a driver.
3. Add its scenarios to ``tests/meta/test_deep_bugs.py``: one meeting the trigger (the harness
   reports the requirement; the reference passes it) and one missing a condition (no failure).

A bug that is no Python fault (native code the driver is built with) registers a ``factory``
instead: it gets its own ``deep-<name>`` driver, and stays out of the composed ``deep-bugs``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from harness.api.hal import BufferDesc, BufferRole, Device, ExecutionResult, Model, Request
from harness.api.memory import Memory

if TYPE_CHECKING:  # the device module imports this one
    from ._device import DeepBuffer, DeepDevice, DeepPreparedModel


class Reach(enum.StrEnum):
    """Why a short run (the ``ci`` profile's examples) misses a bug."""

    STRUCTURE = "rare structure"
    STATE = "state over several calls"
    THREADS = "threads"
    LIMITS = "limits"
    DTYPES = "dtypes"
    NATIVE = "native code"


class Fault:
    """One deep bug's behaviour in one device; every hook passes unless the bug's trigger holds.

    Hooks before a call may raise `DriverError` (the call fails); hooks after it may change what
    the call produced.  ``device`` is the device the fault is part of (its reference state)."""

    def __init__(self, device: DeepDevice) -> None:
        self.device = device

    def prepare_model(self, model: Model) -> None:
        """Before the reference prepares ``model``."""

    def execute(self, execution: Execution) -> None:
        """Before the reference executes the request."""

    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        """The values the execution computed (operand index -> array: inputs, constants and
        outputs), just before the outputs are written; replace an entry to change what is written."""

    def executed(self, execution: Execution, result: ExecutionResult) -> ExecutionResult:
        """After a successful execution: the result returned to the caller."""
        return result

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[DeepPreparedModel],
                 input_roles: Sequence[BufferRole], output_roles: Sequence[BufferRole]) -> None:
        """Before the reference allocates a buffer."""

    def allocated(self, buffer: DeepBuffer) -> None:
        """After a buffer was allocated."""

    def copy_from(self, buffer: DeepBuffer, memory: Memory, dimensions: tuple[int, ...]) -> None:
        """Before a copy into ``buffer``."""

    def copied_from(self, buffer: DeepBuffer, memory: Memory, dimensions: tuple[int, ...]) -> None:
        """After a successful copy into ``buffer``."""

    def copied_to(self, buffer: DeepBuffer, memory: Memory) -> None:
        """After a successful copy out of ``buffer`` into ``memory``."""

    def release(self, buffer: DeepBuffer) -> None:
        """Before ``buffer`` is released (its state still there)."""


@dataclass
class Execution:
    """One execute call as the faults see it: the prepared model, the request, and how many
    times that prepared model was executed before (successfully or not)."""

    prepared: DeepPreparedModel
    request: Request
    earlier: int

    @property
    def model(self) -> Model:
        return self.prepared.model


@dataclass(frozen=True)
class DeepBug:
    """A seeded bug that the ``ci`` profile does not catch, for measuring fuzzing."""

    name: str
    requirement: str
    description: str
    reach: Reach
    fault: type[Fault] | None = None  # a Python-level bug: composes into ``deep-bugs``
    factory: Callable[[], Device] | None = None  # a bug with a driver of its own (native code)

    @property
    def driver(self) -> str:
        return f"deep-{self.name}"


DEEP_BUGS: dict[str, DeepBug] = {}


def _add(bug: DeepBug) -> None:
    if bug.name in DEEP_BUGS or bug.name == "bugs":
        raise ValueError(f"deep bug {bug.name!r} is defined twice (or names the composed driver)")
    DEEP_BUGS[bug.name] = bug


def deep_bug(name: str, requirement: str, description: str, reach: Reach) -> Callable[[type[Fault]], type[Fault]]:
    """Register a `Fault` subclass as the deep bug ``name`` (driver ``deep-<name>``, and part of
    ``deep-bugs``)."""

    def register(fault: type[Fault]) -> type[Fault]:
        _add(DeepBug(name, requirement, description, reach, fault=fault))
        return fault

    return register


def deep_bug_driver(name: str, requirement: str, description: str, reach: Reach,
                    factory: Callable[[], Device]) -> None:
    """Register a deep bug that is a driver of its own (its bug in native code the driver is
    built with): ``deep-<name>`` only, not part of ``deep-bugs``."""
    _add(DeepBug(name, requirement, description, reach, factory=factory))


def composable() -> list[DeepBug]:
    """The Python-level bugs, which ``deep-bugs`` holds all at once."""
    return [bug for bug in DEEP_BUGS.values() if bug.fault is not None]
