"""Seeded bugs in buffer state and dynamic shapes (DOM-STATE, DOM-DYN, DOM-COPY)."""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.api.hal import DriverError, ErrorStatus, OutputShape, is_fully_specified, is_scalar_type
from harness.api.memory import Memory
from reference_driver import ReferenceDevice
from reference_driver.buffers import ManagedBuffer, TokenTable
from reference_driver.device import ReferenceBuffer, ReferencePreparedModel
from reference_driver.validation import OK, copy_dimensions, memory_size_matches

from ._registry import mutant, with_rule


@mutant("copy-to-uninitialized", "DOM-STATE-2", "copy_to of a never-written buffer succeeds (returns zeros)")
def copy_to_uninitialized():
    return with_rule("buffer_initialized", lambda initialized: OK, buffer_class=_UninitializedReadsAsZeros)


class _UninitializedReadsAsZeros(ReferenceBuffer):
    def copy_to(self, memory):
        if not self.state.initialized:  # what the read finds: as many zero bytes as the memory holds
            self.state.data = np.zeros(memory.size, np.uint8)
        super().copy_to(memory)  # every check the reference makes, in its order, but initialization


@mutant("uninitialized-input-accepted", "DOM-STATE-2", "executes with an uninitialized buffer as input")
def uninitialized_input_accepted():
    return with_rule("input_buffer_initialized", lambda initialized: OK)


class _StickyCopy(ReferenceBuffer):
    def copy_from(self, memory, dimensions=()):
        was = self.state.initialized
        try:
            super().copy_from(memory, dimensions)
        except DriverError:
            self.state.initialized = was  # a failed copy leaves the old state standing
            raise


@mutant("failed-copy-keeps-initialized", "DOM-STATE-1", "a failed copy_from leaves the buffer initialized")
def failed_copy_keeps_initialized():
    return ReferenceDevice(buffer_class=_StickyCopy)


def _buffers_named(device: ReferenceDevice, request) -> list[ManagedBuffer]:
    """The live buffers a request's token pools name (a memory pool, or a token naming none, is left out)."""
    named = (device.tokens.get(p) for p in request.pools if isinstance(p, int) and not isinstance(p, bool))
    return [buffer for buffer in named if buffer is not None]


class _StickyExecution(ReferencePreparedModel):
    def execute(self, request):
        live = _buffers_named(self.device, request)
        before = {id(b): b.initialized for b in live}
        try:
            return super().execute(request)
        except DriverError:
            for b in live:
                b.initialized = before[id(b)]
            raise


@mutant("failed-execution-keeps-initialized", "DOM-STATE-1", "a failed execution leaves its output buffers initialized")
def failed_execution_keeps_initialized():
    return ReferenceDevice(prepared_model_class=_StickyExecution)


class _NeverResizes(ManagedBuffer):
    def store(self, value):
        if self.initialized and tuple(value.shape) != self.dimensions:
            flat = np.resize(np.asarray(value, dtype=self.dtype).reshape(-1), self.data.size)
            self.data = flat.reshape(self.dimensions)  # squeezed into the old size
            self.initialized = True
            return
        super().store(value)


@mutant("buffer-never-resizes", "DOM-DYN-1", "keeps a dynamic buffer's first size and squeezes later outputs into it")
def buffer_never_resizes():
    return ReferenceDevice(managed_buffer_class=_NeverResizes)


class _FirstShapeReported(ReferencePreparedModel):
    def execute(self, request):
        result = super().execute(request)
        shapes = list(result.output_shapes)
        for i, argument in enumerate(request.outputs):
            pool = request.pools[argument.location.pool_index] if not argument.has_no_value else None
            if isinstance(pool, int):
                buffer = self.device.tokens.get(pool)
                first = getattr(buffer, "first_dimensions", None)
                if buffer is not None and first is None:
                    buffer.first_dimensions = shapes[i].dimensions
                elif first is not None:
                    shapes[i] = OutputShape(first, True)
        return type(result)(result.output_sufficient_size, tuple(shapes), result.timing)


@mutant("token-output-shape-stale", "DOM-DYN-1", "reports a buffer output's first shape in every later execution")
def token_output_shape_stale():
    return ReferenceDevice(prepared_model_class=_FirstShapeReported)


@mutant("insufficient-reported-sufficient", "DOM-DYN-2",
        "reports a too-small output region as sufficient and writes what fits")
def insufficient_reported_sufficient():
    return with_rule("output_sufficient", lambda needed, capacity: True)


@mutant("insufficient-by-one-byte-sufficient", "OPS-2",
        "an off-by-one size check: an output region one byte short of what the output needs counts as sufficient")
def insufficient_by_one_byte_sufficient():
    return with_rule("output_sufficient", lambda needed, capacity: needed <= capacity + 1)


def _insufficient_shapes_reported_as(reported):
    """The reference whose OUTPUT_INSUFFICIENT_SIZE carries ``reported(needed shapes)`` instead."""

    class _Reported(ReferencePreparedModel):
        def execute(self, request):
            try:
                return super().execute(request)
            except DriverError as error:
                if error.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
                    raise
                raise DriverError(error.status, error.message, reported(error.output_shapes), rule=error.rule) from None

    return ReferenceDevice(prepared_model_class=_Reported)


class _PaddingAsRoomModel(ReferencePreparedModel):
    def execute(self, request):
        operands, outputs = self.model.main.operands, []
        for argument, index in zip(request.outputs, self.model.main.output_indexes):
            operand = operands[index]
            dims = argument.dimensions or operand.dimensions
            pool = request.pools[argument.location.pool_index] if 0 <= argument.location.pool_index < len(request.pools) else None
            if isinstance(pool, Memory) and not argument.has_no_value and not is_fully_specified(operand.type, dims):
                location = argument.location
                argument = dataclasses.replace(argument, location=dataclasses.replace(
                    location, length=location.length + location.padding, padding=0))
            outputs.append(argument)
        return super().execute(dataclasses.replace(request, outputs=tuple(outputs)))


@mutant("output-padding-counted-as-room", "DOM-DYN-2",
        "counts an output's padding as room for its data: a dynamic output that needs more than its length, but "
        "no more than length + padding, is written there and reported sufficient (CHOICE-3: it is insufficient)")
def output_padding_counted_as_room():
    return ReferenceDevice(prepared_model_class=_PaddingAsRoomModel)


@mutant("insufficient-without-shapes", "DOM-DYN-2", "OUTPUT_INSUFFICIENT_SIZE carries no output shapes")
def insufficient_without_shapes():
    return _insufficient_shapes_reported_as(lambda needed: ())  # the needed shapes are lost


@mutant("every-output-marked-insufficient", "DOM-DYN-2",
        "keeps one 'too small' flag per execution: when one output region is too small, every output is "
        "reported with isSufficient=false, those whose regions hold them too")
def every_output_marked_insufficient():
    return _insufficient_shapes_reported_as(lambda needed: tuple(OutputShape(shape.dimensions, False) for shape in needed))


class _KeepsCopySource(ManagedBuffer):
    def store(self, value):
        if value.dtype != self.dtype:
            return super().store(value)
        self.data = value  # no copy: a copy_from's value is a view of the client's memory
        self.dimensions = tuple(value.shape)
        self.initialized = True


@mutant("copy-from-keeps-client-memory", "DOM-COPY-1",
        "copy_from keeps the client's mapped memory as the buffer's storage (zero copy) instead of copying it, "
        "so what the client writes there later shows in the buffer")
def copy_from_keeps_client_memory():
    return ReferenceDevice(managed_buffer_class=_KeepsCopySource)


class _ClearsCopySource(ReferenceBuffer):
    def copy_from(self, memory, dimensions=()):
        super().copy_from(memory, dimensions)
        self.device.map_memory(memory, writable=True, rule="DOM-COPY-1")[:] = 0


@mutant("copy-from-clears-client-memory", "DOM-COPY-1",
        "copy_from copies the client's memory into the buffer, then zeroes the client's memory, as if it were the "
        "driver's own staging area")
def copy_from_clears_client_memory():
    return ReferenceDevice(buffer_class=_ClearsCopySource)


@mutant("copy-size-unchecked", "DOM-COPY-1", "copy_to accepts a memory of any size (copies what fits)")
def copy_size_unchecked():
    return with_rule("memory_size_matches", lambda size, expected: OK if size >= expected else memory_size_matches(size, expected))


@mutant("copy-dimensions-unchecked", "DOM-COPY-2", "copy_from accepts dimensions of the wrong rank or with zeros")
def copy_dimensions_unchecked():
    def accepting_copy_dimensions(operand_type, initial, given):
        combined = copy_dimensions(operand_type, initial, given)
        if combined is None and given and not all(given):
            return tuple(d or 1 for d in given)
        if combined is None and given:
            return tuple(given)
        return combined

    return with_rule("copy_dimensions", accepting_copy_dimensions)


@mutant("scalar-buffer-as-one-element-tensor", "DOM-COPY-2",
        "keeps a scalar operand's buffer as a one-element tensor, so copy_from accepts dimensions such as "
        "(1,) or (1, 1) for it, where a scalar's dimensions are empty")
def scalar_buffer_as_one_element_tensor():
    def one_element_copy_dimensions(operand_type, initial, given):
        if is_scalar_type(operand_type) and given and all(d == 1 for d in given):
            return ()
        return copy_dimensions(operand_type, initial, given)

    return with_rule("copy_dimensions", one_element_copy_dimensions)


@mutant("copy-negative-dimension-inferred", "DOM-COPY-2",
        "copy_from reads a negative dimension as 'infer it from the buffer', as numpy's reshape reads -1")
def copy_negative_dimension_inferred():
    def inferring_copy_dimensions(operand_type, initial, given):
        return copy_dimensions(operand_type, initial, tuple(d if d >= 0 else (initial[axis] if axis < len(initial) else 0)
                                                            for axis, d in enumerate(given)))

    return with_rule("copy_dimensions", inferring_copy_dimensions)


@mutant("copy-zero-dimension-takes-buffer-extent", "DOM-COPY-2",
        "copy_from dimensions with a 0 take the buffer's known extent on that axis (as when combining shapes), "
        "where SPEC requires them fully specified")
def copy_zero_dimension_takes_buffer_extent():
    def combining_copy_dimensions(operand_type, initial, given):
        if given and all(d >= 0 for d in given) and len(given) == len(initial):
            given = tuple(d or known for d, known in zip(given, initial))
        return copy_dimensions(operand_type, initial, given)

    return with_rule("copy_dimensions", combining_copy_dimensions)


def _zip_combined(lhs, rhs):
    """Per-axis agreement over ``zip(lhs, rhs)``: the longer shape's extra axes are never compared."""
    if not lhs or not rhs:
        return tuple(lhs or rhs)
    if any(a and b and a != b for a, b in zip(lhs, rhs)):
        return None
    longer = lhs if len(lhs) >= len(rhs) else rhs
    return tuple(a or b for a, b in zip(lhs, rhs)) + tuple(longer[min(len(lhs), len(rhs)):])


@mutant("buffer-dimensions-compared-by-zip", "DOM-DYN-2",
        "compares request and produced dimensions with a driver-managed buffer's axis by axis with zip, so a "
        "shape of another rank with agreeing leading axes passes")
def buffer_dimensions_compared_by_zip():
    return with_rule("combine_dimensions", _zip_combined)


class _RecycledStorage(TokenTable):
    """Keeps released buffers' storage and hands it to the next buffer of the same type and
    dimensions without clearing its state."""

    def __init__(self) -> None:
        super().__init__()
        self._free: list[ManagedBuffer] = []

    def remove(self, token):
        buffer = self.get(token)
        super().remove(token)
        if buffer is not None:
            self._free.append(buffer)

    def add(self, make):
        buffer = super().add(make)
        for old in self._free:
            if (old.operand_type, old.initial_dimensions) == (buffer.operand_type, buffer.initial_dimensions):
                self._free.remove(old)
                buffer.initialized, buffer.dimensions, buffer.data = old.initialized, old.dimensions, old.data
                break
        return buffer


@mutant("released-storage-recycled", "DOM-STATE-2",
        "a new buffer reuses a released buffer's storage of the same type and dimensions, initialized with its old contents")
def released_storage_recycled():
    return ReferenceDevice(tokens=_RecycledStorage())


class _FailedReadUninitializes(ReferenceBuffer):
    def copy_to(self, memory):
        try:
            super().copy_to(memory)
        except DriverError:
            self.state.invalidate()  # the failure path of copy_from, pasted into copy_to
            raise


@mutant("failed-copy-to-uninitializes", "DOM-STATE-1", "a failed copy_to (a read) leaves the buffer uninitialized")
def failed_copy_to_uninitializes():
    return ReferenceDevice(buffer_class=_FailedReadUninitializes)


class _NeighbourForgotten(TokenTable):
    def remove(self, token):
        super().remove(token)
        following = self.get(token + 1)
        if following is not None:
            following.invalidate()  # an off-by-one in the slot cleared on release


@mutant("release-uninitializes-next", "DOM-STATE-1",
        "releasing a buffer leaves the buffer allocated after it uninitialized")
def release_uninitializes_next():
    return ReferenceDevice(tokens=_NeighbourForgotten())


class _FailureUninitializesEveryBuffer(ReferencePreparedModel):
    def execute(self, request):
        try:
            return super().execute(request)
        except DriverError:
            for buffer in _buffers_named(self.device, request):
                buffer.invalidate()  # inputs too, not only the outputs it was to write
            raise


@mutant("failed-execution-uninitializes-inputs", "DOM-STATE-1",
        "a failed execution leaves every buffer it named uninitialized, its inputs too")
def failed_execution_uninitializes_inputs():
    return ReferenceDevice(prepared_model_class=_FailureUninitializesEveryBuffer)


@mutant("rank-4-buffers-kept-channels-first", "OPS-3",
        "keeps rank-4 driver-managed buffers in its device's NCHW layout and hands them out as kept, so a "
        "buffer of NHWC values reads back scrambled when it has more than one channel")
def rank_4_buffers_kept_channels_first():
    return ReferenceDevice(managed_buffer_class=_ChannelsFirst)


class _ChannelsFirst(ManagedBuffer):
    def store(self, value):
        super().store(value)
        if self.data.ndim == 4:  # converted to the device's layout; the shape is left as the caller's
            self.data = np.ascontiguousarray(self.data.transpose(0, 3, 1, 2))
