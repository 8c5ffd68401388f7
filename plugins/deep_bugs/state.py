"""Deep bugs of state over several calls: recycled buffers, resized buffers, reused weights."""

from __future__ import annotations

import threading

import numpy as np

from harness.api.hal import BufferDesc, BufferRole, OperandLifeTime, OperandType, is_fully_specified
from harness.api.memory import Memory, MemoryKind

from ._device import DeepBuffer, DeepPreparedModel
from ._registry import Execution, Fault, Reach, deep_bug
from ._values import wrong


@deep_bug("recycled-buffer-keeps-contents", "DOM-STATE-2",
          "a buffer allocated with explicit dimensions reuses the storage of a released buffer of the same type and "
          "dimensions that had three roles or more and was written by an execution only (never by copy_from), and "
          "starts initialized with its contents (a pool of device-written shared buffers keyed by size)", Reach.STATE)
class RecycledBufferKeepsContents(Fault):
    def __init__(self, device) -> None:  # type: ignore[no-untyped-def]
        super().__init__(device)
        self._released: dict[tuple, np.ndarray] = {}  # (type, dimensions) -> the contents left
        self._copied_into: set[int] = set()  # tokens of buffers a copy_from wrote (host memory, not the pool's)
        self._asked: dict[int, tuple[int, ...]] = {}  # thread -> the dimensions its allocation asked for
        self._lock = threading.Lock()

    def copied_from(self, buffer: DeepBuffer, memory: Memory, dimensions: tuple[int, ...]) -> None:
        with self._lock:
            self._copied_into.add(buffer.state.token)

    def release(self, buffer: DeepBuffer) -> None:
        state = buffer.state
        with self._lock:
            copied = state.token in self._copied_into
            self._copied_into.discard(state.token)
        if not state.initialized:
            return
        if copied:
            return  # a buffer the host wrote is backed by host memory, which goes back to the host
        if not is_fully_specified(state.operand_type, state.initial_dimensions):
            return
        if len(state.roles) < 3:
            return  # only buffers shared by three roles or more come from the pool
        with self._lock:
            self._released[(state.operand_type, state.initial_dimensions)] = state.data.copy()

    def allocate(self, desc: BufferDesc, prepared_models: list[DeepPreparedModel], input_roles: list[BufferRole],
                 output_roles: list[BufferRole]) -> None:
        self._asked[threading.get_ident()] = tuple(desc.dimensions)

    def allocated(self, buffer: DeepBuffer) -> None:
        asked = self._asked.pop(threading.get_ident(), ())
        if not asked:
            return  # dimensions left to the roles: a fresh buffer
        state = buffer.state
        with self._lock:
            left = self._released.pop((state.operand_type, state.initial_dimensions), None)
        if left is None:
            return
        state.data = left
        state.initialized = True


@deep_bug("dynamic-buffer-same-size-keeps-shape", "DOM-COPY-2",
          "a buffer of unknown dimensions given new dimensions of the same element count, one of them of rank 3 "
          "or more, keeps its earlier dimensions (its resize is skipped when the byte size does not change)",
          Reach.STATE)
class DynamicBufferKeepsShape(Fault):
    def __init__(self, device) -> None:  # type: ignore[no-untyped-def]
        super().__init__(device)
        self._before: dict[int, tuple[tuple[int, ...], bool]] = {}  # thread -> the buffer's shape before a copy

    def copy_from(self, buffer: DeepBuffer, memory: Memory, dimensions: tuple[int, ...]) -> None:
        self._before[threading.get_ident()] = (buffer.state.dimensions, buffer.state.initialized)

    def copied_from(self, buffer: DeepBuffer, memory: Memory, dimensions: tuple[int, ...]) -> None:
        state = buffer.state
        old, was_initialized = self._before.pop(threading.get_ident(), ((), False))
        if is_fully_specified(state.operand_type, state.initial_dimensions):
            return
        if not was_initialized or old == state.dimensions:
            return
        if len(state.dimensions) < 3 and len(old) < 3:
            return  # the rank-2 resize is its own code
        if int(np.prod(old)) != int(np.prod(state.dimensions)):
            return  # a new size: resized
        state.data = state.data.reshape(old)
        state.dimensions = old


@deep_bug("weights-requantized-in-place", "POOL-1",
          "a prepared model with a signed quantized tensor constant in an mmap_fd constant pool converts that "
          "constant in place on its third execution, so from the fourth on it computes with the converted weights",
          Reach.STATE)
class WeightsRequantizedInPlace(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        if execution.earlier < 3:
            return
        subgraph = execution.model.main
        pooled = [o for o in subgraph.operands
                  if o.lifetime == OperandLifeTime.CONSTANT_REFERENCE and o.type == OperandType.TENSOR_QUANT8_ASYMM_SIGNED]
        if not pooled:
            return
        if execution.model.pools[pooled[0].location.pool_index].kind != MemoryKind.MMAP_FD:
            return  # ashmem weights are copied at preparation
        index = subgraph.output_indexes[0]
        values[index] = wrong(values[index])
