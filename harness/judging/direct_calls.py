"""Calls a test makes on the driver alone, kept in the driver's history all the same.

A lockstep's verdict may need what an earlier test did to the driver (`driver_history`): a
release that corrupted its allocator, a slot a refused allocation kept.  A test that asks the
driver directly, without the reference beside it (a fixed check of one rule, the set-up of a
concurrency test), does so through `DirectCalls`.  Each call goes to the driver only, as the test
wrote it, and is kept as the same `Step` a lockstep makes, after an `ALONE` step.  A later
verdict's reproducer replays them before its own calls, on both drivers, for the state they leave:
the test judged the driver's answers by its own checks, which may accept what lockstep would not
(any refusal of an invalid allocation, say), so the replay judges none of them.

What the test's own threads ask of a buffer at once is not kept: the order the driver saw is not
known.  Nothing wrong follows from a history that misses calls: a reproducer is kept only when it
fails on a fresh driver as the run did, and otherwise says that it does not replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.api.hal import BufferDesc, BufferRole, Device
from harness.judging.driver_history import history_of, lifetime_of
from harness.judging.lockstep import ALONE, CallsAlone, Step
from harness.judging.scenario import MemorySpec, Scenario

__all__ = ["DirectCalls"]


class DirectCalls:
    """One test's direct calls on ``driver``, a sequence of its history from the moment it is made.
    Each is made from its step by `CallsAlone`, as a replay makes it again.

    A verdict the test raises does not mark the sequence as ending in one (as a lockstep's is):
    a replay judges none of its calls, so nothing in it can stop a replay of a later history."""

    def __init__(self, driver: Device) -> None:
        self.driver = driver
        self.steps: list[Step] = [Step(ALONE, ())]
        self._calls = CallsAlone(driver)
        self._names: dict[int, str] = {}  # id() of a prepared model or buffer of the driver's -> its name in the steps
        self._held: list[Any] = []  # those objects, so that no id() is reused while the names stand
        self._buffers = 0
        history = history_of(driver)
        if history is not None:
            history.join(self.steps, lifetime_of(driver))

    def _name_of(self, handle: Any) -> str:
        name = self._names.get(id(handle))
        if name is None:
            raise ValueError(f"{handle!r:.80} was not made through these direct calls: its steps could not name it")
        return name

    def _named(self, handle: Any, name: str) -> None:
        self._names[id(handle)] = name
        self._held.append(handle)

    def _make(self, method: str, *args: Any) -> Any:
        self.steps.append(Step(method, args))
        return self._calls.make(method, args)

    def prepare(self, scenario: Scenario, requirement: str = "DOM-ALLOC-1") -> Any:
        """``driver.prepare_model`` of the scenario's model: the driver's prepared model."""
        prepared = self._make("prepare", scenario, requirement)
        self._named(prepared, f"model-{len(self._calls.models)}")
        return prepared

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[Any], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole], requirement: str = "DOM-ALLOC-1") -> tuple[Any, int]:
        """``driver.allocate``, its signature and answer as they are (a refusal raises)."""
        self._buffers += 1
        name = f"direct-{self._buffers}"
        allocated = self._make("allocate", name, desc, tuple(self._name_of(p) for p in prepared_models),
                               tuple(input_roles), tuple(output_roles), requirement)
        self._named(allocated[0], name)
        return allocated

    def copy_from(self, buffer: Any, memory: MemorySpec, dimensions: Sequence[int] = (), requirement: str = "DOM-COPY-1") -> None:
        """``buffer.copy_from`` a new memory made as ``memory`` says (closed after the call)."""
        self._make("copy_from", self._name_of(buffer), memory, tuple(dimensions), requirement)

    def copy_to(self, buffer: Any, size: int, requirement: str = "DOM-COPY-1") -> bytes:
        """``buffer.copy_to`` a new ashmem memory of ``size`` bytes: what it holds after the call."""
        return self._make("copy_to", self._name_of(buffer), size, "ashmem", requirement, 0)

    def release(self, buffer: Any) -> None:
        self._make("release", self._name_of(buffer))
