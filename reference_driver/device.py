"""The reference device: capabilities, model preparation, allocation, buffers.

This code is the definition of correct behaviour: read it beside the contract, docs/spec.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.api.hal import (
    BufferDesc,
    BufferRole,
    Capabilities,
    DriverError,
    ErrorStatus,
    ExecutionResult,
    IODirection,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Request,
    Subgraph,
    numpy_dtype,
)
from harness.api.memory import MEMORY_KINDS, DetachedRegion, Memory

from . import executor
from .buffers import ManagedBuffer, Role, TokenTable
from .ops import KERNELS, Kernel, Refusal, control_flow
from .validation import OK, Rules, enforce, subgraph_reference_cycle

__all__ = ["ReferenceBuffer", "ReferenceDevice", "ReferencePreparedModel"]

VERSION = "1.0"
_TENSOR_TYPES = frozenset(
    {
        OperandType.TENSOR_FLOAT32,
        OperandType.TENSOR_FLOAT16,
        OperandType.TENSOR_INT32,
        OperandType.TENSOR_QUANT8_ASYMM,
        OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
        OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,  # CONV_2D filters
        OperandType.TENSOR_QUANT8_SYMM,  # DEQUANTIZE's input
        OperandType.TENSOR_QUANT16_ASYMM,  # CAST to itself
        OperandType.TENSOR_QUANT16_SYMM,
        OperandType.INT32,
        OperandType.BOOL,  # CONV_2D's layout flag
        OperandType.TENSOR_BOOL8,  # comparisons, logical operations, SELECT
        OperandType.FLOAT32,  # the RESIZE operations' scale factors, ELU's alpha
        OperandType.FLOAT16,
    }
)


class ReferencePreparedModel:
    """A validated model with its constant values loaded."""

    def __init__(self, device: ReferenceDevice, model: Model, constants: dict[int, np.ndarray]) -> None:
        self.device = device
        self.model = model
        self.constants = constants
        # the referenced subgraphs' constants, read at preparation as the main subgraph's are
        self.referenced_constants = load_referenced_constants(device.rules, model) if model.referenced else ()

    def execute(self, request: Request) -> ExecutionResult:
        return executor.execute(self, request, self.device.tokens)


class ReferenceBuffer:
    """A driver-managed buffer; holds its state until `release`."""

    def __init__(self, state: ManagedBuffer, device: ReferenceDevice) -> None:
        self.state = state  # the buffer's contents and roles (shared with the device's token table)
        self.device = device

    @property
    def token(self) -> int:
        return self.state.token

    def _require_live(self) -> None:
        if self.state.released:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"[DOM-ROLE-1] buffer {self.state.token} was released", rule="DOM-ROLE-1")

    def copy_from(self, memory: Memory, dimensions: Sequence[int] = ()) -> None:
        state, rules = self.state, self.device.rules
        with state.lock.writing():
            try:
                self._require_live()
                enforce(rules.memory_kind_known(memory), "POOL-5", lambda: f"unknown memory kind {memory.kind!r}")
                dims = rules.copy_dimensions(state.operand_type, state.initial_dimensions, tuple(dimensions))
                if dims is None:
                    raise DriverError(ErrorStatus.INVALID_ARGUMENT,
                                      f"[DOM-COPY-2] dimensions {tuple(dimensions)} for a buffer of {state.initial_dimensions}", rule="DOM-COPY-2")
                expected = int(np.prod(dims, dtype=np.int64)) * np.dtype(numpy_dtype(state.operand_type)).itemsize
                enforce(rules.memory_size_matches(memory.size, expected), "DOM-COPY-1",
                              lambda: f"memory of {memory.size} bytes for {expected}")
                source = self.device.map_memory(memory, writable=False, rule="DOM-COPY-1")
                state.store(source.view(state.dtype).reshape(dims))
            except BaseException:
                state.invalidate()  # DOM-STATE-1: a failed copyFrom leaves it uninitialized
                raise

    def copy_to(self, memory: Memory) -> None:
        state, rules = self.state, self.device.rules
        with state.lock.reading():
            self._require_live()
            enforce(rules.memory_kind_known(memory), "POOL-5", lambda: f"unknown memory kind {memory.kind!r}")
            size = state.byte_size
            if size is not None:  # size is checked before initialization (DOM-COPY-1)
                enforce(rules.memory_size_matches(memory.size, size), "DOM-COPY-1",
                              lambda: f"memory of {memory.size} bytes for {size}")
            enforce(rules.buffer_initialized(state.initialized), "DOM-STATE-2",
                          lambda: f"buffer {state.token} is uninitialized")
            target = self.device.map_memory(memory, writable=True, rule="DOM-COPY-1")
            target[:] = state.data.reshape(-1).view(np.uint8)
            if isinstance(target, DetachedRegion):
                try:
                    target.write_back(0, target.size)
                except OSError as error:
                    raise DriverError(ErrorStatus.GENERAL_FAILURE, f"[DOM-COPY-1] {error}", rule="DOM-COPY-1") from None

    def release(self) -> None:
        self.device.tokens.remove(self.state.token)


class ReferenceDevice:
    """The numpy reference driver.

    What a seeded-bug or variant driver may change, and nothing else (a small, documented set;
    the reference never uses it to vary itself):

    - constructor parameters: ``rules`` (a `Rules` subclass overriding one rule), ``tokens`` (a
      `TokenTable` subclass), ``kernels`` (the operation table), ``runners`` (how IF and WHILE
      run their referenced subgraphs), and the classes it hands out, ``prepared_model_class``,
      ``buffer_class`` and ``managed_buffer_class``;
    - methods a subclass may override: `map_memory` (how a memory is mapped) and
      `write_outputs` (how results reach the output regions), besides the Driver API itself.
    """

    name = "reference"
    version = VERSION

    def __init__(
        self,
        *,
        rules: Rules | None = None,
        tokens: TokenTable | None = None,
        kernels: Mapping[OperationType, Kernel] | None = None,
        runners: Mapping[OperationType, control_flow.Runner] | None = None,
        prepared_model_class: type[ReferencePreparedModel] = ReferencePreparedModel,
        buffer_class: type[ReferenceBuffer] = ReferenceBuffer,
        managed_buffer_class: type[ManagedBuffer] = ManagedBuffer,
    ) -> None:
        self.rules = rules if rules is not None else Rules()
        self.tokens = tokens if tokens is not None else TokenTable()
        self.kernels = dict(kernels if kernels is not None else KERNELS)
        # how IF and WHILE run their referenced subgraphs, which the executor (not a kernel) drives
        self.runners = dict(runners if runners is not None else control_flow.RUNNERS)
        self.prepared_model_class = prepared_model_class
        self.buffer_class = buffer_class
        self.managed_buffer_class = managed_buffer_class

    def map_memory(self, memory: Memory, *, writable: bool, rule: str) -> np.ndarray:
        """A memory's region as bytes, checked against POOL-5 (``rule``: what a failure to map breaks)."""
        return executor.map_memory(self.rules, memory, writable=writable, rule=rule)

    def write_outputs(self, outputs: Sequence[executor.Binding], values: dict[int, np.ndarray],
                      views: dict[int, np.ndarray]) -> None:
        """Write each output's value into its region or its driver-managed buffer."""
        executor.write_outputs(self.rules, outputs, values, views)

    def capabilities(self) -> Capabilities:
        return Capabilities(
            memory_kinds=frozenset(MEMORY_KINDS),
            memory_domains=True,
            operations=frozenset(KERNELS),
            operand_types=_TENSOR_TYPES,
        )

    # ----------------------------------------------------------------- models

    def get_supported_operations(self, model: Model) -> list[bool]:
        rules = self.rules
        enforce(rules.operand_indexes_in_range(model.main), "MODEL", "operand index out of range")
        operands = model.main.operands
        supported = []
        for operation in model.main.operations:
            ok = operation_refusal(self.kernels, operands, operation, model.referenced) is None
            ok = ok and all(_constant_pool_usable(rules, operands[i], model) for i in operation.inputs)
            ok = ok and self._referenced_supported(model, operation, operands, frozenset())
            supported.append(ok)
        return supported

    def _referenced_supported(self, model: Model, operation: Operation, operands: Sequence[Operand],
                              enclosing: frozenset[int]) -> bool:
        """Whether every subgraph an IF or WHILE names (and those they name) is valid and all its
        operations supported: the operation runs them all.  ``enclosing``: the subgraphs on the way here."""
        for position in operation.inputs:
            if operands[position].lifetime != OperandLifeTime.SUBGRAPH:
                continue
            index = operands[position].location.offset
            if not 0 <= index < len(model.referenced) or index in enclosing:  # a cycle is never supported
                return False
            graph = model.referenced[index]
            try:
                validate_subgraph(self.rules, self.kernels, model, graph, "")
            except DriverError:
                return False
            if not all(_constant_pool_usable(self.rules, operand, model) for operand in graph.operands):
                return False
            if not all(self._referenced_supported(model, inner, graph.operands, enclosing | {index})
                       for inner in graph.operations):
                return False
        return True

    def prepare_model(self, model: Model) -> ReferencePreparedModel:
        validate_model(self.rules, self.kernels, model)
        return self.prepared_model_class(self, model, load_constants(self.rules, model))

    # ----------------------------------------------------------------- memory domains

    def allocate(
        self,
        desc: BufferDesc,
        prepared_models: Sequence[object],
        input_roles: Sequence[BufferRole],
        output_roles: Sequence[BufferRole],
    ) -> tuple[ReferenceBuffer, int]:
        rules = self.rules
        roles = [(IODirection.INPUT, r) for r in input_roles] + [(IODirection.OUTPUT, r) for r in output_roles]
        enforce(rules.allocation_has_models_and_roles(len(prepared_models), len(roles)), "DOM-ALLOC-1",
                      f"{len(prepared_models)} prepared models, {len(roles)} roles")
        allowed: list[Role] = []
        operands: list[Operand] = []
        for direction, role in roles:
            where = f"{direction.value} role {role}"
            enforce(rules.index_in_range(role.model_index, len(prepared_models)), "DOM-ALLOC-1", lambda: f"{where}: model index")
            prepared = prepared_models[role.model_index]
            if not (isinstance(prepared, ReferencePreparedModel) and prepared.device is self):
                raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"[DOM-ALLOC-1] {where}: not a model prepared by this driver", rule="DOM-ALLOC-1")
            subgraph = prepared.model.main
            indexes = subgraph.input_indexes if direction is IODirection.INPUT else subgraph.output_indexes
            enforce(rules.index_in_range(role.io_index, len(indexes)), "DOM-ALLOC-1", lambda: f"{where}: io index")
            enforce(rules.role_probability_in_range(role.probability), "DOM-ALLOC-1", lambda: f"{where}: probability")
            allowed.append(Role(prepared, direction, role.io_index))
            operands.append(subgraph.operands[indexes[role.io_index]])
        keys = [rules.role_key(role.model_index, r.prepared_model, r.direction.value, r.io_index)
                for r, (_, role) in zip(allowed, roles)]
        enforce(rules.roles_unique(keys), "DOM-ALLOC-1", "a role is given twice")
        enforce(rules.role_operands_agree(operands), "DOM-ALLOC-2", "role operands differ in type, scale or zeroPoint")
        first = operands[0]
        enforce(rules.scalar_role_without_dimensions(first.type, tuple(desc.dimensions)), "DOM-ALLOC-2",
                      lambda: f"scalar role with dimensions {desc.dimensions}")
        enforce(rules.descriptor_dimensions_valid(tuple(desc.dimensions)), "DOM-ALLOC-2",
                lambda: f"descriptor dimensions {desc.dimensions} have a negative extent")
        dims = rules.role_dimensions(operands, tuple(desc.dimensions))
        if dims is None:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, "[DOM-ALLOC-2] role and descriptor dimensions conflict", rule="DOM-ALLOC-2")
        state = self.tokens.add(
            lambda token: self.managed_buffer_class(token, first.type, first.scale, first.zero_point, dims, frozenset(allowed))
        )
        return self.buffer_class(state, self), state.token


# --------------------------------------------------------------------------- preparation


def validate_model(rules: Rules, kernels: Mapping[OperationType, Kernel], model: Model) -> None:
    """Every static rule a model must meet; INVALID_ARGUMENT at the first broken one.  The referenced
    subgraphs (IF's branches, WHILE's condition and body) meet the main subgraph's rules too."""
    _validate_structure(rules, model.main, "")
    for number, referenced in enumerate(model.referenced):
        _validate_structure(rules, referenced, f"referenced subgraph {number}: ")
    enforce(rules.subgraph_references_acyclic(model), "MODEL",
            lambda: f"referenced subgraphs {list(subgraph_reference_cycle(model))} reference each other in a cycle "
                    "(NNAPI: no recursion)")
    for index, pool in enumerate(model.pools):
        enforce(rules.memory_kind_known(pool), "POOL-5", lambda: f"model pool {index}: unknown kind {pool.kind!r}")
        enforce(rules.constant_pool_kind_allowed(pool), "POOL-3", lambda: f"model pool {index}: non-BLOB hardware buffer")
    _validate_contents(rules, kernels, model, model.main, "")
    for number, referenced in enumerate(model.referenced):
        _validate_contents(rules, kernels, model, referenced, f"referenced subgraph {number}: ")


def validate_subgraph(rules: Rules, kernels: Mapping[OperationType, Kernel], model: Model, subgraph: Subgraph,
                      where: str) -> None:
    """One subgraph's rules; ``where`` names it in a refusal ("" for the main subgraph)."""
    _validate_structure(rules, subgraph, where)
    _validate_contents(rules, kernels, model, subgraph, where)


def _validate_structure(rules: Rules, subgraph: Subgraph, where: str) -> None:
    enforce(rules.operand_indexes_in_range(subgraph), "MODEL", f"{where}an operand index is out of range")
    enforce(rules.io_lifetimes_match(subgraph), "MODEL", f"{where or 'model '}inputs and outputs do not have the SUBGRAPH_INPUT/OUTPUT lifetimes")
    enforce(rules.operations_in_dataflow_order(subgraph), "MODEL", f"{where}an operation reads an operand no earlier operation wrote")


def _validate_contents(rules: Rules, kernels: Mapping[OperationType, Kernel], model: Model, subgraph: Subgraph,
                       where: str) -> None:
    for index, operand in enumerate(subgraph.operands):
        at = f"{where}operand {index} ({operand.type.name})"
        enforce(rules.operand_location_valid(operand, model), "POOL-1", lambda: f"{at}: location {operand.location}")
        enforce(rules.operand_quantization_valid(operand), "MODEL",
                lambda: f"{at}: scale {operand.scale}, zeroPoint {operand.zero_point}, channel quantization {operand.channel_quant}")
        enforce(rules.scalar_has_no_dimensions(operand), "MODEL", lambda: f"{at}: scalar with dimensions {operand.dimensions}")
    for number, operation in enumerate(subgraph.operations):
        refusal = operation_refusal(kernels, subgraph.operands, operation, model.referenced)
        if refusal is not None:
            raise DriverError(ErrorStatus.INVALID_ARGUMENT, f"[MODEL] {where}operation {number} ({operation.type.name}): "
                              f"{describe_refusal(refusal, operation, subgraph.operands)}", rule="MODEL")


def operation_refusal(kernels: Mapping[OperationType, Kernel], operands: Sequence[Operand], operation: Operation,
                      referenced: Sequence[Subgraph] = ()) -> Refusal | None:
    """Why the reference does not accept this operation, or None when it does (IF and WHILE are
    checked against the ``referenced`` subgraphs they name too)."""
    kernel = kernels.get(operation.type)
    if kernel is None:
        return Refusal("operation not implemented by this driver")
    ins, outs = [operands[i] for i in operation.inputs], [operands[i] for i in operation.outputs]
    return kernel.validate(ins, outs) or control_flow.referenced_refusal(operation.type, ins, outs, referenced)


def describe_refusal(refusal: Refusal, operation: Operation, operands: Sequence[Operand]) -> str:
    """A refusal in words: the operand (its place in the operation, its index and type) and the feature."""
    if refusal.position is None:
        return refusal.feature
    indexes = operation.outputs if refusal.output else operation.inputs
    index = indexes[refusal.position]
    return f"{'output' if refusal.output else 'input'} {refusal.position} (operand {index}, {operands[index].type.name}): {refusal.feature}"


def load_constants(rules: Rules, model: Model) -> dict[int, np.ndarray]:
    """Constant operand values of the main subgraph.  Values from pools are copied out at preparation,
    so a client that later shrinks or closes the pool cannot make execution fault (SVC-3)."""
    return subgraph_constants(rules, model, model.main, {})


def load_referenced_constants(rules: Rules, model: Model) -> tuple[dict[int, np.ndarray], ...]:
    """Constant operand values of each referenced subgraph, as `load_constants` reads the main one's."""
    views: dict[int, np.ndarray] = {}
    return tuple(subgraph_constants(rules, model, graph, views) for graph in model.referenced)


def subgraph_constants(rules: Rules, model: Model, subgraph: Subgraph, views: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """``subgraph``'s constant values (``views``: the model pools mapped so far, shared between subgraphs)."""
    constants = {}
    for index, operand in enumerate(subgraph.operands):
        loc = operand.location
        dtype = np.dtype(numpy_dtype(operand.type))
        if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
            raw = np.frombuffer(model.operand_values, dtype=np.uint8, count=loc.length, offset=loc.offset)
        elif operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
            if loc.pool_index not in views:
                views[loc.pool_index] = executor.map_memory(rules, model.pools[loc.pool_index], writable=False, rule="POOL-4")
            raw = views[loc.pool_index][loc.offset : loc.offset + loc.length].copy()
        elif operand.lifetime == OperandLifeTime.NO_VALUE:  # an omitted optional operand: an empty value
            constants[index] = np.empty(0, dtype)
            continue
        elif operand.lifetime == OperandLifeTime.SUBGRAPH:  # a reference's value: the subgraph it names
            constants[index] = np.asarray(loc.offset, dtype)
            continue
        else:
            continue
        constants[index] = raw.view(dtype).reshape(operand.dimensions)
    return constants


def _constant_pool_usable(rules: Rules, operand: Operand, model: Model) -> bool:
    if operand.lifetime != OperandLifeTime.CONSTANT_REFERENCE:
        return True
    if not 0 <= operand.location.pool_index < len(model.pools):
        return False
    pool = model.pools[operand.location.pool_index]
    return rules.memory_kind_known(pool) == OK and rules.constant_pool_kind_allowed(pool) == OK
