"""Execution of a request on a prepared model (SPEC §2 POOL-2, §3 DOM-ROLE/DYN/STATE, §4 REQ).

Three phases, in the order a reader checks them against SPEC:

1. `bind_request` applies every INVALID_ARGUMENT rule of the request without touching memory;
2. under the buffers' locks, `_read_inputs` maps pools (unusable handle: GENERAL_FAILURE) and
   reads inputs, the operations run, and `_check_outputs` decides shapes and sufficiency;
3. only when every output fits are outputs written, exactly at their regions.

A failed execution leaves every buffer it would have written uninitialized (DOM-STATE-1).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from harness.api.hal import (
    DriverError,
    ErrorStatus,
    ExecutionResult,
    IODirection,
    Operand,
    OperandLifeTime,
    OutputShape,
    Request,
    RequestArgument,
    Subgraph,
    Timing,
    is_fully_specified,
    numpy_dtype,
)
from harness.api.memory import DetachedRegion, Memory, MemoryMapError, read_detached, seal_against_shrinking

from .buffers import ManagedBuffer, TokenTable, locked
from .ops import OMITTABLE_OUTPUTS, OPTIONAL_INPUTS, KernelError, control_flow
from .validation import Rules, enforce

if TYPE_CHECKING:  # pragma: no cover
    from .device import ReferencePreparedModel

Dims = tuple[int, ...]


@dataclass
class Binding:
    """One request argument resolved against the model and the request's pools."""

    direction: IODirection
    io_index: int
    operand_index: int
    operand: Operand
    argument: RequestArgument
    dimensions: Dims
    memory: Memory | None = None
    buffer: ManagedBuffer | None = None


def map_memory(rules: Rules, memory: Memory, *, writable: bool, rule: str) -> np.ndarray:
    """Map a memory for the driver's use; an unusable handle is GENERAL_FAILURE (POOL-4).

    Memory is mapped only once it is sealed against shrinking, so a client that shrinks
    it later cannot make the driver fault (SVC-3); memory that cannot be sealed (regular
    files, memfds without sealing) is copied in with pread and written back with pwrite.
    """
    enforce(rules.memory_kind_known(memory), "POOL-5", lambda: f"unknown memory kind {memory.kind!r}")
    try:
        if memory.closed or not seal_against_shrinking(memory.fd):
            return read_detached(memory.fd if not memory.closed else -1, memory.offset, memory.size, writable=writable)
        return memory.map(writable=writable)
    except MemoryMapError as error:
        raise DriverError(ErrorStatus.GENERAL_FAILURE, f"[{rule}] cannot use {memory!r}: {error.strerror}", rule=rule) from None


# --------------------------------------------------------------------------- phase 1


def bind_request(prepared: ReferencePreparedModel, request: Request, tokens: TokenTable) -> list[Binding]:
    rules = prepared.device.rules
    subgraph = prepared.model.main
    enforce(rules.argument_counts_match(len(request.inputs), len(request.outputs), subgraph), "REQ-1",
                  f"{len(request.inputs)} inputs and {len(request.outputs)} outputs given, model has "
                  f"{len(subgraph.input_indexes)} and {len(subgraph.output_indexes)}")
    pools: list[Memory | ManagedBuffer] = []  # each request pool: a memory, or the buffer its token names
    for index, pool in enumerate(request.pools):
        if isinstance(pool, Memory):
            enforce(rules.memory_kind_known(pool), "POOL-5", lambda: f"pool {index}: unknown memory kind {pool.kind!r}")
            pools.append(pool)
            continue
        if isinstance(pool, bool) or not isinstance(pool, int):
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"[REQ-2] pool {index} is neither a memory nor a token: {pool!r}", rule="REQ-2")
        enforce(rules.token_positive(pool), "DOM-ROLE-1", lambda: f"pool {index}: token {pool}")
        buffer = tokens.get(pool)
        if buffer is None:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"[DOM-ROLE-1] pool {index}: token {pool} names no live buffer", rule="DOM-ROLE-1")
        pools.append(buffer)

    bindings: list[Binding] = []
    token_uses: list[tuple[int, str]] = []
    arguments = [(IODirection.INPUT, i, a) for i, a in enumerate(request.inputs)]
    arguments += [(IODirection.OUTPUT, i, a) for i, a in enumerate(request.outputs)]
    for direction, io_index, argument in arguments:
        where = f"{direction.value} {io_index}"
        indexes = subgraph.input_indexes if direction is IODirection.INPUT else subgraph.output_indexes
        operand_index = indexes[io_index]
        operand = subgraph.operands[operand_index]
        enforce(rules.no_value_argument_empty(argument), "REQ-2", lambda: f"{where}: hasNoValue with a location or dimensions")
        if argument.has_no_value:
            # an optional input of every operation reading it (TRANSPOSE's permutation) may be omitted
            if direction is IODirection.INPUT and _omittable(subgraph, operand_index):
                bindings.append(Binding(direction, io_index, operand_index, operand, argument, operand.dimensions))
                continue
            if direction is IODirection.INPUT:
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"[REQ-1] {where}: a required input has no value", rule="REQ-1")
            bindings.append(Binding(direction, io_index, operand_index, operand, argument, operand.dimensions))
            continue
        enforce(rules.pool_index_in_range(argument, len(pools)), "REQ-2", lambda: f"{where}: pool index {argument.location.pool_index} of {len(pools)}")
        source = pools[argument.location.pool_index]
        dimensions = rules.argument_dimensions(argument, operand)
        if dimensions is None:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"[REQ-2] {where}: dimensions {argument.dimensions} conflict with the model's {operand.dimensions}", rule="REQ-2")
        binding = Binding(direction, io_index, operand_index, operand, argument, dimensions)
        if not isinstance(source, Memory):
            _bind_token(prepared, binding, source, where)
            token_uses.append((source.token, direction.value))  # per buffer, whatever pool slots name it
        else:
            binding.memory = source
            enforce(rules.region_within_memory(argument.location, source), "REQ-2", lambda: f"{where}: region {argument.location} beyond {source.size} bytes")
            if direction is IODirection.INPUT:
                enforce(rules.input_fully_specified(operand.type, dimensions), "REQ-2", lambda: f"{where}: input dimensions {dimensions} not fully specified")
            enforce(rules.length_matches_dimensions(argument.location, operand.type, dimensions), "REQ-2",
                          lambda: f"{where}: length {argument.location.length} does not hold dimensions {dimensions}")
        bindings.append(binding)
    enforce(rules.token_output_exclusive(token_uses), "DOM-ROLE-3", "a token used as an output is used again")
    return bindings


def _omittable(subgraph, operand_index: int) -> bool:
    readers = [(o, o.inputs.index(operand_index)) for o in subgraph.operations if operand_index in o.inputs]
    return bool(readers) and all(at in OPTIONAL_INPUTS.get(o.type, ()) for o, at in readers)


def _bind_token(prepared: ReferencePreparedModel, binding: Binding, buffer: ManagedBuffer, where: str) -> None:
    rules = prepared.device.rules
    enforce(rules.token_location_zero(binding.argument), "DOM-ROLE-4", lambda: f"{where}: token pool with location {binding.argument.location}")
    enforce(rules.role_allowed(buffer.roles, prepared, binding.direction, binding.io_index), "DOM-ROLE-2",
                  lambda: f"{where}: buffer {buffer.token} was not allocated for this use")
    combined = rules.combine_dimensions(buffer.initial_dimensions, binding.dimensions)
    if combined is None:
        raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                          f"[DOM-DYN-2] {where}: dimensions {binding.dimensions} conflict with buffer {buffer.initial_dimensions}", rule="DOM-DYN-2")
    binding.dimensions = combined
    binding.buffer = buffer


# --------------------------------------------------------------------------- phases 2 and 3


def execute(prepared: ReferencePreparedModel, request: Request, tokens: TokenTable) -> ExecutionResult:
    started = time.perf_counter_ns()
    rules = prepared.device.rules
    bindings = bind_request(prepared, request, tokens)
    reads = [b.buffer for b in bindings if b.buffer is not None and b.direction is IODirection.INPUT]
    writes = [b.buffer for b in bindings if b.buffer is not None and b.direction is IODirection.OUTPUT]
    with locked(reads, writes):
        try:
            views = _map_pools(prepared.device, request, bindings)
            values, outs = _read_inputs(prepared, bindings, views)
            with control_flow.loop_timeout(request.loop_timeout_ns):
                _run_operations(prepared, values, outs)
            outputs = [b for b in bindings if b.direction is IODirection.OUTPUT]
            shapes = _check_outputs(rules, outputs, values)
            if not all(s.is_sufficient for s in shapes):
                raise DriverError(ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, "[DOM-DYN-2] an output region is too small", tuple(shapes), rule="DOM-DYN-2")
            prepared.device.write_outputs(outputs, values, views)
        except BaseException:
            for buffer in writes:
                buffer.invalidate()
            raise
    elapsed = time.perf_counter_ns() - started
    return ExecutionResult(True, tuple(shapes), Timing(elapsed, elapsed))


def _map_pools(device, request: Request, bindings: Sequence[Binding]) -> dict[int, np.ndarray]:
    """Map each memory pool the request uses once, writable when an output lives in it."""
    writable: dict[int, bool] = {}
    for b in bindings:
        if b.memory is not None:
            index = b.argument.location.pool_index
            writable[index] = writable.get(index, False) or b.direction is IODirection.OUTPUT
    rule = "POOL-4"
    return {i: device.map_memory(request.pools[i], writable=w, rule=rule)  # type: ignore[arg-type]
            for i, w in writable.items()}


def _region(rules: Rules, binding: Binding, views: dict[int, np.ndarray], nbytes: int) -> np.ndarray:
    loc = binding.argument.location
    start, end = rules.region_bounds(loc.offset, nbytes)
    return views[loc.pool_index][start:end]


def _read_inputs(
    prepared: ReferencePreparedModel, bindings: Sequence[Binding], views: dict[int, np.ndarray]
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Operand values for constants and inputs, and preallocated output views (zero copy)."""
    rules = prepared.device.rules
    values = dict(prepared.constants)
    outs: dict[int, np.ndarray] = {}
    for b in bindings:
        dtype = np.dtype(numpy_dtype(b.operand.type))
        if b.direction is IODirection.INPUT:
            if b.argument.has_no_value:
                values[b.operand_index] = np.empty(0, dtype)
            elif b.buffer is not None:
                values[b.operand_index] = _read_token(prepared.device.rules, b)
            else:
                region = _region(rules, b, views, b.argument.location.length)
                values[b.operand_index] = region.view(dtype).reshape(b.dimensions)
        elif b.memory is not None and is_fully_specified(b.operand.type, b.dimensions):
            region = _region(rules, b, views, b.argument.location.length)
            outs[b.operand_index] = region.view(dtype).reshape(b.dimensions)
    return values, outs


def _read_token(rules: Rules, binding: Binding) -> np.ndarray:
    buffer = binding.buffer
    assert buffer is not None
    enforce(rules.input_buffer_initialized(buffer.initialized), "DOM-STATE-2",
                  lambda: f"input {binding.io_index}: buffer {buffer.token} is uninitialized")
    if rules.combine_dimensions(binding.dimensions, buffer.dimensions) is None:
        raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                          f"[DOM-DYN-2] input {binding.io_index}: dimensions {binding.dimensions} conflict with the buffer's {buffer.dimensions}", rule="DOM-DYN-2")
    return buffer.value()


def _run_operations(prepared: ReferencePreparedModel, values: dict[int, np.ndarray], outs: dict[int, np.ndarray]) -> None:
    _run_subgraph(prepared, prepared.model.main, values, outs, "")


def _run_subgraph(prepared: ReferencePreparedModel, subgraph: Subgraph, values: dict[int, np.ndarray],
                  outs: dict[int, np.ndarray], where: str) -> None:
    """Run ``subgraph``'s operations on ``values`` (its inputs and constants), adding every operand they
    compute; ``where`` names a referenced subgraph in errors ("" for the main one)."""
    rules, kernels = prepared.device.rules, prepared.device.kernels
    operands = subgraph.operands
    for number, operation in enumerate(subgraph.operations):
        first_output = operation.outputs[0]
        inputs = [values[i] for i in operation.inputs]
        try:
            runner = prepared.device.runners.get(operation.type)
            if runner is not None:  # IF and WHILE run referenced subgraphs, which no kernel is given
                result: np.ndarray | tuple[np.ndarray, ...] = runner(
                    inputs, [operands[i] for i in operation.inputs], len(operation.outputs),
                    lambda index, arrays: _run_referenced(prepared, index, arrays, f"{where}operation {number} "
                                                          f"({operation.type.name}) > "))
            else:
                result = kernels[operation.type].run(inputs, [operands[i] for i in operation.inputs], operands[first_output],
                                                     outs.get(first_output))
        except KernelError as error:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"{where}operation {number} ({operation.type.name}): {error}") from None
        # a kernel of several outputs (SPLIT, TOPK_V2) returns one array per output operand, each of its own shape;
        # one whose last outputs NNAPI makes optional (the sequence RNNs' and LSTMs' states) returns them all, and
        # a model that leaves out exactly those gets the others
        results = result if isinstance(result, tuple) else (result,)
        if len(results) - OMITTABLE_OUTPUTS.get(operation.type, 0) == len(operation.outputs):
            results = results[:len(operation.outputs)]
        if len(results) != len(operation.outputs):
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"{where}operation {number} ({operation.type.name}) produced "
                              f"{len(results)} outputs, the model gives it {len(operation.outputs)}")
        for output_index, array in zip(operation.outputs, results):
            output = operands[output_index]
            if output.lifetime == OperandLifeTime.TEMPORARY_VARIABLE and rules.combine_dimensions(output.dimensions, array.shape) is None:
                raise DriverError(ErrorStatus.GENERAL_FAILURE,
                                  f"{where}operation {number} ({operation.type.name}) produced {array.shape}, operand {output_index} declares {output.dimensions}")
            values[output_index] = array


def _run_referenced(prepared: ReferencePreparedModel, index: int, arrays: Sequence[np.ndarray], where: str) -> list[np.ndarray]:
    """Referenced subgraph ``index`` run on ``arrays``, its outputs' values.  A value whose shape its
    subgraph's operand does not allow fails the execution, as an operation's output would."""
    rules = prepared.device.rules
    subgraph = prepared.model.referenced[index]
    where = f"{where}referenced subgraph {index}: "
    values = dict(prepared.referenced_constants[index])
    for io_index, (operand_index, array) in enumerate(zip(subgraph.input_indexes, arrays)):
        declared = subgraph.operands[operand_index].dimensions
        if rules.combine_dimensions(declared, array.shape) is None:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"{where}input {io_index} of shape {array.shape}, "
                              f"operand {operand_index} declares {declared}")
        values[operand_index] = array
    _run_subgraph(prepared, subgraph, values, {}, where)
    results = []
    for io_index, operand_index in enumerate(subgraph.output_indexes):
        array, declared = values[operand_index], subgraph.operands[operand_index].dimensions
        if rules.combine_dimensions(declared, array.shape) is None:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"{where}output {io_index} of shape {array.shape}, "
                              f"operand {operand_index} declares {declared}")
        results.append(array)
    return results


def _check_outputs(rules: Rules, outputs: Sequence[Binding], values: dict[int, np.ndarray]) -> list[OutputShape]:
    shapes = []
    for b in outputs:
        shape = tuple(values[b.operand_index].shape)
        if rules.combine_dimensions(b.dimensions, shape) is None:
            rule = "DOM-DYN-2" if b.buffer is not None else "REQ-2"
            raise DriverError(ErrorStatus.GENERAL_FAILURE,
                              f"[{rule}] output {b.io_index}: produced shape {shape} cannot be stored as {b.dimensions}", rule=rule)
        sufficient = b.memory is None or rules.output_sufficient(values[b.operand_index].nbytes, b.argument.location.length)
        shapes.append(OutputShape(shape, sufficient))
    return shapes


def write_outputs(rules: Rules, outputs: Sequence[Binding], values: dict[int, np.ndarray], views: dict[int, np.ndarray]) -> None:
    for b in outputs:
        value = values[b.operand_index]
        if b.buffer is not None:
            b.buffer.store(value)
        elif b.memory is not None:
            region = _region(rules, b, views, value.nbytes)
            if not _is_same_memory(region, value):  # kernels that wrote in place need no copy
                region[:] = np.ascontiguousarray(value, dtype=numpy_dtype(b.operand.type)).reshape(-1).view(np.uint8)
            pool = views[b.argument.location.pool_index]
            if isinstance(pool, DetachedRegion):
                try:
                    pool.write_back(b.argument.location.offset, value.nbytes)
                except (MemoryMapError, OSError) as error:
                    raise DriverError(ErrorStatus.GENERAL_FAILURE, f"[POOL-4] output {b.io_index}: {error}", rule="POOL-4") from None


def _is_same_memory(region: np.ndarray, value: np.ndarray) -> bool:
    return value.flags.c_contiguous and value.nbytes == region.nbytes and value.ctypes.data == region.ctypes.data
