"""Scenarios as plain data: a model, the memories a request uses, and the request.

A `Scenario` holds bytes and descriptions, never live handles.  `Scenario.materialize`
makes fresh memories each time it is called, so the same scenario can run on the
reference and on the driver under test without one driver seeing the other's writes,
and a failing scenario can be printed as a standalone reproducer.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace


import numpy as np

from harness.api.hal import (DataLocation, Model, OperandLifeTime, OperandType, Request, RequestArgument, Subgraph,
                             numpy_dtype)
from harness.api.memory import (
    HardwareBufferDesc,
    HardwareBufferFormat,
    Memory,
    create_ashmem,
    create_hardware_buffer_blob,
    create_file_mmap_fd,
    create_mmap_fd,
)

__all__ = ["DEFECTS", "Defect", "GUARD_BYTE", "MemorySpec", "Scenario", "TokenRef", "make_memory", "outside_region", "with_constants",
           "with_constants_reversed"]

#: What fills an ``mmap_fd`` file around a guarded region (`MemorySpec.guard`).
GUARD_BYTE = b"\xee"


def outside_region(memory: Memory, spec: MemorySpec) -> bytes:
    """The bytes of a guarded ``mmap_fd`` file outside the memory's region, as they are now."""
    if spec.kind != "mmap_fd" or not spec.guard or memory.closed:
        return b""
    before = os.pread(memory.fd, spec.file_offset, 0)
    after = os.pread(memory.fd, spec.guard + 64, spec.file_offset + spec.size)  # and anything that grew the file
    return before + after


class Defect(enum.StrEnum):
    """Ways to make a handle unusable (POOL-4, POOL-5), applied when the memory is created."""

    NONE = ""
    CLOSED = "closed"  # the descriptor is closed
    PIPE = "pipe"  # the descriptor is a pipe, which cannot be mapped
    SHORT = "short"  # the file is half the size the handle claims
    UNKNOWN_KIND = "unknown-kind"  # the kind names no memory kind
    READ_ONLY = "read-only"  # the descriptor is opened read-only


DEFECTS: tuple[Defect, ...] = tuple(d for d in Defect if d is not Defect.NONE)


@dataclass(frozen=True)
class MemorySpec:
    """A memory to create: its kind, initial content, (``mmap_fd``) the region's offset in
    its file, and optionally a defect that makes the handle unusable."""

    kind: str
    content: bytes
    file_offset: int = 0
    defect: Defect = Defect.NONE
    # ``mmap_fd`` only: bytes of GUARD_BYTE before the region (the file offset) and ``guard``
    # after it in the same file, so that a write outside the region shows.
    guard: int = 0
    # ``mmap_fd`` only: the file is a regular one (weights on disk, the kind's common use), not a
    # memfd; a driver cannot seal it against shrinking and must still map it (POOL-3).
    in_file: bool = False

    @property
    def size(self) -> int:
        return len(self.content)


@dataclass(frozen=True)
class TokenRef:
    """A request pool that is a driver-managed buffer, named; each driver has its own token."""

    buffer: str


def make_memory(spec: MemorySpec) -> Memory:
    """Create a memory of ``spec.kind`` holding ``spec.content``, then apply ``spec.defect``."""
    memory = _create(spec)
    match spec.defect:
        case Defect.NONE:
            pass
        case Defect.CLOSED:
            memory.close()
        case Defect.PIPE:
            memory.close()
            read_end, write_end = os.pipe()
            os.close(write_end)
            memory = Memory(spec.kind, read_end, 0, spec.size, memory.hardware_desc)
        case Defect.SHORT:
            memory.resize(spec.size // 2)
            memory.size = spec.size
        case Defect.UNKNOWN_KIND:
            memory.kind = "ion"
        case Defect.READ_ONLY:
            frozen = memory.read_only()
            memory.close()
            memory = frozen
        case _:
            raise ValueError(f"unknown defect {spec.defect!r}; known: {', '.join(DEFECTS)}")
    return memory


def _create(spec: MemorySpec) -> Memory:
    size = spec.size
    if spec.kind == "ashmem":
        memory = create_ashmem(size)
    elif spec.kind == "mmap_fd":
        memory = (create_file_mmap_fd if spec.in_file else create_mmap_fd)(size, spec.file_offset)
        if spec.guard:
            os.ftruncate(memory.fd, spec.file_offset + size + spec.guard)
            os.pwrite(memory.fd, GUARD_BYTE * spec.file_offset, 0)
            os.pwrite(memory.fd, GUARD_BYTE * spec.guard, spec.file_offset + size)
    elif spec.kind == "hardware_buffer_blob":
        memory = create_hardware_buffer_blob(size)
    elif spec.kind == "hardware_buffer":
        memory = create_ashmem(size)  # an R8 image one row high: every byte is one pixel
        memory.kind = "hardware_buffer"
        memory.hardware_desc = HardwareBufferDesc(HardwareBufferFormat.R8_UNORM, width=size, height=1, stride=size)
    else:
        raise ValueError(f"unknown memory kind {spec.kind!r}")
    if size:
        memory.write(spec.content)
    return memory


@dataclass(frozen=True)
class Scenario:
    """One model and one request on it, as data."""

    subgraph: Subgraph
    operand_values: bytes = b""
    constant_pools: tuple[MemorySpec, ...] = ()
    inputs: tuple[RequestArgument, ...] = ()
    outputs: tuple[RequestArgument, ...] = ()
    request_pools: tuple[MemorySpec | TokenRef | int, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)
    # How many times `run_scenario` executes the request on one prepared model; its outcome is the
    # last execution's.  A failure on a later run of the same prepared model (weights a run
    # converted in place) shows only after the runs before it.
    executions: int = 1
    # The request's input values are a uniform sample the harness drew from a seed, not values a
    # search chose one by one.  Only then does the mean signed error over an output say something
    # about how the driver rounds (CHOICE-7's bias criterion): over chosen values, or over copies of
    # one value spread by broadcasting, it is one element's allowed step counted many times.
    sampled_values: bool = False
    # The model's relaxComputationFloat32toFloat16: its TENSOR_FLOAT32 may be computed with the
    # range and precision of float16 (NeuralNetworks.h), and is judged so (`bounds.float_format`).
    relaxed: bool = False
    # The subgraphs the model's SUBGRAPH operands name (Model.referenced): IF's branches, WHILE's
    # condition and body.  Their constants are copies in ``operand_values``.
    referenced: tuple[Subgraph, ...] = ()

    def build_model(self) -> Model:
        return Model(self.subgraph, self.operand_values, tuple(make_memory(p) for p in self.constant_pools),
                     referenced=self.referenced, relax_computation_float32_to_float16=self.relaxed)

    def build_request(self, tokens: Mapping[str, int] | None = None) -> tuple[Request, list[Memory | None]]:
        """The request with fresh memories; `TokenRef` pools become ``tokens[name]``.

        Returns the request and, per pool, its memory (None for token pools)."""
        pools: list[Memory | int] = []
        memories: list[Memory | None] = []
        for pool in self.request_pools:
            if isinstance(pool, MemorySpec):
                memory = make_memory(pool)
                pools.append(memory)
                memories.append(memory)
            else:
                pools.append((tokens or {})[pool.buffer] if isinstance(pool, TokenRef) else pool)
                memories.append(None)
        return Request(self.inputs, self.outputs, tuple(pools)), memories

    @contextmanager
    def materialize(self, tokens: Mapping[str, int] | None = None) -> Iterator[tuple[Model, Request, list[Memory | None]]]:
        """Fresh model and request memories, closed on exit."""
        model = self.build_model()
        request, memories = self.build_request(tokens)
        try:
            yield model, request, memories
        finally:
            for memory in (*model.pools, *memories):
                if memory is not None:
                    memory.close()


def constant_bytes(scenario: Scenario, index: int) -> bytes:
    """The bytes of constant operand ``index``, wherever the scenario keeps them."""
    operand = scenario.subgraph.operands[index]
    loc = operand.location
    source = scenario.operand_values if operand.lifetime == OperandLifeTime.CONSTANT_COPY else scenario.constant_pools[loc.pool_index].content
    return source[loc.offset : loc.offset + loc.length]


def with_constants_reversed(scenario: Scenario) -> Scenario:
    """Another model of the same graph: each tensor constant's elements in reverse order, where
    they stand (valid values of its type, at the same locations).  TENSOR_INT32 constants stay as
    they are: one may be a shape (RESHAPE), which reversed would be another graph's."""
    values = bytearray(scenario.operand_values)
    pools = [bytearray(pool.content) for pool in scenario.constant_pools]
    for index, operand in enumerate(scenario.subgraph.operands):
        if (operand.lifetime not in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
                or not operand.dimensions or operand.type == OperandType.TENSOR_INT32):
            continue
        loc = operand.location
        elements = np.frombuffer(constant_bytes(scenario, index), np.uint8).reshape(-1, np.dtype(numpy_dtype(operand.type)).itemsize)
        target = values if operand.lifetime == OperandLifeTime.CONSTANT_COPY else pools[loc.pool_index]
        target[loc.offset : loc.offset + loc.length] = elements[::-1].tobytes()
    return replace(scenario, operand_values=bytes(values),
                   constant_pools=tuple(replace(spec, content=bytes(content)) for spec, content in zip(scenario.constant_pools, pools)))


def with_constants(scenario: Scenario, how: str, pool_kind: str = "ashmem", file_offset: int = 0) -> Scenario:
    """The same scenario with every tensor constant moved to operandValues (``how="copy"``)
    or to one constant pool of ``pool_kind`` (``how="reference"``; an ``mmap_fd`` pool's region
    starts at ``file_offset`` of its file).  Scalars stay copies."""
    operands = list(scenario.subgraph.operands)
    values, pool = bytearray(), bytearray()
    for index, operand in enumerate(operands):
        if operand.lifetime not in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
            continue
        raw = constant_bytes(scenario, index)
        to_pool = how == "reference" and bool(operand.dimensions)
        store = pool if to_pool else values
        store.extend(b"\0" * (-len(store) % 8))
        location = DataLocation(0, len(store), len(raw))
        store.extend(raw)
        lifetime = OperandLifeTime.CONSTANT_REFERENCE if to_pool else OperandLifeTime.CONSTANT_COPY
        operands[index] = replace(operand, lifetime=lifetime, location=location)
    pools = (MemorySpec(pool_kind, bytes(pool), file_offset if pool_kind == "mmap_fd" else 0),) if pool else ()
    return replace(scenario, subgraph=replace(scenario.subgraph, operands=tuple(operands)),
                   operand_values=bytes(values), constant_pools=pools)
