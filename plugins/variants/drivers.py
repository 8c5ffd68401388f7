"""Correct drivers that differ from the reference only where SPEC §8 lets them.

Each is the reference with one allowed difference, named after what it does; its docstring
cites the CHOICE it exercises.  They prove the suites' specificity: `harness score` requires
every one of them to pass.  A failure here is a false alarm of the harness, never a driver bug.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from harness.api.hal import (
    Capabilities,
    DriverError,
    ErrorStatus,
    ExecutionResult,
    FusedActivation,
    Model,
    OperandType,
    OperationType,
    Request,
    is_fully_specified,
    is_quantized_type,
)
from harness.api.memory import REQUIRED_KINDS
from reference_driver import ReferenceDevice, ReferencePreparedModel
from reference_driver import executor
from reference_driver.validation import argument_dimensions
from reference_driver.buffers import ManagedBuffer, ReadWriteLock, TokenTable
from reference_driver.device import ReferenceBuffer
from reference_driver.ops import KERNELS, Kernel, Refusal, _window, conv, nn, pooling
from reference_driver.ops._numeric import FLOAT_TENSORS, activate, check_rank, from_real, scalar

from . import fixed_point

F32, F16 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16
HANDLE_RULES = ("POOL-3", "POOL-4", "POOL-5")  # the handle defects of CHOICE-1


# --------------------------------------------------------------------------- CHOICE-1


def _restatus(status: ErrorStatus):
    """Run a call; a handle defect (POOL-3/4/5) it reports comes out with ``status`` instead."""

    def call(function, *args):
        try:
            return function(*args)
        except DriverError as error:
            if error.rule in HANDLE_RULES and error.status != status:
                raise DriverError(status, error.message, error.output_shapes, error.rule) from None
            raise

    return call


def handle_defects_as(status: ErrorStatus) -> ReferenceDevice:
    restatus = _restatus(status)

    class Prepared(ReferencePreparedModel):
        def execute(self, request: Request) -> ExecutionResult:
            return restatus(super().execute, request)

    class Device(ReferenceDevice):
        def prepare_model(self, model: Model) -> ReferencePreparedModel:
            return restatus(super().prepare_model, model)

    return Device(prepared_model_class=Prepared)


def handle_defects_invalid_argument() -> ReferenceDevice:
    """CHOICE-1: unusable handles (closed, pipe, short, unknown kind, read-only output) fail with
    INVALID_ARGUMENT instead of the recommended GENERAL_FAILURE, at the same stage."""
    return handle_defects_as(ErrorStatus.INVALID_ARGUMENT)


def handle_defects_device_unavailable() -> ReferenceDevice:
    """CHOICE-1: unusable handles fail with DEVICE_UNAVAILABLE: any error status is allowed."""
    return handle_defects_as(ErrorStatus.DEVICE_UNAVAILABLE)


# --------------------------------------------------------------------------- CHOICE-2


class _ValidatesEveryPoolModel(ReferencePreparedModel):
    def execute(self, request: Request) -> ExecutionResult:
        executor.bind_request(self, request, self.device.tokens)  # the request's own rules first
        for index, pool in enumerate(request.pools):
            if not isinstance(pool, int):  # every memory pool, used or not
                self.device.map_memory(pool, writable=False, rule="POOL-4")
        return super().execute(request)


class _ValidatesEveryPool(ReferenceDevice):
    def prepare_model(self, model: Model) -> ReferencePreparedModel:
        prepared = super().prepare_model(model)
        for pool in model.pools:  # every constant pool, referenced or not
            self.map_memory(pool, writable=False, rule="POOL-4")
        return prepared


def validates_unused_pools() -> ReferenceDevice:
    """CHOICE-2: maps every model pool at preparation and every request memory at execution,
    including pools nothing references, so an unusable unused pool fails the call."""
    return _ValidatesEveryPool(prepared_model_class=_ValidatesEveryPoolModel)


# --------------------------------------------------------------------------- CHOICE-3

CHUNK = 16


def chunked_padding_writes() -> ReferenceDevice:
    """CHOICE-3: writes outputs in 16-byte chunks and so scribbles over each output's padding
    (bytes between the data and length + padding), never past it."""
    return _ChunkedPaddingWrites()


class _ChunkedPaddingWrites(ReferenceDevice):
    def write_outputs(self, outputs, values, views):
        super().write_outputs(outputs, values, views)
        for binding in outputs:
            if binding.memory is None:
                continue
            loc = binding.argument.location
            end = loc.offset + loc.length + loc.padding
            written = values[binding.operand_index].nbytes
            chunk_end = min(end, loc.offset + -(-max(written, 1) // CHUNK) * CHUNK)
            if chunk_end > loc.offset + loc.length:  # the tail of the last chunk lands in the padding
                views[loc.pool_index][loc.offset + loc.length: chunk_end] = 0xCD


# --------------------------------------------------------------------------- CHOICE-4


class _EmptyShapesModel(ReferencePreparedModel):
    def execute(self, request: Request) -> ExecutionResult:
        result = super().execute(request)
        subgraph = self.model.main
        for argument, index in zip(request.outputs, subgraph.output_indexes):
            operand = subgraph.operands[index]
            dims = argument_dimensions(argument, operand)
            if dims is None or not is_fully_specified(operand.type, dims):
                return result
        return dataclasses.replace(result, output_shapes=())


def empty_output_shapes() -> ReferenceDevice:
    """CHOICE-4: returns empty outputShapes on success whenever every output is fully specified."""
    return ReferenceDevice(prepared_model_class=_EmptyShapesModel)


# --------------------------------------------------------------------------- CHOICE-5


class _Declaring(ReferenceDevice):
    """The reference limited to a declared subset: anything else is refused at preparation."""

    operations: frozenset[OperationType] = frozenset()
    operand_types: frozenset[OperandType] = frozenset()
    memory_domains = True
    dynamic_buffers = True

    def __init__(self) -> None:
        super().__init__()
        # SUBGRAPH operands only name IF's and WHILE's subgraphs: declaring the operation declares them
        # (as `harness.integration.golden` reads declarations)
        declared = self.operand_types | {OperandType.SUBGRAPH}

        def only_declared(kernel: Kernel) -> Kernel:
            def validate(ins, outs) -> Refusal | None:
                undeclared = next((o for o in (*ins, *outs) if o.type not in declared), None)
                if undeclared is not None:
                    return Refusal(f"operand type {undeclared.type.name} not declared")
                return kernel.validate(ins, outs)
            return Kernel(validate, kernel.run)

        self.kernels = {op: only_declared(kernel) for op, kernel in KERNELS.items() if op in self.operations}

    def capabilities(self) -> Capabilities:
        return dataclasses.replace(super().capabilities(), operations=self.operations, operand_types=self.operand_types,
                                   memory_domains=self.memory_domains, dynamic_buffers=self.dynamic_buffers)

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        if not self.memory_domains:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "this driver has no memory domains")
        return super().allocate(desc, prepared_models, input_roles, output_roles)


class _AddOnly(_Declaring):
    operations = frozenset({OperationType.ADD})
    operand_types = frozenset({F32, OperandType.INT32})


def add_only() -> ReferenceDevice:
    """CHOICE-5: declares ADD on TENSOR_FLOAT32 only (and the INT32 scalar of its activation)."""
    return _AddOnly()


class _QuantizedOnly(_Declaring):
    operations = frozenset(KERNELS) - {OperationType.DIV}
    operand_types = frozenset({OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_INT32, OperandType.INT32})


def quantized_only() -> ReferenceDevice:
    """CHOICE-5: no float type at all: TENSOR_QUANT8_ASYMM data (with TENSOR_INT32 biases and
    shapes, INT32 scalars) for every operation but DIV."""
    return _QuantizedOnly()


class _IntegerArithmeticOnly(_Declaring):
    operations = frozenset({OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV})
    operand_types = frozenset({OperandType.TENSOR_INT32, OperandType.INT32})


def integer_arithmetic_only() -> ReferenceDevice:
    """CHOICE-5: ADD, SUB, MUL and DIV on TENSOR_INT32 only (HAL 1.3), with memory domains: its
    buffers are checked with integer models, where a float or quantized type was all they knew."""
    return _IntegerArithmeticOnly()


class _SignedQuantizedOnly(_Declaring):
    operations = frozenset(KERNELS) - {OperationType.DIV}
    operand_types = frozenset({OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_INT32, OperandType.INT32,
                               OperandType.BOOL})


def signed_quantized_only() -> ReferenceDevice:
    """CHOICE-5: TENSOR_QUANT8_ASYMM_SIGNED data only (HAL 1.3; TENSOR_INT32 biases and shapes,
    INT32 and BOOL scalars) for every operation but DIV, with memory domains."""
    return _SignedQuantizedOnly()


class _FloatTensorsOnly(_Declaring):
    operations = frozenset(KERNELS)
    operand_types = frozenset({F32, F16, OperandType.INT32, OperandType.BOOL})


def float_tensors_only() -> ReferenceDevice:
    """CHOICE-5: every operation, on TENSOR_FLOAT32 and TENSOR_FLOAT16 tensors alone (INT32 and
    BOOL scalars), with memory domains: no TENSOR_INT32, so no RESHAPE model can be built (its
    shape is one), though RESHAPE is declared."""
    return _FloatTensorsOnly()


class _NoDomains(_Declaring):
    operations = frozenset(KERNELS)
    operand_types = ReferenceDevice().capabilities().operand_types
    memory_domains = False


def no_memory_domains() -> ReferenceDevice:
    """CHOICE-5: declares no memory-domain support (SPEC §3 is optional) and refuses allocate."""
    return _NoDomains()


class _StaticBuffersOnly(_Declaring):
    operations = frozenset(KERNELS)
    operand_types = ReferenceDevice().capabilities().operand_types
    dynamic_buffers = False

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
        state = buffer.state
        if not is_fully_specified(state.operand_type, state.initial_dimensions):
            buffer.release()
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "buffers of unknown shape are not supported (DOM-ALLOC-3)")
        return buffer, token


def refuses_dynamic_buffers() -> ReferenceDevice:
    """DOM-ALLOC-3 with CHOICE-5: refuses every buffer whose shape is not fully known at allocation
    with GENERAL_FAILURE, and declares so (Capabilities.dynamic_buffers=False)."""
    return _StaticBuffersOnly()


class _RequiredMemoryKindsOnly(ReferenceDevice):
    def capabilities(self) -> Capabilities:
        return dataclasses.replace(super().capabilities(), memory_kinds=frozenset(REQUIRED_KINDS))

    def map_memory(self, memory, *, writable, rule):
        if memory.kind not in REQUIRED_KINDS:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"memory kind {memory.kind!r} is not supported", rule=rule)
        return super().map_memory(memory, writable=writable, rule=rule)


def required_memory_kinds_only() -> ReferenceDevice:
    """CHOICE-5: declares and maps only the memory kinds POOL-3 requires (ashmem, mmap_fd,
    hardware_buffer_blob); a non-BLOB hardware buffer fails with GENERAL_FAILURE wherever it is
    handed over (CHOICE-1), as a constant pool, a request pool or a copy's memory."""
    return _RequiredMemoryKindsOnly()


class _ForgetsShapeWhenInvalid(ManagedBuffer):
    def invalidate(self) -> None:
        super().invalidate()
        self.dimensions = self.initial_dimensions  # no contents, so no shape of them


def forgets_shape_of_failed_writes() -> ReferenceDevice:
    """DOM-STATE-1: a failed write makes a buffer uninitialized *again*, as new; this driver also
    forgets the shape its lost contents had, so a buffer of unknown shape at allocation has an
    unknown size again: copy_to into memory of any size is GENERAL_FAILURE (DOM-STATE-2), where the
    reference, which keeps the last shape, checks the size first (DOM-COPY-1)."""
    return ReferenceDevice(managed_buffer_class=_ForgetsShapeWhenInvalid)


# --------------------------------------------------------------------------- CHOICE-6


class _RandomTokens(TokenTable):
    """Random positive tokens, and a released token handed out again half the time."""

    def __init__(self) -> None:
        super().__init__()
        self._random = random.Random()
        self._released_lock = threading.Lock()
        self._released: list[int] = []

    def new_token(self, live):
        with self._released_lock:
            if self._released and self._random.random() < 0.5:
                return self._released.pop(self._random.randrange(len(self._released)))
            token = self._random.randrange(1, 2**31)
            while token in live or token in self._released:
                token = self._random.randrange(1, 2**31)
            return token

    def remove(self, token: int) -> None:
        live = self.get(token) is not None
        super().remove(token)
        with self._released_lock:
            if live and token not in self._released:
                self._released.append(token)


def random_reused_tokens() -> ReferenceDevice:
    """CHOICE-6: tokens are random positive numbers, and released tokens are reused."""
    return ReferenceDevice(tokens=_RandomTokens())


CACHE_SIZE = 32


class _DescriptorCache:
    """Keeps a duplicate of the last ``CACHE_SIZE`` descriptors it saw, as a mapping cache would."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: collections.deque[int] = collections.deque()

    def keep(self, fd: int) -> None:
        if fd < 0:
            return
        try:
            duplicate = os.dup(fd)
        except OSError:
            return
        with self._lock:
            self._kept.append(duplicate)
            while len(self._kept) > CACHE_SIZE:
                os.close(self._kept.popleft())


def bounded_mapping_cache() -> ReferenceDevice:
    """CHOICE-6: caches up to 32 descriptors of the memories it maps (executions and copies)."""
    cache = _DescriptorCache()

    class Buffer(ReferenceBuffer):
        def copy_from(self, memory, dimensions=()):
            cache.keep(memory.fd)
            return super().copy_from(memory, dimensions)

        def copy_to(self, memory):
            cache.keep(memory.fd)
            return super().copy_to(memory)

    class Device(ReferenceDevice):
        def map_memory(self, memory, *, writable, rule):
            cache.keep(memory.fd)
            return super().map_memory(memory, writable=writable, rule=rule)

    return Device(buffer_class=Buffer)


_WORKERS = ThreadPoolExecutor(4, thread_name_prefix="variant-worker")
DELAY_S = 0.004


def threaded_slow() -> ReferenceDevice:
    """CHOICE-6: every execution and copy runs on a pool of worker threads, a few milliseconds
    late, in whatever order the pool picks."""

    def later(function, *args):
        def run():
            time.sleep(DELAY_S * random.random() * 2)
            return function(*args)
        return _WORKERS.submit(run).result()

    class Prepared(ReferencePreparedModel):
        def execute(self, request: Request) -> ExecutionResult:
            return later(super().execute, request)

    class Buffer(ReferenceBuffer):
        def copy_from(self, memory, dimensions=()):
            return later(super().copy_from, memory, dimensions)

        def copy_to(self, memory):
            return later(super().copy_to, memory)

    return ReferenceDevice(prepared_model_class=Prepared, buffer_class=Buffer)


class _BusyLock(ReadWriteLock):
    """Readers share the buffer; a read that finds a write in progress or waiting fails at once
    instead of waiting for it."""

    def _enter_reading(self) -> None:
        with self._cond:
            if self._writer or self._writers_waiting:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "the buffer is being written; read it again after")
            self._readers += 1


#: How long a write into a `busy_buffers_refuse_reads` buffer holds it (a device's DMA).
WRITE_S = 0.003


@dataclasses.dataclass(eq=False)
class _BusyBuffer(ManagedBuffer):
    lock: ReadWriteLock = dataclasses.field(default_factory=_BusyLock)

    def store(self, value: np.ndarray) -> None:
        time.sleep(WRITE_S)
        super().store(value)


def busy_buffers_refuse_reads() -> ReferenceDevice:
    """DOM-CONC-2: a read of a driver-managed buffer (copy_to, or an execution taking it as
    input) that meets a write of it in progress fails with GENERAL_FAILURE instead of waiting;
    writes take a few milliseconds.  Reads beside reads only all succeed (DOM-CONC-1)."""
    return ReferenceDevice(managed_buffer_class=_BusyBuffer)


#: What a `bounded_buffer_memory` driver holds at most: live buffers, and bytes in them.
BUFFER_SLOTS = 8
BUFFER_BYTES = 4096


class _BoundedBuffers(ReferenceDevice):
    def allocate(self, desc, prepared_models, input_roles, output_roles):
        buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
        others = [state for live in self.tokens.live_tokens() if live != token and (state := self.tokens.get(live))]
        held = sum(max(state.data.nbytes, state.byte_size or 0) for state in others)
        wanted = buffer.state.byte_size or 0  # a buffer of unknown shape takes memory when it is written
        if len(others) >= BUFFER_SLOTS or held + wanted > BUFFER_BYTES:
            buffer.release()
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"out of buffer memory: {len(others)} buffers live of "
                                                           f"{BUFFER_SLOTS}, {held} bytes held and {wanted} more asked "
                                                           f"of {BUFFER_BYTES} (DOM-ALLOC-3)")
        return buffer, token


def bounded_buffer_memory() -> ReferenceDevice:
    """DOM-ALLOC-3 with CHOICE-6: at most 8 buffers live and 4 KiB in them, counted at their current
    size (a buffer of unknown shape grows with what is written into it); an allocation past either
    is refused with GENERAL_FAILURE."""
    return _BoundedBuffers()


# --------------------------------------------------------------------------- CHOICE-7


def _accumulate(products: Sequence[tuple[np.ndarray, np.ndarray]], start: np.ndarray, dtype) -> np.ndarray:
    """acc = fma(a, b, acc) over ``products`` in reverse order, rounding to ``dtype`` at each step."""
    acc = start.astype(dtype)
    for a, b in reversed(products):
        acc = (acc.astype(np.float64) + a.astype(np.float64) * b.astype(np.float64)).astype(dtype)
    return acc


def _fully_connected_in(dtype):
    def run(values, ins, out_op, out):
        if ins[0].type not in FLOAT_TENSORS:
            return nn.run_fully_connected(values, ins, out_op, out)
        data, weights, bias = (np.asarray(v) for v in values[:3])
        if weights.ndim != 2 or data.ndim < 2 or data.size % weights.shape[1]:
            return nn.run_fully_connected(values, ins, out_op, out)  # the reference's error
        x = data.reshape(-1, weights.shape[1])
        start = np.broadcast_to(bias, (x.shape[0], weights.shape[0]))
        products = [(x[:, k:k + 1], weights[None, :, k]) for k in range(weights.shape[1])]
        result = _accumulate(products, start, dtype)
        return from_real(activate(result.astype(np.float64), scalar(values[3])), out_op)
    return run


def _conv_in(dtype):
    """CONV_2D in any signature, accumulated term by term in ``dtype`` (the reference's geometry and errors)."""
    def run(values, ins, out_op, out):
        if ins[0].type not in FLOAT_TENSORS:
            return nn.run_conv_2d(values, ins, out_op, out)
        data, filt, bias = nn.conv_weights(values, ins)
        g = nn.conv_geometry(values, ins, filt.shape, data.shape)
        windows = nn.conv_windows(nn.conv_input(data, ins[0], g, filt.shape[3]), g, filt.shape[1], filt.shape[2])
        products = [(windows[..., c, i, j][..., None], filt[:, i, j, c])
                    for i in range(filt.shape[1]) for j in range(filt.shape[2]) for c in range(filt.shape[3])]
        start = np.broadcast_to(bias, (*windows.shape[:3], filt.shape[0]))
        result = from_real(activate(_accumulate(products, start, dtype).astype(np.float64), g.activation), out_op)
        return result.transpose(0, 3, 1, 2) if g.nchw else result
    return run


# the convolutions and the pools in a float type of the variant's choosing


def _windowed_in(dtype) -> dict[OperationType, Kernel]:
    """DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D and the float pools summed in ``dtype``
    (the reference's geometry and errors): a depthwise filter tap by tap, a grouped or transposed
    one in matrix products (BLAS's order for float32), a pool's window by numpy's reduction; the
    quantized types as the reference computes them."""

    def convolution(prepare, total, reference_run):
        def run(values, ins, out_op, out):
            if ins[0].type not in FLOAT_TENSORS:
                return reference_run(values, ins, out_op, out)
            p = prepare(values, ins)
            p = dataclasses.replace(p, x=p.x.astype(dtype), filt=p.filt.astype(dtype), bias=p.bias.astype(dtype))
            return conv.finish(np.asarray(total(p) + p.bias, np.float64), p.g, out_op)
        return run

    def transposed(p):
        out_h = (p.x.shape[1] - 1) * p.g.stride_h + p.filt.shape[1] - p.g.pad_top - p.g.pad_bottom
        out_w = (p.x.shape[2] - 1) * p.g.stride_w + p.filt.shape[2] - p.g.pad_left - p.g.pad_right
        return _window.transpose_sum(p.x, p.filt, p.g, out_h, out_w)

    def pool(op: OperationType):
        def run(values, ins, out_op, out):
            if ins[0].type not in FLOAT_TENSORS:
                return KERNELS[op].run(values, ins, out_op, out)
            g, filter_h, filter_w = pooling.pool_geometry(values, ins, op.name)
            x = np.asarray(values[0].transpose(0, 2, 3, 1) if g.nchw else values[0]).astype(dtype)
            if op == OperationType.MAX_POOL_2D:
                result = _window.windows(x, g, filter_h, filter_w, op.name, fill=-np.inf).max(axis=(-2, -1))
            else:
                window = _window.windows(x * x if op == OperationType.L2_POOL_2D else x, g, filter_h, filter_w, op.name)
                count = pooling.counts(x, g, filter_h, filter_w, *window.shape[1:3]).astype(dtype)
                result = window.sum(axis=(-2, -1), dtype=dtype) / count
                result = np.sqrt(result) if op == OperationType.L2_POOL_2D else result
            stored = from_real(activate(np.asarray(result, np.float64), g.activation), out_op)
            return stored.transpose(0, 3, 1, 2) if g.nchw else stored
        return run

    runs = {
        OperationType.DEPTHWISE_CONV_2D: convolution(conv.prepare_depthwise, lambda p: _window.depthwise_sum(
            p.x, p.filt, p.g, p.count), conv.run_depthwise_conv_2d),
        OperationType.GROUPED_CONV_2D: convolution(conv.prepare_grouped, lambda p: _window.conv_sum(
            p.x, p.filt, p.g, p.count, "GROUPED_CONV_2D"), conv.run_grouped_conv_2d),
        OperationType.TRANSPOSE_CONV_2D: convolution(lambda values, ins: conv.prepare_transpose(values, ins)[0],
                                                     transposed, conv.run_transpose_conv_2d),
        **{op: pool(op) for op in (OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D, OperationType.L2_POOL_2D)},
    }
    return {op: Kernel(KERNELS[op].validate, run) for op, run in runs.items()}


def _sequential_sum(terms: np.ndarray, dtype) -> np.ndarray:
    """The sum over the last axis, last term first, rounding to ``dtype`` after each addition."""
    total = np.zeros(terms.shape[:-1], dtype)
    for k in reversed(range(terms.shape[-1])):
        total = (total + terms[..., k]).astype(dtype)
    return total


def instance_normalization_in(dtype, one_pass: bool) -> Kernel:
    """INSTANCE_NORMALIZATION of a float input computed in ``dtype`` step by step: the plane's sums
    term by term, the variance as the mean of squares less the squared mean (``one_pass``, which
    cancels) or as the mean of the centred squares, then 1 / sqrt(variance + epsilon)."""
    reference = KERNELS[OperationType.INSTANCE_NORMALIZATION]

    def run(values, ins, out_op, out):
        checked = reference.run(values, ins, out_op, None)  # the reference's errors
        if ins[0].type not in FLOAT_TENSORS or checked.size == 0:
            return checked
        nchw = bool(np.asarray(values[4]).reshape(()))
        x = np.asarray(values[0], dtype)
        x = x if nchw else x.transpose(0, 3, 1, 2)  # N, C, H, W
        gamma, beta, epsilon = (dtype(np.asarray(v).reshape(())) for v in values[1:4])
        planes = x.reshape(*x.shape[:2], -1)
        count = dtype(planes.shape[-1])
        with np.errstate(all="ignore"):
            mean = (_sequential_sum(planes, dtype) / count).astype(dtype)[..., None]
            centred = (planes - mean).astype(dtype)
            if one_pass:
                variance = (_sequential_sum((planes * planes).astype(dtype), dtype) / count).astype(dtype)
                variance = (variance - (mean[..., 0] * mean[..., 0]).astype(dtype)).astype(dtype)
            else:
                variance = (_sequential_sum((centred * centred).astype(dtype), dtype) / count).astype(dtype)
            scale = (gamma / np.sqrt((variance + epsilon).astype(dtype)).astype(dtype)).astype(dtype)[..., None]
            result = (centred * scale + beta).astype(dtype).reshape(x.shape)
        result = result if nchw else result.transpose(0, 2, 3, 1)
        return from_real(result.astype(np.float64), out_op)

    return Kernel(reference.validate, run)


def float32_fma_reordered() -> ReferenceDevice:
    """CHOICE-7: FULLY_CONNECTED and CONV_2D accumulate in float32, last term first, one fused
    multiply-add at a time, the other convolutions and the pools sum in float32 in their own
    order, and INSTANCE_NORMALIZATION computes in float32 with a one-pass variance (the reference
    sums in float64 and rounds once)."""
    device = ReferenceDevice()
    device.kernels[OperationType.INSTANCE_NORMALIZATION] = instance_normalization_in(np.float32, one_pass=True)
    device.kernels[OperationType.FULLY_CONNECTED] = Kernel(KERNELS[OperationType.FULLY_CONNECTED].validate,
                                                           _fully_connected_in(np.float32))
    device.kernels[OperationType.CONV_2D] = Kernel(KERNELS[OperationType.CONV_2D].validate, _conv_in(np.float32))
    device.kernels.update(_windowed_in(np.float32))
    return device


def _float16_elementwise(ufunc, kernel: Kernel) -> Kernel:
    def run(values, ins, out_op, out):
        checked = kernel.run(values, ins, out_op, None)  # the reference's shape and activation errors
        if ins[0].type != F16:
            return checked
        with np.errstate(all="ignore"):
            result = ufunc(np.asarray(values[0], np.float16), np.asarray(values[1], np.float16))
        return from_real(activate(np.asarray(result, np.float16).astype(np.float64), scalar(values[2])), out_op)
    return Kernel(kernel.validate, run)


def _quantized_in_float32(ufunc, kernel: Kernel) -> Kernel:
    def run(values, ins, out_op, out):
        checked = kernel.run(values, ins, out_op, None)  # the reference's shape and activation errors
        if not is_quantized_type(out_op.type):
            return checked
        one = np.float32
        a, b = ((np.asarray(v, one) - one(o.zero_point)) * one(o.scale) for v, o in zip(values[:2], ins[:2]))
        with np.errstate(all="ignore"):
            scaled = activate(ufunc(a, b), scalar(values[2])) / one(out_op.scale)
        stored = np.sign(scaled) * np.floor(np.abs(scaled) + one(0.5)) + one(out_op.zero_point)
        limits = np.iinfo(checked.dtype)
        return np.clip(stored, limits.min, limits.max).astype(checked.dtype)
    return Kernel(kernel.validate, run)


def quantized_in_float32() -> ReferenceDevice:
    """CHOICE-7: quantized ADD, SUB and MUL dequantized, computed, activated and requantized in
    float32 (the reference works in float64): results one step off near a rounding tie, unbiased."""
    device = ReferenceDevice()
    for op, ufunc in ((OperationType.ADD, np.add), (OperationType.SUB, np.subtract), (OperationType.MUL, np.multiply)):
        device.kernels[op] = _quantized_in_float32(ufunc, KERNELS[op])
    return device


def _in_fixed_point(integer_run, kernel: Kernel) -> Kernel:
    def run(values, ins, out_op, out):
        checked = kernel.run(values, ins, out_op, None)  # the reference's shape and activation errors
        if not is_quantized_type(out_op.type):
            return checked
        return integer_run(values, ins, out_op).reshape(checked.shape)
    return Kernel(kernel.validate, run)


def fixed_point_quantized() -> ReferenceDevice:
    """CHOICE-7: quantized ADD, SUB, MUL, FULLY_CONNECTED and the convolutions (per-channel filters
    included) in integers only, as fixed-point kernels (TFLite's, most NPUs') compute them: integer
    accumulators, each real multiplier held as a 31-bit integer and a shift, each rescale rounded
    once, half up (`fixed_point`).  Results a step off at negative ties and where the multiplier's
    own rounding moves a value across a tie."""
    device = ReferenceDevice()
    integer_runs = {
        OperationType.ADD: lambda values, ins, out: fixed_point.add_sub(values, ins, out, 1),
        OperationType.SUB: lambda values, ins, out: fixed_point.add_sub(values, ins, out, -1),
        OperationType.MUL: fixed_point.mul,
        OperationType.FULLY_CONNECTED: fixed_point.fully_connected,
        OperationType.CONV_2D: fixed_point.conv_2d,
        OperationType.DEPTHWISE_CONV_2D: fixed_point.depthwise_conv_2d,
        OperationType.GROUPED_CONV_2D: fixed_point.grouped_conv_2d,
        OperationType.TRANSPOSE_CONV_2D: fixed_point.transpose_conv_2d,
    }
    for op, integer_run in integer_runs.items():
        device.kernels[op] = _in_fixed_point(integer_run, KERNELS[op])
    return device


def float16_in_float16() -> ReferenceDevice:
    """CHOICE-7: FLOAT16 arithmetic in float16: element-wise operations rounded to float16,
    FULLY_CONNECTED, the convolutions and the pools accumulating in float16, and
    INSTANCE_NORMALIZATION's sums and two-pass variance in float16 (float32 stays as the reference
    does it)."""
    device = ReferenceDevice()
    for op, ufunc in ((OperationType.ADD, np.add), (OperationType.SUB, np.subtract), (OperationType.MUL, np.multiply),
                      (OperationType.DIV, np.divide)):
        device.kernels[op] = _float16_elementwise(ufunc, KERNELS[op])

    def only_f16(run16, reference_run):
        def run(values, ins, out_op, out):
            return run16(values, ins, out_op, out) if ins[0].type == F16 else reference_run(values, ins, out_op, out)
        return run

    device.kernels[OperationType.FULLY_CONNECTED] = Kernel(
        KERNELS[OperationType.FULLY_CONNECTED].validate, only_f16(_fully_connected_in(np.float16), nn.run_fully_connected))
    device.kernels[OperationType.CONV_2D] = Kernel(
        KERNELS[OperationType.CONV_2D].validate, only_f16(_conv_in(np.float16), nn.run_conv_2d))
    for op, kernel in _windowed_in(np.float16).items():  # the other convolutions and the pools
        device.kernels[op] = Kernel(kernel.validate, only_f16(kernel.run, KERNELS[op].run))
    instance = instance_normalization_in(np.float16, one_pass=False)
    device.kernels[OperationType.INSTANCE_NORMALIZATION] = Kernel(
        instance.validate, only_f16(instance.run, KERNELS[OperationType.INSTANCE_NORMALIZATION].run))
    return device


# --------------------------------------------------------------------------- CHOICE-8

#: NeuralNetworks.h (HAL 1.3): a quantized output of these has its input's scale and zero point.
_INPUT_QUANTIZATION_KEPT = {OperationType.RELU: FusedActivation.RELU, OperationType.RELU1: FusedActivation.RELU1,
                            OperationType.RELU6: FusedActivation.RELU6, OperationType.RESHAPE: None}


def _nnapi_quantization_refusal(op: OperationType, ins, outs) -> Refusal | None:
    """What NeuralNetworks.h forbids of a quantized output, read from the header here rather than
    borrowed from the reference's checks: the variant stays a second reading of NNAPI's rules."""
    if not outs or not is_quantized_type(outs[0].type):
        return None
    out = outs[0]
    if op == OperationType.MUL and not out.scale > ins[0].scale * ins[1].scale:
        return Refusal(f"output scale {out.scale} not above input scales' product {ins[0].scale * ins[1].scale} (NNAPI MUL)",
                       0, True)
    if op in _INPUT_QUANTIZATION_KEPT and (out.scale, out.zero_point) != (ins[0].scale, ins[0].zero_point):
        return Refusal(f"output scale and zero point ({out.scale}, {out.zero_point}) differ from the input's "
                       f"({ins[0].scale}, {ins[0].zero_point}) (NNAPI {op.name})", 0, True)
    return None


def _clamp_stored(activation: FusedActivation, reference_run):
    """A quantized RELU, RELU1 or RELU6 as a clamp of the stored values: with the input's scale and
    zero point on the output (NNAPI's rule), no value needs requantizing."""
    def run(values, ins, out_op, out):
        if not is_quantized_type(ins[0].type):
            return reference_run(values, ins, out_op, out)
        check_rank(values, activation.name)  # NNAPI's rank limit, on the shape the request gave
        low, high = from_real(activate(np.array([-np.inf, np.inf]), activation), out_op)
        return np.clip(np.asarray(values[0]), low, high).astype(values[0].dtype)
    return run


def nnapi_quantization_rules() -> ReferenceDevice:
    """CHOICE-8: keeps NeuralNetworks.h's quantization rules to the letter: refuses a quantized MUL
    whose output scale is not above its input scales' product, and a quantized RELU, RELU1, RELU6
    or RESHAPE whose output scale or zero point differ from its input's; so it runs quantized RELUs
    as a clamp of the stored values, with no requantizing."""
    device = ReferenceDevice()
    for op in (OperationType.MUL, *_INPUT_QUANTIZATION_KEPT):
        kernel = KERNELS[op]

        def validate(ins, outs, op=op, kernel=kernel) -> Refusal | None:
            return kernel.validate(ins, outs) or _nnapi_quantization_refusal(op, ins, outs)

        activation = _INPUT_QUANTIZATION_KEPT.get(op)
        device.kernels[op] = Kernel(validate, kernel.run if activation is None else _clamp_stored(activation, kernel.run))
    return device


def concatenation_axis_from_the_end() -> ReferenceDevice:
    """CHOICE-8: gives CONCATENATION a negative axis, counted from the end as numpy and ONNX count
    it, where NeuralNetworks.h gives it no meaning and the reference (like NNAPI's CPU
    implementation) refuses it: a driver may accept what NNAPI forbids, so no suite asks for
    either answer."""
    device = ReferenceDevice()
    kernel = KERNELS[OperationType.CONCATENATION]

    def run(values, ins, out_op, out):
        axis, rank = scalar(values[-1]), np.ndim(values[0])
        if -rank <= axis < 0:
            values = [*values[:-1], np.int32(axis + rank)]
        return kernel.run(values, ins, out_op, out)

    device.kernels[OperationType.CONCATENATION] = Kernel(kernel.validate, run)
    return device


def true_as_0xff() -> ReferenceDevice:
    """CHOICE-8: writes True as 0xFF, not 1, in every TENSOR_BOOL8 output and in HASHTABLE_LOOKUP's
    hits: NeuralNetworks.h reads any non-zero byte of these as True, so which one a driver writes
    is its own (and it reads any as True, as the reference's kernels do)."""
    device = ReferenceDevice()

    def as_0xff(truths: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(truths) != 0, 0xFF, 0).astype(np.uint8)

    def bool8_outputs(kernel: Kernel) -> Kernel:
        def run(values, ins, out_op, out):
            result = kernel.run(values, ins, out_op, out)
            return as_0xff(result) if out_op.type == OperandType.TENSOR_BOOL8 and not isinstance(result, tuple) else result
        return Kernel(kernel.validate, run)

    def hits(kernel: Kernel) -> Kernel:
        def run(values, ins, out_op, out):
            rows, found = kernel.run(values, ins, out_op, out)
            return rows, as_0xff(found)
        return Kernel(kernel.validate, run)

    for op, kernel in KERNELS.items():
        device.kernels[op] = hits(kernel) if op == OperationType.HASHTABLE_LOOKUP else bool8_outputs(kernel)
    return device


def random_multinomial_own_stream() -> ReferenceDevice:
    """CHOICE-8: draws RANDOM_MULTINOMIAL's samples from a random stream of its own (numpy's PCG64
    keyed by the seeds, each class found by bisecting the cumulative probabilities in float32):
    NNAPI fixes the samples' distribution, not which samples given seeds give."""
    device = ReferenceDevice()
    kernel = KERNELS[OperationType.RANDOM_MULTINOMIAL]

    def run(values, ins, out_op, out):
        logits = np.asarray(values[0], np.float32)
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        cdf = np.cumsum(weights / weights.sum(axis=1, keepdims=True), axis=1, dtype=np.float32)
        generator = np.random.Generator(np.random.PCG64([int(s) & 0xFFFFFFFF for s in np.asarray(values[2]).reshape(-1)]))
        uniform = generator.random((logits.shape[0], scalar(values[1])), dtype=np.float32)
        drawn = np.stack([np.searchsorted(cdf[r], uniform[r], side="right") for r in range(logits.shape[0])])
        return np.minimum(drawn, logits.shape[1] - 1).astype(np.int32)

    device.kernels[OperationType.RANDOM_MULTINOMIAL] = Kernel(kernel.validate, run)
    return device


def conv_padding_past_the_filter() -> ReferenceDevice:
    """CHOICE-8: runs CONV_2D with explicit padding as wide as its dilated filter or wider (an
    output whose window lies in the padding holds its bias, activated), where NeuralNetworks.h says
    nothing and NNAPI's CPU implementation, like the reference, refuses it at execution: a driver
    may take either reading, so no suite asks for either answer."""
    device = ReferenceDevice()
    kernel = KERNELS[OperationType.CONV_2D]

    def run(values, ins, out_op, out):
        data, filt, bias = nn.conv_weights(values, ins)
        return nn.conv_2d(data, ins[0], filt, bias, nn.conv_geometry(values, ins, filt.shape, data.shape), out_op)

    device.kernels[OperationType.CONV_2D] = Kernel(kernel.validate, run)
    return device


#: Set while a relaxed model executes on this thread: the kernels below read it (a kernel sees
#: its operation's operands, not the model they belong to).
_RELAXED = threading.local()


def in_relaxed_model() -> bool:
    """Whether the operation running on this thread belongs to a relaxed model."""
    return getattr(_RELAXED, "on", False)


class _RelaxedModel(ReferencePreparedModel):
    def execute(self, request: Request) -> ExecutionResult:
        _RELAXED.on = self.model.relax_computation_float32_to_float16
        try:
            return super().execute(request)
        finally:
            _RELAXED.on = False


def _relaxed(kernel16: Kernel, kernel: Kernel) -> Kernel:
    """``kernel``, but in a relaxed model every TENSOR_FLOAT32 operand of the operation is held
    and computed as TENSOR_FLOAT16 by ``kernel16``, and its result widened back."""
    def run(values, ins, out_op, out):
        if not in_relaxed_model() or out_op.type != F32:
            return kernel.run(values, ins, out_op, out)
        halves = [np.asarray(v, np.float16) if o.type == F32 else v for v, o in zip(values, ins)]
        operands = [dataclasses.replace(o, type=F16) if o.type == F32 else o for o in ins]
        with np.errstate(all="ignore"):
            result = kernel16.run(halves, operands, dataclasses.replace(out_op, type=F16), None)
        # an operation of several outputs (SPLIT, TOPK_V2) gives a tuple: each float16 one widened
        return tuple(map(_widened, result)) if isinstance(result, tuple) else _widened(result)
    return Kernel(kernel.validate, run)


def _widened(result: np.ndarray) -> np.ndarray:
    result = np.asarray(result)
    return result.astype(np.float32) if result.dtype == np.float16 else result


def relaxed_float32_in_float16() -> ReferenceDevice:
    """CHOICE-8: takes a model's relaxComputationFloat32toFloat16 (NeuralNetworks.h: TENSOR_FLOAT32
    computed with the range and precision of IEEE 754 float16) at its word: in a relaxed model each
    operation rounds its TENSOR_FLOAT32 inputs to float16 and computes as `float16_in_float16` does
    (FULLY_CONNECTED and CONV_2D accumulating in float16); a model without the flag is the
    reference's."""
    halves = float16_in_float16().kernels
    device = ReferenceDevice(prepared_model_class=_RelaxedModel)
    for op, kernel in KERNELS.items():
        device.kernels[op] = _relaxed(halves[op], kernel)
    return device


# --------------------------------------------------------------------------- CC-5


def custom_call_scratch_left_dirty() -> ReferenceDevice:
    """CC-5: its tuple_concat custom-call targets leave 0xEE bytes in their scratch output leaf
    rather than the leaves they gathered there (built from the reference's C targets with
    CC_VARIANT_SCRATCH_LEFT_DIRTY); everything else is the reference."""
    return ReferenceDevice()
