"""Acme's own validation of models and requests: every rule a failure of which must be an error
status rather than a wrong answer or a crash."""

from __future__ import annotations

import fcntl
import math
import os
import stat
from collections.abc import Sequence

import numpy as np

from harness.api.hal import (DataLocation, DriverError, ErrorStatus, Model, Operand, OperandLifeTime, RequestArgument,
                             Subgraph, is_scalar_type, numpy_dtype)
from harness.api.memory import Memory, MemoryKind

#: The memory kinds Acme maps (POOL-3: ashmem and mmap_fd always, hardware_buffer_blob from HAL 1.3).
MEMORY_KINDS = frozenset({MemoryKind.ASHMEM, MemoryKind.MMAP_FD, MemoryKind.HARDWARE_BUFFER_BLOB})
_CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)

Dims = tuple[int, ...]


def invalid(message: str) -> DriverError:
    return DriverError(ErrorStatus.INVALID_ARGUMENT, message)


def failure(message: str) -> DriverError:
    return DriverError(ErrorStatus.GENERAL_FAILURE, message)


def byte_size(operand: Operand, dims: Sequence[int]) -> int:
    return np.dtype(numpy_dtype(operand.type)).itemsize * math.prod(dims)


def fully_known(operand: Operand, dims: Sequence[int]) -> bool:
    return is_scalar_type(operand.type) or (len(dims) > 0 and all(d > 0 for d in dims))


def merged(declared: Sequence[int], given: Sequence[int]) -> Dims | None:
    """Two views of one shape, each filling the other's unknowns (0, or no rank); None if they disagree."""
    if not given or not declared:
        return tuple(given or declared)
    if len(given) != len(declared) or any(g and d and g != d for g, d in zip(given, declared)):
        return None
    return tuple(g or d for g, d in zip(given, declared))


# --------------------------------------------------------------------------- memory


def check_memory(memory: object, what: str) -> Memory:
    """A pool this driver can use: a known kind whose descriptor really holds its region (POOL-4/5)."""
    if not isinstance(memory, Memory):
        raise invalid(f"{what}: Acme has no driver-managed buffers")
    if memory.kind not in MEMORY_KINDS:
        raise invalid(f"{what}: memory kind {memory.kind!r} is not supported")
    try:
        info = os.fstat(memory.fd)
    except OSError as error:
        raise failure(f"{what}: cannot use the descriptor: {error.strerror}") from None
    if memory.offset < 0 or memory.size < 0 or not stat.S_ISREG(info.st_mode) \
            or info.st_size < memory.offset + memory.size:
        raise failure(f"{what}: the descriptor does not hold {memory.size} bytes at {memory.offset}")
    return memory


def check_writable(memory: Memory, what: str) -> None:
    """An output pool must be open for writing: a read-only one fails before anything runs (POOL-5)."""
    try:
        mode = fcntl.fcntl(memory.fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError as error:
        raise failure(f"{what}: cannot use the descriptor: {error.strerror}") from None
    if mode == os.O_RDONLY:
        raise failure(f"{what}: read-only memory cannot hold an output")


def read(memory: Memory, offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` of the region, through the descriptor (never beyond the region)."""
    try:
        data = os.pread(memory.fd, length, memory.offset + offset)
    except OSError as error:
        raise failure(f"cannot read {memory.kind} memory: {error.strerror}") from None
    if len(data) != length:
        raise failure(f"{memory.kind} memory holds {len(data)} of {length} bytes at {offset}")
    return data


def write(memory: Memory, offset: int, data: bytes) -> None:
    try:
        written = os.pwrite(memory.fd, data, memory.offset + offset)
    except OSError as error:
        raise failure(f"cannot write {memory.kind} memory: {error.strerror}") from None
    if written != len(data):
        raise failure(f"wrote {written} of {len(data)} bytes")


# --------------------------------------------------------------------------- models


def check_structure(subgraph: Subgraph) -> None:
    """Indexes in range, inputs and outputs with their lifetimes, operations in dataflow order."""
    count = len(subgraph.operands)
    listed = [*subgraph.input_indexes, *subgraph.output_indexes,
              *(i for op in subgraph.operations for i in (*op.inputs, *op.outputs))]
    if any(not 0 <= i < count for i in listed):
        raise invalid("an operand index is out of range")
    lifetimes = [o.lifetime for o in subgraph.operands]
    if sorted(subgraph.input_indexes) != [i for i, t in enumerate(lifetimes) if t == OperandLifeTime.SUBGRAPH_INPUT] \
            or sorted(subgraph.output_indexes) != [i for i, t in enumerate(lifetimes) if t == OperandLifeTime.SUBGRAPH_OUTPUT]:
        raise invalid("the model's inputs and outputs must be exactly its SUBGRAPH_INPUT and SUBGRAPH_OUTPUT operands")
    known = {i for i, t in enumerate(lifetimes) if t in (OperandLifeTime.SUBGRAPH_INPUT, *_CONSTANT)}
    for number, operation in enumerate(subgraph.operations):
        if any(i not in known for i in operation.inputs):
            raise invalid(f"operation {number} reads an operand nothing wrote before it")
        for i in operation.outputs:
            if i in known or lifetimes[i] not in (OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_OUTPUT):
                raise invalid(f"operation {number} writes operand {i}, which is not a fresh result")
            known.add(i)
    if any(i not in known for i in subgraph.output_indexes):
        raise invalid("a model output is never written")
    for index, operand in enumerate(subgraph.operands):
        if operand.scale != 0 or operand.zero_point != 0 or operand.channel_quant is not None:
            raise invalid(f"operand {index}: {operand.type.name} carries no quantization")
        if is_scalar_type(operand.type) and operand.dimensions:
            raise invalid(f"operand {index}: a scalar has no dimensions")
        if any(d < 0 for d in operand.dimensions):
            raise invalid(f"operand {index}: negative dimension in {operand.dimensions}")
        if operand.lifetime not in _CONSTANT and operand.location != DataLocation():
            raise invalid(f"operand {index}: only a constant has a location")


def read_constants(model: Model) -> dict[int, np.ndarray]:
    """Every constant's value, read once at preparation (POOL-1); a bad pool fails preparation (POOL-4)."""
    pools = [check_memory(pool, f"model pool {number}") for number, pool in enumerate(model.pools)]
    values: dict[int, np.ndarray] = {}
    for index, operand in enumerate(model.main.operands):
        if operand.lifetime not in _CONSTANT:
            continue
        loc = operand.location
        if not fully_known(operand, operand.dimensions) or loc.offset < 0 or loc.length != byte_size(operand, operand.dimensions):
            raise invalid(f"operand {index}: a constant of {loc.length} bytes for dimensions {operand.dimensions}")
        if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
            if loc.pool_index != 0 or loc.offset + loc.length > len(model.operand_values):
                raise invalid(f"operand {index}: location {loc} is outside operandValues")
            raw = model.operand_values[loc.offset: loc.offset + loc.length]
        else:
            if not 0 <= loc.pool_index < len(pools) or loc.offset + loc.length > pools[loc.pool_index].size:
                raise invalid(f"operand {index}: location {loc} is outside the model's pools")
            raw = read(pools[loc.pool_index], loc.offset, loc.length)
        values[index] = np.frombuffer(raw, numpy_dtype(operand.type)).reshape(operand.dimensions).copy()
    return values


# --------------------------------------------------------------------------- requests


def check_argument(argument: RequestArgument, operand: Operand, pools: Sequence[Memory], what: str) -> Dims:
    """REQ-2 for one argument; the dimensions it has at execution (the model's merged with the request's)."""
    loc = argument.location
    if argument.has_no_value:
        raise invalid(f"{what}: every input and output of Acme's operations needs a value")
    if not 0 <= loc.pool_index < len(pools):
        raise invalid(f"{what}: pool {loc.pool_index} of {len(pools)}")
    if min(loc.offset, loc.length, loc.padding) < 0 or loc.offset + loc.length + loc.padding > pools[loc.pool_index].size:
        raise invalid(f"{what}: region {loc} is outside its pool")
    if is_scalar_type(operand.type) and argument.dimensions:
        raise invalid(f"{what}: a scalar has no dimensions, the request gives {argument.dimensions}")
    if any(d < 0 for d in argument.dimensions):
        raise invalid(f"{what}: negative dimension in {argument.dimensions}")
    dims = merged(operand.dimensions, argument.dimensions)
    if dims is None:
        raise invalid(f"{what}: dimensions {argument.dimensions} conflict with the model's {operand.dimensions}")
    if fully_known(operand, dims) and loc.length != byte_size(operand, dims):
        raise invalid(f"{what}: {loc.length} bytes cannot hold dimensions {dims}")
    return dims
