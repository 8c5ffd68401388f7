"""Seeded bugs in memory pools, handles and request validation (POOL, REQ)."""

from __future__ import annotations

import dataclasses

import numpy as np

from harness.api.hal import (DataLocation, DriverError, ErrorStatus, OperandLifeTime, RequestArgument, is_scalar_type,
                             numpy_dtype, operand_byte_size)
from harness.api.memory import Memory, MemoryMapError, create_ashmem, read_detached, seal_against_shrinking
from reference_driver import ReferenceDevice
from reference_driver.device import ReferencePreparedModel, load_constants, validate_model
from reference_driver import validation
from reference_driver.validation import INVALID, OK

from ._registry import broken_rules, mutant, with_rule


class _SealsEveryMapping(ReferenceDevice):
    def map_memory(self, memory, *, writable, rule):
        # memfd seals make a mapping safe from a client that shrinks the file: this driver
        # requires them, and a regular file cannot be sealed
        if not memory.closed and not seal_against_shrinking(memory.fd):
            raise DriverError(ErrorStatus.GENERAL_FAILURE, f"[{rule}] cannot seal {memory.kind} memory against shrinking",
                              rule=rule)
        return super().map_memory(memory, writable=writable, rule=rule)


@mutant("mmap-fd-memfd-only", "POOL-3",
        "refuses memory it cannot seal against shrinking: an mmap_fd region of a regular file (weights on disk, "
        "the kind's common use), where only memfds can be sealed")
def mmap_fd_memfd_only():
    return _SealsEveryMapping()


class _SupportsEverything(ReferenceDevice):
    def get_supported_operations(self, model):
        return [True] * len(model.main.operations)  # what it cannot run, preparation refuses


@mutant("supported-operations-all-true", "POOL-4",
        "get_supported_operations answers True for every operation, also those it cannot run (which preparation "
        "then refuses): a partitioner trusting it sends this driver a model it fails")
def supported_operations_all_true():
    return _SupportsEverything()


class _SupportedPerOperationType(ReferenceDevice):
    def get_supported_operations(self, model):
        answers = super().get_supported_operations(model)
        seen: dict = {}
        for operation, answer in zip(model.main.operations, answers):
            seen.setdefault(operation.type, answer)
        return list(seen.values())  # one answer per kind of operation, not per operation


@mutant("supported-operations-per-type", "POOL-4",
        "get_supported_operations answers once per kind of operation in the model, so a model with two ADDs "
        "gets one answer where SPEC requires one per operation")
def supported_operations_per_type():
    return _SupportedPerOperationType()


@mutant("offset-ignored", "POOL-2", "reads and writes every argument from the start of its pool")
def offset_ignored():
    return with_rule("region_bounds", lambda offset, length: (0, length))


@mutant("padding-ignored", "POOL-5", "checks offset + length against the pool size but forgets the padding")
def padding_ignored():
    def region_within_memory(location, memory):
        return OK if location.offset + location.length <= memory.size else INVALID
    return with_rule("region_within_memory", region_within_memory)


@mutant("bound-off-by-one", "POOL-5", "accepts a region that ends one byte past its pool")
def bound_off_by_one():
    def region_within_memory(location, memory):
        end = location.offset + location.length + location.padding
        return OK if min(location.offset, location.length, location.padding) >= 0 and end <= memory.size + 1 else INVALID
    return with_rule("region_within_memory", region_within_memory)


@mutant("writes-past-output", "POOL-2", "writes four bytes of scratch after every output region")
def writes_past_output():
    return _WritesPastOutput()


class _WritesPastOutput(ReferenceDevice):
    def write_outputs(self, outputs, values, views):
        super().write_outputs(outputs, values, views)
        for b in outputs:
            if b.memory is not None:
                end = b.argument.location.offset + b.argument.location.length
                views[b.argument.location.pool_index][end : end + 4] = 0xEE


class _ConstantsFromOffsetZero(ReferenceDevice):
    def prepare_model(self, model):
        prepared = super().prepare_model(model)
        for index, operand in enumerate(model.main.operands):
            if operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
                pool = model.pools[operand.location.pool_index]
                raw = pool.map(writable=False)[: operand.location.length].copy()  # the offset is forgotten
                prepared.constants[index] = raw.view(numpy_dtype(operand.type)).reshape(operand.dimensions)
        return prepared


@mutant("constant-reference-offset-zero", "POOL-1", "reads CONSTANT_REFERENCE values from offset 0 of their pool")
def constant_reference_offset_zero():
    return _ConstantsFromOffsetZero()


class _ConstantRegionsUnchecked(ReferenceDevice):
    def prepare_model(self, model):
        validate_model(self.rules, self.kernels, model)
        constants = {}
        for index, operand in enumerate(model.main.operands):
            loc = operand.location
            if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
                source = np.frombuffer(model.operand_values, dtype=np.uint8)
            elif operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
                source = self.map_memory(model.pools[loc.pool_index], writable=False, rule="POOL-4")
            else:
                continue
            pages = np.zeros(-(-max(source.size, loc.offset + loc.length) // 4096) * 4096, np.uint8)
            pages[: source.size] = source  # a mapping is whole pages: past the pool's end, zeros
            raw = pages[loc.offset : loc.offset + loc.length]
            constants[index] = raw.view(numpy_dtype(operand.type)).reshape(operand.dimensions)
        return ReferencePreparedModel(self, model, constants)


def _region_unchecked(operand, model):
    """POOL-1's location check with the region's end left out: only the pool index and a non-negative offset."""
    loc = operand.location
    if operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
        pools = 1 if operand.lifetime == OperandLifeTime.CONSTANT_COPY else len(model.pools)
        return OK if 0 <= loc.pool_index < pools and loc.offset >= 0 else INVALID
    return validation.operand_location_valid(operand, model)


@mutant("constant-region-unchecked", "POOL-5",
        "checks a constant's pool index but not that its region lies within the pool (or operandValues): a region "
        "past the end reads the zeros of the mapping's last page")
def constant_region_unchecked():
    return _ConstantRegionsUnchecked(rules=broken_rules("operand_location_valid", _region_unchecked))


def _pool_index_wraps(operand, model):
    """POOL-1's location check with a constant's pool index counted as a Python index: -1 names the last pool."""
    loc = operand.location
    if operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE and -len(model.pools) <= loc.pool_index < 0:
        return validation.operand_location_valid(
            dataclasses.replace(operand, location=dataclasses.replace(loc, pool_index=loc.pool_index % len(model.pools))), model)
    return validation.operand_location_valid(operand, model)


@mutant("constant-pool-index-wraps", "POOL-5",
        "takes a constant's negative pool index as counting from the last pool (a Python list index), "
        "where it names no pool")
def constant_pool_index_wraps():
    return with_rule("operand_location_valid", _pool_index_wraps)  # the constants then read model.pools[-1]


def _offset_sign_unchecked(operand, model):
    """POOL-1's location check without the offset's sign: a constant's region is judged as if it
    started at 0, so one at a negative offset passes wherever its length fits."""
    loc = operand.location
    if operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE) and loc.offset < 0:
        return validation.operand_location_valid(dataclasses.replace(operand, location=dataclasses.replace(loc, offset=0)), model)
    return validation.operand_location_valid(operand, model)


@mutant("constant-offset-sign-unchecked", "POOL-5",
        "checks that a constant's region fits its pool but not that its offset is non-negative: a negative offset "
        "reads the pool counting from its end")
def constant_offset_sign_unchecked():
    return with_rule("operand_location_valid", _offset_sign_unchecked)


@mutant("non-blob-hardware-buffer-constants", "POOL-3",
        "maps a non-BLOB hardware_buffer as a constant pool, like a BLOB one")
def non_blob_hardware_buffer_constants():
    return with_rule("constant_pool_kind_allowed", lambda memory: OK)


@mutant("constant-pools-mapped-at-first-execution", "POOL-4",
        "maps constant pools at a prepared model's first execution, so an unusable one fails execute, not prepare_model")
def constant_pools_mapped_at_first_execution():
    return _ConstantPoolsMappedLate()


class _ConstantPoolsMappedLate(ReferenceDevice):
    def prepare_model(self, model):
        validate_model(self.rules, self.kernels, model)
        return _LateConstantsModel(self, model, {})


class _LateConstantsModel(ReferencePreparedModel):
    def execute(self, request):
        if not self.constants:
            self.constants = load_constants(self.device.rules, self.model)
        return super().execute(request)


@mutant("constant-pool-converted-in-place", "POOL-2",
        "once it has copied its constants out at preparation, converts each CONSTANT_REFERENCE region of the "
        "client's pool in place to its own representation (every byte's top bit flipped, as uint8 weights become int8)")
def constant_pool_converted_in_place():
    return _ConstantPoolConvertedInPlace()


class _ConstantPoolConvertedInPlace(ReferenceDevice):
    def prepare_model(self, model):
        prepared = super().prepare_model(model)
        for operand in model.main.operands:
            if operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
                loc = operand.location
                pool = self.map_memory(model.pools[loc.pool_index], writable=True, rule="POOL-4")
                pool[loc.offset : loc.offset + loc.length] ^= 0x80
        return prepared


@mutant("compiled-models-cached-by-graph", "POOL-1",
        "keeps every compiled model in a cache keyed by its graph (operands, operations, I/O), not its constant "
        "values: a model whose graph was compiled before gets the earlier model's weights")
def compiled_models_cached_by_graph():
    return _CompiledByGraph()


class _CompiledByGraph(ReferenceDevice):
    def __init__(self) -> None:
        super().__init__()
        self._compiled: dict[str, ReferencePreparedModel] = {}

    def prepare_model(self, model):
        key = repr(model.main)
        if key not in self._compiled:
            self._compiled[key] = super().prepare_model(model)
        return self._compiled[key]


@mutant("request-binding-cached", "POOL-2",
        "binds a prepared model's inputs and outputs to their regions at its first execution and keeps that "
        "binding: later requests are read and written at the first one's offsets in their own pools")
def request_binding_cached():
    return ReferenceDevice(prepared_model_class=_BindsFirstRequest)


class _BindsFirstRequest(ReferencePreparedModel):
    def execute(self, request):
        first = getattr(self, "_first", None)
        if first is None:
            self._first = first = request
        elif len(first.inputs) == len(request.inputs) and len(first.outputs) == len(request.outputs):
            request = dataclasses.replace(
                request,
                inputs=tuple(dataclasses.replace(a, location=b.location) for a, b in zip(request.inputs, first.inputs)),
                outputs=tuple(dataclasses.replace(a, location=b.location) for a, b in zip(request.outputs, first.outputs)))
        return super().execute(request)


@mutant("blob-constant-pools-refused", "POOL-3",
        "maps hardware_buffer_blob memories for execution I/O only: a BLOB constant pool fails preparation")
def blob_constant_pools_refused():
    return with_rule("constant_pool_kind_allowed",
                     lambda memory: INVALID if memory.kind.startswith("hardware_buffer") else OK)


@mutant("extra-arguments-ignored", "REQ-1",
        "checks that a request has an argument for every model input and output, but ignores extra ones")
def extra_arguments_ignored():
    def argument_counts_match(request_inputs, request_outputs, subgraph):
        enough = request_inputs >= len(subgraph.input_indexes) and request_outputs >= len(subgraph.output_indexes)
        return OK if enough else INVALID
    return with_rule("argument_counts_match", argument_counts_match)


@mutant("unknown-memory-kind-accepted", "POOL-5", "maps any memory whatever its kind name says")
def unknown_memory_kind_accepted():
    return with_rule("memory_kind_known", lambda memory: OK)


@mutant("read-only-output-accepted", "POOL-5",
        "when an output memory cannot be mapped writable, writes to a private copy and reports success")
def read_only_output_accepted():
    return _PrivateCopyOfReadOnlyOutput()


class _PrivateCopyOfReadOnlyOutput(ReferenceDevice):
    def map_memory(self, memory: Memory, *, writable: bool, rule: str):
        try:
            return super().map_memory(memory, writable=writable, rule=rule)
        except DriverError:
            if not writable or memory.closed:
                raise
            try:
                return np.array(read_detached(memory.fd, memory.offset, memory.size, writable=False))
            except MemoryMapError:
                raise DriverError(ErrorStatus.GENERAL_FAILURE, "unmappable") from None


@mutant("missing-input-accepted", "REQ-1", "checks the number of outputs but not the number of inputs")
def missing_input_accepted():
    def argument_counts_match(request_inputs, request_outputs, subgraph):
        return OK if request_outputs == len(subgraph.output_indexes) and request_inputs <= len(subgraph.input_indexes) + 1 else INVALID
    return with_rule("argument_counts_match", argument_counts_match)


@mutant("missing-output-accepted", "REQ-1",
        "binds the request's outputs to the model's in order and checks only that there is one: a request "
        "leaving out a later output runs, and that output is never written")
def missing_output_accepted():
    def argument_counts_match(request_inputs, request_outputs, subgraph):
        return OK if request_inputs == len(subgraph.input_indexes) and 1 <= request_outputs <= len(subgraph.output_indexes) else INVALID
    return with_rule("argument_counts_match", argument_counts_match)


@mutant("length-unchecked", "REQ-2", "does not check an argument's length against its dimensions")
def length_unchecked():
    return with_rule("length_matches_dimensions", lambda location, operand_type, combined: OK)


@mutant("request-dimensions-replace-model", "REQ-2",
        "takes a request argument's full dimensions of the model's rank in place of the model's own, "
        "checking only that the length holds them, so a (3, 2) argument of a (2, 3) operand runs as (3, 2)")
def request_dimensions_replace_model():
    def argument_dimensions(argument, operand):
        given = tuple(argument.dimensions)
        if not is_scalar_type(operand.type) and len(given) == len(operand.dimensions) and all(d > 0 for d in given):
            return given
        return validation.argument_dimensions(argument, operand)
    return with_rule("argument_dimensions", argument_dimensions)


@mutant("negative-dimension-inferred", "REQ-2",
        "takes a negative input dimension as 'whatever the length holds', as numpy's reshape does, "
        "where a dimension is a count and a negative one is a malformed request")
def negative_dimension_inferred():
    def input_fully_specified(operand_type, combined):
        return OK if is_scalar_type(operand_type) or combined and 0 not in combined else INVALID
    return with_rule("input_fully_specified", input_fully_specified)


@mutant("mappings-cached-by-descriptor", "POOL-2",
        "keeps every pool's mapping by descriptor number, offset and size and never drops one, so a later "
        "memory that gets a closed one's number is read through the old mapping")
def mappings_cached_by_descriptor():
    return _MappingsCachedByDescriptor()


class _MappingsCachedByDescriptor(ReferenceDevice):
    """A mapping cache, as CHOICE-6 allows, keyed by what is reused: descriptor numbers are handed
    out again as soon as a memory is closed.  A scenario alone on a fresh driver maps every pool
    anew and passes; the bug shows only after earlier calls left mappings behind."""

    def __init__(self) -> None:
        super().__init__()
        self._mapped: dict[tuple, np.ndarray] = {}

    def map_memory(self, memory: Memory, *, writable: bool, rule: str) -> np.ndarray:
        key = (memory.fd, memory.offset, memory.size, writable)
        if key not in self._mapped:
            self._mapped[key] = super().map_memory(memory, writable=writable, rule=rule)
        return self._mapped[key]


@mutant("no-value-input-read-as-zeros", "REQ-1",
        "binds a required input the request gives no value (hasNoValue) to zeros and runs, as for an omitted "
        "optional operand, where it must refuse the request as a missing argument")
def no_value_input_read_as_zeros():
    return ReferenceDevice(prepared_model_class=_NoValueInputsAsZeros)


class _NoValueInputsAsZeros(ReferencePreparedModel):
    def execute(self, request):
        inputs, pools = list(request.inputs), list(request.pools)
        for number, (argument, index) in enumerate(zip(request.inputs, self.model.main.input_indexes)):
            operand = self.model.main.operands[index]
            if argument.has_no_value and operand.dimensions and 0 not in operand.dimensions:
                size = operand_byte_size(operand.type, operand.dimensions)
                pools.append(create_ashmem(size))  # zero-filled
                inputs[number] = RequestArgument(False, DataLocation(len(pools) - 1, 0, size), ())
        try:
            return super().execute(dataclasses.replace(request, inputs=tuple(inputs), pools=tuple(pools)))
        finally:
            for pool in pools[len(request.pools):]:
                pool.close()
