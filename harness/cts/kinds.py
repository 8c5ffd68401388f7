"""VTS's test kinds, run on the driver under test: general, dynamic output shape, memory domain.

- **general**: inputs in one memory and outputs in another, of one memory kind; then every
  output is read back and judged;
- **dynamic output shape**: the model's outputs have unknown extents (rank kept); a first run
  gives the first output one byte too few and must fail OUTPUT_INSUFFICIENT_SIZE naming the shape it
  needs; a second run with room must succeed and report every output's shape;
- **memory domain**: every input and output is a driver-managed buffer allocated for its role,
  filled with copy_from and read with copy_to.

Each function returns the outputs the driver produced, or raises `GoldenFailure` saying which
step went wrong and what the driver said.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from harness.api.errors import DriverFault
from harness.api.hal import (BufferDesc, BufferRole, DataLocation, Device, DriverError, ErrorStatus, Model, Request,
                             RequestArgument, Subgraph, is_token, numpy_dtype)
from harness.api.memory import Memory, MemoryKind, create_ashmem, create_hardware_buffer_blob, create_mmap_fd

from harness.judging.builders import pack_request

from .corpus import GoldenCase

__all__ = ["AllocationRefused", "GoldenFailure", "GoldenKind", "dynamic_main", "run_dynamic_output_shape", "run_general",
           "run_memory_domain"]


class GoldenKind(enum.StrEnum):
    GENERAL = "general"
    DYNAMIC_OUTPUT_SHAPE = "dynamic_output_shape"
    MEMORY_DOMAIN = "memory_domain"


class AllocationRefused(Exception):
    """The driver refused a buffer for the example with GENERAL_FAILURE: DOM-ALLOC-3 lets a driver
    refuse a valid allocation (a memory limit), so the example says nothing of the driver: it did
    not run.  ``error`` is the driver's refusal."""

    def __init__(self, error: DriverError) -> None:
        super().__init__(str(error))
        self.error = error


class GoldenFailure(Exception):
    """A golden example failed before its outputs could be judged: which step, and what happened."""

    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"{step}: {detail}")
        self.step = step
        self.detail = detail


MEMORY_FACTORIES: dict[str, Callable[[int], Memory]] = {
    MemoryKind.ASHMEM: create_ashmem,
    MemoryKind.MMAP_FD: lambda size: create_mmap_fd(size, offset=64),  # a region that does not start the file
    MemoryKind.HARDWARE_BUFFER_BLOB: create_hardware_buffer_blob,
}


def _prepare(device: Device, model: Model):
    try:
        return device.prepare_model(model)
    except DriverError as error:
        raise GoldenFailure("prepare_model", str(error)) from None


def _pack(golden: GoldenCase, model: Model, capacities: Sequence[int], memory_kind: str) -> tuple[Request, Memory, Memory]:
    return pack_request(model, golden.inputs, capacities, MEMORY_FACTORIES[memory_kind])


def _read(golden: GoldenCase, request: Request, memory: Memory, shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    data = memory.read()
    results = []
    for argument, index, shape in zip(request.outputs, golden.main.output_indexes, shapes):
        dtype = np.dtype(numpy_dtype(golden.main.operands[index].type))
        count = int(np.prod(shape, dtype=np.int64))
        start = argument.location.offset
        results.append(np.frombuffer(data, dtype, count, start).reshape(shape).copy())
    return results


def _execute(prepared, request: Request, step: str):
    try:
        return prepared.execute(request)
    except DriverError as error:
        raise GoldenFailure(step, str(error)) from None


def run_general(device: Device, golden: GoldenCase, memory_kind: str) -> list[np.ndarray]:
    with golden.open_model() as model:
        prepared = _prepare(device, model)
        capacities = [max(o.nbytes, 1) for o in golden.outputs]
        request, inputs, outputs = _pack(golden, model, capacities, memory_kind)
        with inputs, outputs:
            _execute(prepared, request, "execute")
            return _read(golden, request, outputs, [o.shape for o in golden.outputs])


def dynamic_main(golden: GoldenCase) -> Subgraph:
    """The main subgraph with every output's extents unknown (its rank kept), as VTS's dynamic shape test."""
    operands = list(golden.main.operands)
    for index in golden.main.output_indexes:
        operands[index] = replace(operands[index], dimensions=(0,) * len(operands[index].dimensions))
    return replace(golden.main, operands=tuple(operands))


def run_dynamic_output_shape(device: Device, golden: GoldenCase) -> list[np.ndarray]:
    with golden.open_model(dynamic_main(golden)) as model:
        return _run_dynamic_output_shape(device, golden, model)


def _run_dynamic_output_shape(device: Device, golden: GoldenCase, model: Model) -> list[np.ndarray]:
    prepared = _prepare(device, model)
    expected_shapes = [tuple(o.shape) for o in golden.outputs]
    # a scalar output (RANK's) has no extent to leave unknown: a region too short for it breaks REQ-2's
    # length rule, so only an output of rank 1 or more is probed with one byte too few
    first = golden.main.operands[golden.main.output_indexes[0]] if golden.main.output_indexes else None
    if golden.outputs and golden.outputs[0].nbytes > 0 and first is not None and first.dimensions:
        short = [max(o.nbytes, 1) for o in golden.outputs]
        short[0] = golden.outputs[0].nbytes - 1
        request, inputs, outputs = _pack(golden, model, short, MemoryKind.ASHMEM)
        with inputs, outputs:
            try:
                prepared.execute(request)
            except DriverError as error:
                if error.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
                    raise GoldenFailure("execute with output 0 one byte short", f"{error} (expected OUTPUT_INSUFFICIENT_SIZE)") from None
                if not error.output_shapes or tuple(error.output_shapes[0].dimensions) != expected_shapes[0] \
                        or error.output_shapes[0].is_sufficient:
                    raise GoldenFailure("execute with output 0 one byte short",
                                        f"outputShapes {error.output_shapes} do not name output 0's shape {expected_shapes[0]} "
                                        "as insufficient") from None
                roomy = [i for i, shape in enumerate(error.output_shapes[1:], 1) if not shape.is_sufficient]
                if roomy:  # their regions hold them (DOM-DYN-2: isSufficient is per output)
                    raise GoldenFailure("execute with output 0 one byte short",
                                        f"outputShapes {error.output_shapes} call outputs {roomy} insufficient, "
                                        "though their regions hold them") from None
            else:
                raise GoldenFailure("execute with output 0 one byte short", "succeeded (expected OUTPUT_INSUFFICIENT_SIZE)")
    request, inputs, outputs = _pack(golden, model, [max(o.nbytes, 1) for o in golden.outputs], MemoryKind.ASHMEM)
    with inputs, outputs:
        result = _execute(prepared, request, "execute with room for every output")
        reported = [tuple(s.dimensions) for s in result.output_shapes]
        if reported != expected_shapes:
            raise GoldenFailure("execute with room for every output",
                                f"outputShapes {reported} where the outputs have shapes {expected_shapes}")
        return _read(golden, request, outputs, expected_shapes)


def run_memory_domain(device: Device, golden: GoldenCase) -> list[np.ndarray]:
    with golden.open_model() as model:
        return _run_memory_domain(device, golden, _prepare(device, model))


def _run_memory_domain(device: Device, golden: GoldenCase, prepared) -> list[np.ndarray]:
    buffers: list = []
    tokens: list[int] = []
    memories: list[Memory] = []
    finished = False
    try:
        arguments = []
        for io_index, value in enumerate(golden.inputs):
            if value is None:
                arguments.append(RequestArgument(has_no_value=True))
                continue
            buffer, token = _allocate(device, prepared, input_roles=[BufferRole(0, io_index)])
            buffers.append(buffer)
            memory = create_ashmem(max(value.nbytes, 1))
            memories.append(memory)
            memory.write(np.ascontiguousarray(value).tobytes())
            if value.nbytes:
                try:
                    buffer.copy_from(memory, tuple(value.shape))
                except DriverError as error:
                    raise GoldenFailure(f"copy_from into input {io_index}'s buffer", str(error)) from None
            arguments.append(RequestArgument(False, DataLocation(len(tokens), 0, 0)))
            tokens.append(token)
        outs = []
        for io_index in range(len(golden.outputs)):
            buffer, token = _allocate(device, prepared, output_roles=[BufferRole(0, io_index)])
            buffers.append(buffer)
            outs.append(RequestArgument(False, DataLocation(len(tokens), 0, 0)))
            tokens.append(token)
        _execute(prepared, Request(tuple(arguments), tuple(outs), tuple(tokens)), "execute on driver-managed buffers")
        results = []
        for io_index, expected in enumerate(golden.outputs):
            memory = create_ashmem(max(expected.nbytes, 1))
            memories.append(memory)
            if expected.nbytes:
                try:
                    buffers[len(buffers) - len(golden.outputs) + io_index].copy_to(memory)
                except DriverError as error:
                    raise GoldenFailure(f"copy_to from output {io_index}'s buffer", str(error)) from None
            raw = memory.read()[: expected.nbytes]
            results.append(np.frombuffer(raw, expected.dtype).reshape(expected.shape).copy())
        finished = True
        return results
    finally:
        for buffer in buffers:
            if finished:
                buffer.release()
            else:  # the failure that ended the example is its verdict, not what a release met after it
                with contextlib.suppress(DriverFault):  # (a crash: the buffers went with the service)
                    buffer.release()
        for memory in memories:
            memory.close()


def _allocate(device: Device, prepared, input_roles=(), output_roles=()):
    try:
        buffer, token = device.allocate(BufferDesc(), [prepared], list(input_roles), list(output_roles))
    except DriverError as error:
        if error.status == ErrorStatus.GENERAL_FAILURE:
            raise AllocationRefused(error) from None
        raise GoldenFailure("allocate", str(error)) from None
    if not is_token(token):
        raise GoldenFailure("allocate", f"token {token!r} is not a positive integer (DOM-ALLOC-3)")
    return buffer, int(token)  # an integer of any type is the same token; the request carries it as an int

