"""Seeded bugs written after the suites, to find where they do not reach (issue 14).

Each is a bug real drivers have: a failure that still scribbles, an allocator that leaks
slots, a kernel that is only wrong for shapes or values the generators rarely made, state that
goes stale on the second run, locks and staging memory that only break under concurrency.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections import Counter

import numpy as np

from harness.api.hal import (
    DriverError,
    ErrorStatus,
    Model,
    OperandLifeTime,
    OperandType,
    OperationType,
    Request,
    is_quantized_type,
)
from harness.api.memory import Memory
from reference_driver import ReferenceDevice, ReferencePreparedModel
from reference_driver.buffers import ManagedBuffer, ReadWriteLock
from reference_driver.device import ReferenceBuffer, load_constants, validate_model
from reference_driver.ops import KERNELS, _numeric, nn
from reference_driver.validation import INVALID, OK

from ._registry import mutant, with_kernels, with_rule
from .operations import conv_with_geometry

I32 = OperandType.TENSOR_INT32


def _memory_outputs(request: Request):
    for argument in request.outputs:
        pool = request.pools[argument.location.pool_index] if not argument.has_no_value else None
        if isinstance(pool, Memory):
            yield argument, pool


# --------------------------------------------------------------------------- failures that still write


class _ScribblesModel(ReferencePreparedModel):
    def execute(self, request: Request):
        try:
            return super().execute(request)
        except DriverError as error:
            if error.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
                for argument, pool in _memory_outputs(request):
                    loc = argument.location
                    end = loc.offset + loc.length + loc.padding
                    view = pool.map(writable=True)
                    view[end: min(end + 4, pool.size)] = 0xEE  # the partial result, written on past the region
            raise


@mutant("scribbles-then-insufficient", "POOL-2", "writes the start of a too-large output past its region, then reports "
        "OUTPUT_INSUFFICIENT_SIZE")
def scribbles_then_insufficient():
    return ReferenceDevice(prepared_model_class=_ScribblesModel)


class _ClobbersInputsModel(ReferencePreparedModel):
    def execute(self, request: Request):
        try:
            return super().execute(request)
        except DriverError as error:
            if error.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
                for argument in request.inputs:
                    pool = request.pools[argument.location.pool_index] if not argument.has_no_value else None
                    if isinstance(pool, Memory) and argument.location.length:
                        loc = argument.location
                        pool.map(writable=True)[loc.offset: loc.offset + loc.length] = 0  # inputs used as scratch
            raise


@mutant("insufficient-clobbers-inputs", "POOL-2", "uses its input regions as scratch and leaves them zeroed when an "
        "output turns out too small")
def insufficient_clobbers_inputs():
    return ReferenceDevice(prepared_model_class=_ClobbersInputsModel)


# --------------------------------------------------------------------------- refusals that grow


class _LeakingAllocator(ReferenceDevice):
    SLOTS = 6

    def __init__(self) -> None:
        super().__init__()
        self.allocations = 0

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        if self.allocations >= self.SLOTS:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "out of buffer slots")
        result = super().allocate(desc, prepared_models, input_roles, output_roles)
        self.allocations += 1  # release never gives a slot back
        return result


@mutant("allocation-slots-leak", "DOM-ALLOC-3", "never frees a buffer slot, so after six allocations every allocation is "
        "refused with GENERAL_FAILURE")
def allocation_slots_leak():
    return _LeakingAllocator()


class _MarksRelease(ReferenceBuffer):
    def release(self) -> None:
        self.device.released_one = True
        super().release()


class _RefusesAfterRelease(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__(buffer_class=_MarksRelease)
        self.released_one = False

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        if self.released_one:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "allocator state corrupted by a release")
        return super().allocate(desc, prepared_models, input_roles, output_roles)


@mutant("refuses-after-release", "DOM-ALLOC-3", "refuses every allocation with GENERAL_FAILURE once any buffer was released")
def refuses_after_release():
    return _RefusesAfterRelease()


# --------------------------------------------------------------------------- shapes and values rarely made


@mutant("later-outputs-cut-to-first", "OPS-1", "writes every output after the first with at most the first output's "
        "byte count")
def later_outputs_cut_to_first():
    return _LaterOutputsCut()


class _LaterOutputsCut(ReferenceDevice):
    def write_outputs(self, outputs, values, views):
        super().write_outputs(outputs, values, views)
        if len(outputs) < 2:
            return
        first = values[outputs[0].operand_index].nbytes
        for binding in outputs[1:]:
            if binding.memory is None:
                continue
            value = values[binding.operand_index]
            if value.nbytes > first:
                loc = binding.argument.location
                views[loc.pool_index][loc.offset + first: loc.offset + value.nbytes] = 0  # never copied


@mutant("third-output-never-written", "POOL-2", "keeps a model's outputs in a two-slot table: a third and later "
        "output is never written")
def third_output_never_written():
    return _TwoOutputSlots()


class _TwoOutputSlots(ReferenceDevice):
    def write_outputs(self, outputs, values, views):
        super().write_outputs(outputs[:2], values, views)


class _ShapesReversedModel(ReferencePreparedModel):
    def execute(self, request: Request):
        result = super().execute(request)
        return dataclasses.replace(result, output_shapes=tuple(reversed(result.output_shapes)))


@mutant("output-shapes-reversed", "POOL-2", "lists outputShapes in reverse order")
def output_shapes_reversed():
    return ReferenceDevice(prepared_model_class=_ShapesReversedModel)



@mutant("fully-connected-batch-from-first-axis", "OPS-1", "FULLY_CONNECTED takes the batch from the input's first axis "
        "and fails inputs of rank above 2",
        operations=(OperationType.FULLY_CONNECTED,))
def fully_connected_batch_from_first_axis():
    def run(values, ins, out_op, out):
        data, weights = np.asarray(values[0]), np.asarray(values[1])
        if data.ndim > 2 and weights.ndim == 2 and data.size // data.shape[0] != weights.shape[1]:
            from reference_driver.ops import KernelError
            raise KernelError(f"FULLY_CONNECTED: input {data.shape} does not match weights {weights.shape}")
        return nn.run_fully_connected(values, ins, out_op, out)
    return with_kernels({OperationType.FULLY_CONNECTED: run})


def _unreached_tail(length: int, block: int) -> slice | None:
    """What a vector loop of ``block`` elements with no scalar tail never reaches of ``length``:
    the last partial block, when the length is more than one block (None: nothing)."""
    return slice(length - length % block, None) if length > block and length % block else None


def _part_set(data: np.ndarray, axis: int, part: slice, value: int) -> np.ndarray:
    """A copy of ``data`` with ``part`` of ``axis`` set to ``value``."""
    changed = np.array(data, copy=True)
    index = [slice(None)] * data.ndim
    index[axis] = part
    changed[tuple(index)] = value
    return changed


def _tail_dropped(data: np.ndarray, axis: int, block: int, zero_point: int) -> np.ndarray:
    """``data`` with the unreached tail of ``axis`` set to the value that stands for 0."""
    tail = _unreached_tail(data.shape[axis], block)
    return data if tail is None else _part_set(data, axis, tail, zero_point)


@mutant("conv-channel-tail-dropped", "OPS-1", "CONV_2D sums input channels in blocks of 4 and, past 4 channels, "
        "drops the last partial block (a vector loop with no scalar tail)",
        operations=(OperationType.CONV_2D,))
def conv_channel_tail_dropped():
    def run(values, ins, out_op, out):
        data, filt, bias = nn.conv_weights(values, ins)
        geometry = nn.conv_geometry(values, ins, filt.shape, data.shape)
        data = _tail_dropped(data, 1 if geometry.nchw else 3, 4, ins[0].zero_point)
        return nn.conv_2d(data, ins[0], filt, bias, geometry, out_op)
    return with_kernels({OperationType.CONV_2D: run})


@mutant("fully-connected-tail-dropped", "OPS-1", "FULLY_CONNECTED takes its dot products 8 elements at a time and, "
        "past 8, drops the last partial block of each row",
        operations=(OperationType.FULLY_CONNECTED,))
def fully_connected_tail_dropped():
    def run(values, ins, out_op, out):
        data, weights = np.asarray(values[0]), np.asarray(values[1])
        if weights.ndim == 2 and weights.shape[1] and data.size % weights.shape[1] == 0:
            rows = _tail_dropped(data.reshape(-1, weights.shape[1]), 1, 8, ins[0].zero_point)
            values = [rows.reshape(data.shape), *values[1:]]
        return nn.run_fully_connected(values, ins, out_op, out)
    return with_kernels({OperationType.FULLY_CONNECTED: run})


@mutant("fully-connected-units-tail-dropped", "OPS-1", "FULLY_CONNECTED computes output units 4 at a time and, past "
        "4, leaves the last partial block at its bias (a vector loop with no scalar tail)",
        operations=(OperationType.FULLY_CONNECTED,))
def fully_connected_units_tail_dropped():
    def run(values, ins, out_op, out):
        weights = np.asarray(values[1])
        if weights.ndim == 2:
            values = [values[0], _tail_dropped(weights, 0, 4, ins[1].zero_point), *values[2:]]
        return nn.run_fully_connected(values, ins, out_op, out)
    return with_kernels({OperationType.FULLY_CONNECTED: run})


@mutant("conv-stride-above-2-runs-stride-2", "OPS-1", "CONV_2D has kernels for strides 1 and 2; a larger stride "
        "runs the stride-2 kernel and keeps as many of its outputs as the output holds",
        operations=(OperationType.CONV_2D,))
def conv_stride_above_2_runs_stride_2():
    return conv_with_geometry(lambda g, *_: dataclasses.replace(g, stride_h=min(g.stride_h, 2), stride_w=min(g.stride_w, 2)),
                              right_sized=True)


@mutant("conv-dilation-above-2-runs-dilation-2", "OPS-1", "CONV_2D has kernels for dilation 1 and 2; a larger "
        "dilation runs the dilation-2 kernel and keeps as many of its outputs as the output holds",
        operations=(OperationType.CONV_2D,))
def conv_dilation_above_2_runs_dilation_2():
    return conv_with_geometry(lambda g, *_: dataclasses.replace(g, dilation_h=min(g.dilation_h, 2),
                                                                dilation_w=min(g.dilation_w, 2)), right_sized=True)


def _border_of_one(before: int, after: int) -> tuple[int, int]:
    """Padding as a kernel with a one-pixel border applies it: the rest of ``before`` moves after."""
    return min(before, 1), after + before - min(before, 1)


@mutant("conv-explicit-padding-above-1-moved-to-the-end", "OPS-1", "CONV_2D's kernel has a border of one pixel: "
        "explicit padding above one at the top or left is taken as one, the rest added at the bottom or right",
        operations=(OperationType.CONV_2D,))
def conv_explicit_padding_above_1_moved_to_the_end():
    def kernel(g, implicit, filter_shape):
        if implicit:
            return g
        (top, bottom), (left, right) = _border_of_one(g.pad_top, g.pad_bottom), _border_of_one(g.pad_left, g.pad_right)
        return dataclasses.replace(g, pad_top=top, pad_bottom=bottom, pad_left=left, pad_right=right)
    return conv_with_geometry(kernel, right_sized=True)


def _same_split_undilated(before: int, after: int, kernel: int, dilation: int) -> tuple[int, int]:
    """SAME's padding split as for an undilated filter, whose span is (kernel - 1) x (dilation - 1)
    pixels shorter; the total kept, so the output keeps its size."""
    undilated = max(before + after - (kernel - 1) * (dilation - 1), 0)
    return undilated // 2, before + after - undilated // 2


@mutant("conv-same-padding-ignores-dilation", "OPS-1", "CONV_2D's SAME padding is split as for an undilated "
        "filter: a dilated filter's windows start too few pixels before the input",
        operations=(OperationType.CONV_2D,))
def conv_same_padding_ignores_dilation():
    def kernel(g, implicit, filter_shape):
        if not implicit:
            return g
        top, bottom = _same_split_undilated(g.pad_top, g.pad_bottom, filter_shape[1], g.dilation_h)
        left, right = _same_split_undilated(g.pad_left, g.pad_right, filter_shape[2], g.dilation_w)
        return dataclasses.replace(g, pad_top=top, pad_bottom=bottom, pad_left=left, pad_right=right)
    return conv_with_geometry(kernel, right_sized=True)


class _CompiledByTensors(ReferenceDevice):
    """Keeps every prepared model under a key of its tensors (operands and constant values), as a
    compilation cache would, but leaves the operations out of the key."""

    def __init__(self) -> None:
        super().__init__()
        self._compiled: dict[tuple, ReferencePreparedModel] = {}

    def prepare_model(self, model):
        validate_model(self.rules, self.kernels, model)
        constants = load_constants(self.rules, model)
        subgraph = model.main
        key = (tuple((o.type, o.dimensions, o.scale, o.zero_point, o.lifetime) for o in subgraph.operands),
               subgraph.input_indexes, subgraph.output_indexes,
               tuple(sorted((i, v.tobytes()) for i, v in constants.items())))
        if key not in self._compiled:
            self._compiled[key] = self.prepared_model_class(self, model, constants)
        return self._compiled[key]


@mutant("compiled-model-cache-ignores-operations", "OPS-1", "caches prepared models by their tensors and constants, "
        "not their operations: a model that differs from an earlier one only in its operation runs the earlier one's")
def compiled_model_cache_ignores_operations():
    return _CompiledByTensors()


@mutant("broadcast-last-axis-tail-dropped", "OPS-1", "ADD, SUB, MUL and DIV with a broadcast operand work along the "
        "last axis in blocks of 4 and, past 4, leave the last partial block holding the first operand's values",
        operations=(OperationType.ADD, OperationType.DIV, OperationType.MUL, OperationType.SUB))
def broadcast_last_axis_tail_dropped():
    runs = {}
    for op in (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV):
        reference = KERNELS[op]

        def run(values, ins, out_op, out, reference=reference):
            result = reference.run(values, ins, out_op, out)
            a, b = np.asarray(values[0]), np.asarray(values[1])
            tail = _unreached_tail(result.shape[-1], 4) if result.ndim else None
            if a.shape != b.shape and tail is not None and a.dtype == result.dtype:
                result[..., tail] = np.broadcast_to(a, result.shape)[..., tail]
            return result
        runs[op] = run
    return with_kernels(runs)


def _concatenation_bug(change) -> ReferenceDevice:
    """CONCATENATION whose result, once the reference has computed it (and refused what it
    refuses), ``change(result, arrays, axis, ins, out_op)`` alters."""
    reference = KERNELS[OperationType.CONCATENATION]

    def run(values, ins, out_op, out):
        result = reference.run(values, ins, out_op, None)
        arrays = [np.asarray(v) for v in values[:-1]]
        return change(result, arrays, _numeric.scalar(values[-1]), ins, out_op)
    return with_kernels({OperationType.CONCATENATION: run})


@mutant("concatenation-quantization-checked-on-first-input", "OPS-1", "quantized CONCATENATION copies every input's "
        "bytes unconverted when the first input has the output's scale and zero point, without looking at the others",
        operations=(OperationType.CONCATENATION,))
def concatenation_quantization_checked_on_first_input():
    def change(result, arrays, axis, ins, out_op):
        first = ins[0]
        if is_quantized_type(out_op.type) and (first.scale, first.zero_point) == (out_op.scale, out_op.zero_point):
            return np.concatenate(arrays, axis=axis).astype(result.dtype)
        return result
    return _concatenation_bug(change)


@mutant("concatenation-fourth-input-dropped", "OPS-1", "CONCATENATION keeps its inputs in a three-slot array: "
        "a fourth and later input's part of the output stays at zero",
        operations=(OperationType.CONCATENATION,))
def concatenation_fourth_input_dropped():
    def change(result, arrays, axis, ins, out_op):
        if len(arrays) <= 3:
            return result
        return _part_set(result, axis, slice(sum(a.shape[axis] for a in arrays[:3]), None), out_op.zero_point)
    return _concatenation_bug(change)


@mutant("concatenation-rank4-outer-axes-cut", "OPS-1", "CONCATENATION's loop nest was written for rank 3: on the last "
        "axis of a rank-4 tensor it copies only the first two axes' worth of rows and leaves the rest at zero",
        operations=(OperationType.CONCATENATION,))
def concatenation_rank4_outer_axes_cut():
    def change(result, arrays, axis, ins, out_op):
        if result.ndim < 4 or axis < 3:
            return result
        rows = np.array(result, copy=True).reshape(int(np.prod(result.shape[:axis])), -1)
        rows[int(np.prod(result.shape[:2])):] = out_op.zero_point
        return rows.reshape(result.shape)
    return _concatenation_bug(change)


class _FirstExecutions:
    """What an operation of each prepared model was given at its first execution, under the id of
    its output operand (kept alive beside it, so that no later operand takes its id)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple] = {}

    def kept(self, out_op, value):
        return self._seen.setdefault(id(out_op), (out_op, value))[1]


@mutant("reshape-shape-from-first-execution", "POOL-2", "RESHAPE whose shape is a request input takes the shape "
        "its first execution gave, on every later execution of the prepared model that has as many elements",
        operations=(OperationType.RESHAPE,))
def reshape_shape_from_first_execution():
    reference = KERNELS[OperationType.RESHAPE]
    first = _FirstExecutions()

    def run(values, ins, out_op, out):
        result = reference.run(values, ins, out_op, out)
        if ins[1].lifetime != OperandLifeTime.SUBGRAPH_INPUT:
            return result
        shape = first.kept(out_op, result.shape)
        return result.reshape(shape) if int(np.prod(shape)) == result.size else result
    return with_kernels({OperationType.RESHAPE: run})


@mutant("activation-input-from-first-execution", "POOL-2", "a fused activation given as a request input is read at "
        "the prepared model's first execution and kept for every later one",
        operations=(OperationType.ADD, OperationType.DIV, OperationType.MUL, OperationType.SUB))
def activation_input_from_first_execution():
    runs = {}
    first = _FirstExecutions()
    for op in (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV):
        reference = KERNELS[op]

        def run(values, ins, out_op, out, reference=reference):
            if ins[2].lifetime == OperandLifeTime.SUBGRAPH_INPUT:
                values = [*values[:2], first.kept(out_op, values[2])]
            return reference.run(values, ins, out_op, out)
        runs[op] = run
    return with_kernels(runs)


def _int32_kernel(op: OperationType, compute) -> ReferenceDevice:
    reference = KERNELS[op]

    def run(values, ins, out_op, out):
        if out_op.type != I32:
            return reference.run(values, ins, out_op, out)
        checked = reference.run(values, ins, out_op, None)  # shape errors as the reference reports them
        a, b = np.broadcast_arrays(np.asarray(values[0], np.int64), np.asarray(values[1], np.int64))
        return compute(a, b).reshape(checked.shape)
    return with_kernels({op: run})


@mutant("int32-saturates", "OPS-1", "TENSOR_INT32 MUL saturates at the int32 range instead of wrapping around",
        operations=(OperationType.MUL,))
def int32_saturates():
    return _int32_kernel(OperationType.MUL, lambda a, b: np.clip(a * b, -2**31, 2**31 - 1).astype(np.int32))


@mutant("int32-products-through-float", "OPS-1", "TENSOR_INT32 MUL goes through float64 and loses the low bits of "
        "large products",
        operations=(OperationType.MUL,))
def int32_products_through_float():
    def compute(a, b):
        product = a.astype(np.float64) * b.astype(np.float64)
        return (np.round(product).astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return _int32_kernel(OperationType.MUL, compute)


@mutant("activation-input-ignored", "OPS-1", "a fused activation given as a request input (not a constant) is taken as NONE",
        operations=(OperationType.ADD, OperationType.DIV, OperationType.MUL, OperationType.SUB))
def activation_input_ignored():
    runs = {}
    for op in (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV):
        reference = KERNELS[op]

        def run(values, ins, out_op, out, reference=reference):
            if ins[2].lifetime == OperandLifeTime.SUBGRAPH_INPUT:
                values = [*values[:2], np.asarray(0, np.int32)]
            return reference.run(values, ins, out_op, out)
        runs[op] = run
    return with_kernels(runs)


@mutant("negative-pool-index-accepted", "REQ-2", "accepts a negative pool index (counting pools from the end)")
def negative_pool_index_accepted():
    def pool_index_in_range(argument, pool_count):
        return OK if -pool_count <= argument.location.pool_index < pool_count else INVALID
    return with_rule("pool_index_in_range", pool_index_in_range)


@mutant("region-sign-unchecked", "REQ-2", "checks offset + length + padding against the pool's size but not their signs, "
        "so a negative offset reads or writes counting from the pool's end")
def region_sign_unchecked():
    def region_within_memory(location, memory):
        return OK if location.offset + location.length + location.padding <= memory.size else INVALID
    return with_rule("region_within_memory", region_within_memory)


def _from_file_start(memory: Memory) -> Memory:
    return Memory(memory.kind, memory.fd, 0, memory.size, memory.hardware_desc, owns_fd=False)


class _CopyFromFileStart(ReferenceBuffer):
    def copy_from(self, memory, dimensions=()):
        if memory.kind == "mmap_fd" and memory.offset:
            memory = _from_file_start(memory)  # the region's offset in its file is forgotten
        return super().copy_from(memory, dimensions)


@mutant("copy-from-file-start", "DOM-COPY-1", "copy_from reads an mmap_fd memory from the start of its file, not from "
        "its offset")
def copy_from_file_start():
    return ReferenceDevice(buffer_class=_CopyFromFileStart)


class _ConstantsFromFileStart(ReferenceDevice):
    def prepare_model(self, model: Model) -> ReferencePreparedModel:
        pools = tuple(_from_file_start(p) if p.kind == "mmap_fd" and p.offset else p for p in model.pools)
        return super().prepare_model(dataclasses.replace(model, pools=pools))


@mutant("constant-pool-from-file-start", "POOL-1", "reads an mmap_fd constant pool from the start of its file, not from "
        "its offset")
def constant_pool_from_file_start():
    return _ConstantsFromFileStart()


# --------------------------------------------------------------------------- the second run


class _NegatesConstantsModel(ReferencePreparedModel):
    def execute(self, request: Request):
        result = super().execute(request)
        with self.device.constants_lock:
            for index, value in list(self.constants.items()):
                if value.ndim and value.dtype.kind == "f":
                    self.constants[index] = -value  # an in-place layout conversion applied on every run
        return result


class _NegatesConstants(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__(prepared_model_class=_NegatesConstantsModel)
        self.constants_lock = threading.Lock()


@mutant("constants-corrupted-by-execution", "POOL-1", "each execution converts float tensor constants in place, so "
        "every second run of a prepared model computes with negated weights")
def constants_corrupted_by_execution():
    return _NegatesConstants()


class _FirstValueCached(ManagedBuffer):
    def value(self) -> np.ndarray:
        cached = getattr(self, "_device_copy", None)
        if cached is None or cached.shape != tuple(self.dimensions):
            cached = self._device_copy = self.data.reshape(self.dimensions).copy()
        return cached  # a device-side copy that later writes of the same shape never refresh


@mutant("stale-device-copy", "DOM-COPY-1", "executions read a buffer through a device-side copy that a later write of "
        "the same shape does not refresh")
def stale_device_copy():
    return ReferenceDevice(managed_buffer_class=_FirstValueCached)


# --------------------------------------------------------------------------- concurrency


class _LockPerArgumentModel(ReferencePreparedModel):
    def execute(self, request: Request):
        uses = Counter(pool for argument in request.inputs if not argument.has_no_value
                       for pool in [request.pools[argument.location.pool_index]] if isinstance(pool, int)
                       if 0 <= argument.location.pool_index < len(request.pools))
        held = []
        try:
            for token, count in uses.items():
                buffer = self.device.tokens.get(token)
                for _ in range(count - 1 if buffer is not None else 0):  # one read lock per argument, not per buffer
                    lock = buffer.lock.reading()
                    lock.__enter__()
                    held.append(lock)
            if held:
                time.sleep(0.02)  # staging the arguments takes a moment: a writer that comes meanwhile waits between the two
            return super().execute(request)
        finally:
            for lock in reversed(held):
                lock.__exit__(None, None, None)


@mutant("read-lock-per-argument", "DOM-CONC-1", "takes a read lock per input argument, so the same buffer as two inputs "
        "deadlocks against a waiting writer")
def read_lock_per_argument():
    return ReferenceDevice(prepared_model_class=_LockPerArgumentModel)


_STAGING = np.zeros(1 << 16, np.uint8)


class _StagedCopyTo(ReferenceBuffer):
    def copy_to(self, memory):
        state = self.state
        if not state.initialized or state.byte_size is None or state.byte_size > _STAGING.size or memory.size != state.byte_size:
            return super().copy_to(memory)
        raw = state.data.reshape(-1).view(np.uint8)
        _STAGING[: raw.size] = raw  # one staging area for every buffer, and no lock around it
        time.sleep(0.005)  # the transfer out of it takes a few milliseconds: concurrent copies overlap on a loaded machine too
        target = memory.map(writable=True)
        target[:] = _STAGING[: raw.size]


@mutant("shared-staging-copy-to", "DOM-CONC-1", "copy_to goes through one staging area shared by every buffer, unlocked")
def shared_staging_copy_to():
    return ReferenceDevice(buffer_class=_StagedCopyTo)


class _OneCallAtATime(ReadWriteLock):
    """A plain mutex per buffer in place of a readers-writer lock: a read that finds the buffer in
    use (by another read too) fails at once; a write waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self._mutex = threading.Lock()

    @contextlib.contextmanager
    def reading(self):
        if not self._mutex.acquire(blocking=False):
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "the buffer is in use")
        try:
            time.sleep(0.01)  # the device's read takes a few milliseconds: two reads released together overlap
            yield
        finally:
            self._mutex.release()

    @contextlib.contextmanager
    def writing(self):
        with self._mutex:
            yield


@dataclasses.dataclass(eq=False)
class _MutexBuffer(ManagedBuffer):
    lock: ReadWriteLock = dataclasses.field(default_factory=_OneCallAtATime)


@mutant("reads-exclude-each-other", "DOM-CONC-1", "guards each buffer with a plain mutex, not a readers-writer lock, "
        "and fails a read that finds it taken, so two reads of one buffer at once fail")
def reads_exclude_each_other():
    return ReferenceDevice(managed_buffer_class=_MutexBuffer)


# --------------------------------------------------------------------------- copies


class _KeepsDimensions(ReferenceBuffer):
    def copy_from(self, memory, dimensions=()):
        state = self.state
        before = (state.initialized, state.dimensions, state.byte_size)
        super().copy_from(memory, dimensions)
        if before[0] and before[2] == state.byte_size and before[1] != state.dimensions:
            state.dimensions = before[1]  # same byte size: the shape is assumed unchanged


@mutant("copy-keeps-old-dimensions", "DOM-COPY-2", "a copy_from of another shape with the same byte size keeps the "
        "buffer's previous dimensions")
def copy_keeps_old_dimensions():
    return ReferenceDevice(buffer_class=_KeepsDimensions)


class _CopyToOnePast(ReferenceBuffer):
    def copy_to(self, memory):
        super().copy_to(memory)
        if memory.kind == "mmap_fd" and not memory.closed:
            os.pwrite(memory.fd, b"\xcd", memory.offset + memory.size)  # the DMA rounds the transfer up by a byte


@mutant("copy-to-one-byte-past", "DOM-COPY-1", "copy_to into an mmap_fd region writes one byte past its end")
def copy_to_one_byte_past():
    return ReferenceDevice(buffer_class=_CopyToOnePast)


# --------------------------------------------------------------------------- several live buffers


class _ReleasesNewest(ReferenceBuffer):
    def release(self) -> None:
        live = self.device.tokens.live_tokens()
        newest = max(live) if len(live) > 1 else self.state.token
        self.device.tokens.remove(newest)  # the allocator frees its most recent slot


@mutant("release-frees-newest", "DOM-ROLE-1", "release() frees the most recently allocated live buffer, not its own")
def release_frees_newest():
    return ReferenceDevice(buffer_class=_ReleasesNewest)


class _SharedByRoles(ReferenceBuffer):
    def copy_from(self, memory, dimensions=()):
        super().copy_from(memory, dimensions)
        state = self.state
        for token in self.device.tokens.live_tokens():
            other = self.device.tokens.get(token)
            if other is not None and other is not state and other.roles == state.roles and other.initialized:
                other.store(state.value())  # one storage slot per role set


@mutant("buffers-with-same-roles-share-storage", "DOM-COPY-1", "two live buffers allocated for the same roles share "
        "one storage slot once both were written")
def buffers_with_same_roles_share_storage():
    return ReferenceDevice(buffer_class=_SharedByRoles)



class _ReturnsNothingModel(ReferencePreparedModel):
    def execute(self, request: Request):
        super().execute(request)
        return None  # the outputs are written, but the result is not an ExecutionResult


@mutant("execute-returns-none", "POOL-2", "execute writes its outputs but returns None instead of an ExecutionResult")
def execute_returns_none():
    return ReferenceDevice(prepared_model_class=_ReturnsNothingModel)


class _GivesSlotBack(ReferenceBuffer):
    def release(self) -> None:
        super().release()
        self.device.slots_taken -= 1


class _RefusalsKeepSlots(ReferenceDevice):
    SLOTS = 16

    def __init__(self) -> None:
        super().__init__(buffer_class=_GivesSlotBack)
        self.slots_taken = 0

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        if self.slots_taken >= self.SLOTS:
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "out of buffer slots")
        self.slots_taken += 1  # taken before validation; a refusal below never gives it back
        return super().allocate(desc, prepared_models, input_roles, output_roles)


@mutant("refused-allocations-keep-slots", "DOM-ALLOC-3", "takes a buffer slot before validating an allocation and keeps "
        "it when the allocation is refused, so after 16 refusals every allocation is refused with GENERAL_FAILURE")
def refused_allocations_keep_slots():
    return _RefusalsKeepSlots()
