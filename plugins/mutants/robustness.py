"""Drivers that crash, exit, deadlock or hang: the failures only process isolation can report."""

from __future__ import annotations

import ctypes
import os
import threading
import time

from harness.api.hal import OperationType
from reference_driver import ReferenceDevice
from reference_driver.device import ReferenceBuffer, ReferencePreparedModel
from reference_driver.ops import KERNELS, Kernel

from ._registry import mutant


def _segfault() -> None:
    ctypes.string_at(0)  # reads address 0: SIGSEGV


class _CrashOnZeroDimension(ReferencePreparedModel):
    def execute(self, request):
        if any(0 in argument.dimensions for argument in (*request.inputs, *request.outputs)):
            _segfault()
        return super().execute(request)


@mutant("segfault-zero-dimension", "REQ-2", "dereferences NULL when a request argument has a 0 dimension")
def segfault_zero_dimension() -> ReferenceDevice:
    return ReferenceDevice(prepared_model_class=_CrashOnZeroDimension)


class _ExitOnPadding(ReferencePreparedModel):
    def execute(self, request):
        if any(argument.location.padding for argument in request.outputs):
            os._exit(7)
        return super().execute(request)


@mutant("exit-on-output-padding", "POOL-2", "calls exit(7) when an output region has padding")
def exit_on_output_padding() -> ReferenceDevice:
    return ReferenceDevice(prepared_model_class=_ExitOnPadding)


class _DmaLockBuffer(ReferenceBuffer):
    def copy_from(self, memory, dimensions=()):
        with self.device.dma_lock:  # device lock first, then the buffer's (execution does the reverse)
            time.sleep(0.01)
            super().copy_from(memory, dimensions)


@mutant("deadlock-concurrent-writes", "DOM-CONC-2",
        "copy_from takes the DMA lock then the buffer lock; execution writing the buffer takes them the other way round")
def deadlock_concurrent_writes() -> ReferenceDevice:
    dma_lock = threading.Lock()
    add = KERNELS[OperationType.ADD]

    def add_under_dma_lock(values, ins, out_op, out):
        time.sleep(0.01)
        with dma_lock:  # runs while the executor holds the output buffer's lock
            return add.run(values, ins, out_op, out)

    device = ReferenceDevice(buffer_class=_DmaLockBuffer,
                             kernels={**KERNELS, OperationType.ADD: Kernel(add.validate, add_under_dma_lock)})
    device.dma_lock = dma_lock
    return device


class _SpinOnEmptyMemory(ReferenceBuffer):
    def _spin_if_empty(self, memory) -> None:
        while memory.size == 0:  # waits for bytes that never come
            time.sleep(0.001)

    def copy_from(self, memory, dimensions=()):
        self._spin_if_empty(memory)
        super().copy_from(memory, dimensions)

    def copy_to(self, memory):
        self._spin_if_empty(memory)
        super().copy_to(memory)


@mutant("hang-zero-sized-memory", "DOM-COPY-1", "loops forever when a copy is given a memory of 0 bytes")
def hang_zero_sized_memory() -> ReferenceDevice:
    return ReferenceDevice(buffer_class=_SpinOnEmptyMemory)


class _CrashOnReadDuringRelease(ReferenceBuffer):
    def copy_to(self, memory):
        time.sleep(0.002)  # the window in which a release frees the storage under the reader
        if self.state.released:
            _segfault()
        super().copy_to(memory)


@mutant("crash-read-during-release", "DOM-CONC-2", "crashes when a buffer is released while a copy_to reads it")
def crash_read_during_release() -> ReferenceDevice:
    return ReferenceDevice(buffer_class=_CrashOnReadDuringRelease)


class _HangOnManyPools(ReferencePreparedModel):
    def execute(self, request):
        if len(request.pools) > 3:
            threading.Event().wait()  # a fixed table of three pool slots, waited on forever
        return super().execute(request)


@mutant("hang-more-than-3-pools", "POOL-2", "blocks forever when a request has more than three pools")
def hang_more_than_3_pools() -> ReferenceDevice:
    return ReferenceDevice(prepared_model_class=_HangOnManyPools)


class _CrashOnEveryExecute(ReferencePreparedModel):
    def execute(self, request):
        _segfault()


@mutant("segfault-every-execute", "POOL-2", "dereferences NULL in every execute")
def segfault_every_execute() -> ReferenceDevice:
    return ReferenceDevice(prepared_model_class=_CrashOnEveryExecute)


class _HangOnEveryExecute(ReferencePreparedModel):
    def execute(self, request):
        threading.Event().wait()  # waits for a completion that never comes


@mutant("hang-every-execute", "POOL-2", "blocks forever in every execute")
def hang_every_execute() -> ReferenceDevice:
    return ReferenceDevice(prepared_model_class=_HangOnEveryExecute)


class _LeakyBuffer(ReferenceBuffer):
    def copy_from(self, memory, dimensions=()):
        os.dup(memory.fd) if memory.fd >= 0 else None  # a descriptor kept and never closed
        super().copy_from(memory, dimensions)


@mutant("descriptor-leak-on-copy", "DOM-COPY-1", "leaks one descriptor on every copy_from")
def descriptor_leak_on_copy() -> ReferenceDevice:
    return ReferenceDevice(buffer_class=_LeakyBuffer)
