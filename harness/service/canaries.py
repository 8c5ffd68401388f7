"""Canary drivers: the faults the driver service must survive, on purpose (SPEC §7).

``harness certify`` proves SVC-1 and SVC-2 on every run by hosting these in a driver service
and checking what the harness reports (``suites/service``).  They are tiny and stand alone:
a canary must fault in exactly one known place, whatever the driver under test is.

    --driver=harness.service.canaries:segfaulting   execute dereferences NULL
    --driver=harness.service.canaries:exiting       execute calls os._exit(7)
    --driver=harness.service.canaries:hanging       execute never returns
"""

from __future__ import annotations

import ctypes
import os
import time

from harness.api.hal import (
    Capabilities,
    DriverError,
    ErrorStatus,
    ExecutionResult,
    Model,
    OperandType,
    OperationType,
    Request,
)

EXIT_CODE = 7


class _FaultingModel:
    def __init__(self, fault: str) -> None:
        self.fault = fault

    def execute(self, request: Request) -> ExecutionResult:
        if self.fault == "segfault":
            ctypes.string_at(0)
        elif self.fault == "exit":
            os._exit(EXIT_CODE)
        while True:  # "hang": a driver stuck in a loop that never yields an answer
            time.sleep(0.05)


class CanaryDevice:
    """Prepares any model; every execution faults the named way."""

    version = "1"

    def __init__(self, fault: str) -> None:
        self.name = f"canary-{fault}"
        self.fault = fault

    def capabilities(self) -> Capabilities:
        return Capabilities(frozenset({"ashmem"}), False, frozenset({OperationType.ADD}),
                            frozenset({OperandType.TENSOR_FLOAT32}))

    def get_supported_operations(self, model: Model) -> list[bool]:
        return [True] * len(model.main.operations)

    def prepare_model(self, model: Model) -> _FaultingModel:
        return _FaultingModel(self.fault)

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        raise DriverError(ErrorStatus.GENERAL_FAILURE, "canaries have no memory domains")


def segfaulting() -> CanaryDevice:
    """canary: execute dereferences NULL"""
    return CanaryDevice("segfault")


def exiting() -> CanaryDevice:
    """canary: execute exits the process"""
    return CanaryDevice("exit")


def hanging() -> CanaryDevice:
    """canary: execute never returns"""
    return CanaryDevice("hang")
