"""The composition: the reference device with any set of faults layered on its entry points.

Each fault is called at every Driver API entry point (prepare_model, execute, allocate,
copy_from, copy_to) and acts only when its own trigger holds, so faults never see one another:
``deep-bugs`` is every Python-level fault at once, ``deep-<name>`` one of them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from harness.api.hal import BufferDesc, BufferRole, ExecutionResult, Model, Request
from harness.api.memory import Memory
from reference_driver import ReferenceDevice
from reference_driver import executor
from reference_driver.device import ReferenceBuffer, ReferencePreparedModel

from ._registry import Execution, Fault


class DeepPreparedModel(ReferencePreparedModel):
    """A prepared model that counts its executions and lets the faults see each."""

    device: DeepDevice

    def __init__(self, device: DeepDevice, model: Model, constants: dict[int, np.ndarray]) -> None:
        super().__init__(device, model, constants)
        self._executions = 0
        self._counting = threading.Lock()

    def execute(self, request: Request) -> ExecutionResult:
        with self._counting:
            execution = Execution(self, request, self._executions)
            self._executions += 1
        for fault in self.device.faults:
            fault.execute(execution)
        self.device.running.execution = execution  # what write_outputs, in this thread, belongs to
        try:
            result = super().execute(request)
        finally:
            self.device.running.execution = None
        for fault in self.device.faults:
            result = fault.executed(execution, result)
        return result


class DeepBuffer(ReferenceBuffer):
    """A driver-managed buffer whose copies the faults see."""

    device: DeepDevice

    def copy_from(self, memory: Memory, dimensions: Sequence[int] = ()) -> None:
        for fault in self.device.faults:
            fault.copy_from(self, memory, tuple(dimensions))
        super().copy_from(memory, dimensions)
        for fault in self.device.faults:
            fault.copied_from(self, memory, tuple(dimensions))

    def copy_to(self, memory: Memory) -> None:
        super().copy_to(memory)
        for fault in self.device.faults:
            fault.copied_to(self, memory)

    def release(self) -> None:
        for fault in self.device.faults:
            fault.release(self)
        super().release()


class DeepDevice(ReferenceDevice):
    """The reference with ``faults`` (`Fault` subclasses, one instance each per device)."""

    def __init__(self, name: str, faults: Sequence[type[Fault]]) -> None:
        super().__init__(prepared_model_class=DeepPreparedModel, buffer_class=DeepBuffer)
        self.name = name
        self.faults = tuple(fault(self) for fault in faults)
        self.running = threading.local()  # the execution this thread is in, if any

    def prepare_model(self, model: Model) -> ReferencePreparedModel:
        for fault in self.faults:
            fault.prepare_model(model)
        return super().prepare_model(model)

    def allocate(self, desc: BufferDesc, prepared_models: Sequence[object], input_roles: Sequence[BufferRole],
                 output_roles: Sequence[BufferRole]) -> tuple[ReferenceBuffer, int]:
        models = [m for m in prepared_models if isinstance(m, DeepPreparedModel)]
        for fault in self.faults:
            fault.allocate(desc, models, input_roles, output_roles)
        buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
        if isinstance(buffer, DeepBuffer):
            for fault in self.faults:
                fault.allocated(buffer)
        return buffer, token

    def write_outputs(self, outputs: Sequence[executor.Binding], values: dict[int, np.ndarray],
                      views: dict[int, np.ndarray]) -> None:
        execution = getattr(self.running, "execution", None)
        if execution is not None:
            for fault in self.faults:
                fault.outputs(execution, values)
        super().write_outputs(outputs, values, views)
