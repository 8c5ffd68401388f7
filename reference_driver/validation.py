"""Every validation rule of SPEC §2–4 as a small function returning the status it decides.

Each rule returns `ErrorStatus.NONE` when its check passes and the status SPEC assigns
when it fails, so a reader can hold this module against SPEC line by line.  `enforce`
turns a failing rule into a `DriverError` that names the rule.  Rules never touch
memory contents or driver state beyond what they are given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Callable

from harness.api.hal import (
    DataLocation,
    DriverError,
    ErrorStatus,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    RequestArgument,
    Subgraph,
    is_fully_specified,
    is_scalar_type,
    operand_byte_size,
)
from harness.api.memory import MEMORY_KINDS, Memory

OK = ErrorStatus.NONE
INVALID = ErrorStatus.INVALID_ARGUMENT
FAILURE = ErrorStatus.GENERAL_FAILURE

Dims = tuple[int, ...]


def enforce(status: ErrorStatus, rule: str, detail: str | Callable[[], str] = "") -> None:
    """Raise `DriverError` unless ``status`` is NONE; the message names the SPEC rule.

    ``detail`` may be a callable so that messages are only formatted on failure.
    """
    if status != OK:
        text = detail() if callable(detail) else detail
        raise DriverError(status, f"[{rule}] {text}".rstrip(), rule=rule)


# --------------------------------------------------------------------------- dimensions


def combine_dimensions(lhs: Sequence[int], rhs: Sequence[int]) -> Dims | None:
    """Merge two partial shapes; None when they conflict (DOM-ALLOC-2).

    Empty means unknown rank and takes the other side; per axis 0 means unknown and
    takes the other value; two different known ranks or known extents conflict.
    """
    if not lhs:
        return tuple(rhs)
    if not rhs:
        return tuple(lhs)
    if len(lhs) != len(rhs):
        return None
    combined = []
    for a, b in zip(lhs, rhs):
        if a != 0 and b != 0 and a != b:
            return None
        combined.append(a or b)
    return tuple(combined)


# --------------------------------------------------------------------------- memories


def memory_kind_known(memory: Memory) -> ErrorStatus:
    """POOL-5: a memory must be one of the named kinds, hardware buffers with a description."""
    if memory.kind not in MEMORY_KINDS:
        return INVALID
    if memory.kind.startswith("hardware_buffer") and memory.hardware_desc is None:
        return INVALID
    return OK


def constant_pool_kind_allowed(memory: Memory) -> ErrorStatus:
    """POOL-3: non-BLOB hardware buffers are only valid for execution I/O, never for constants."""
    return INVALID if memory.kind == "hardware_buffer" else OK


# --------------------------------------------------------------------------- models (prepare)


def operand_indexes_in_range(subgraph: Subgraph) -> ErrorStatus:
    """Every index an operation or the subgraph I/O lists names an existing operand."""
    count = len(subgraph.operands)
    indexes = [*subgraph.input_indexes, *subgraph.output_indexes]
    for operation in subgraph.operations:
        indexes.extend(operation.inputs)
        indexes.extend(operation.outputs)
    return OK if all(0 <= i < count for i in indexes) else INVALID


def io_lifetimes_match(subgraph: Subgraph) -> ErrorStatus:
    """Subgraph inputs are SUBGRAPH_INPUT operands and outputs SUBGRAPH_OUTPUT, each listed once."""
    inputs = [i for i, o in enumerate(subgraph.operands) if o.lifetime == OperandLifeTime.SUBGRAPH_INPUT]
    outputs = [i for i, o in enumerate(subgraph.operands) if o.lifetime == OperandLifeTime.SUBGRAPH_OUTPUT]
    if sorted(subgraph.input_indexes) != inputs or sorted(subgraph.output_indexes) != outputs:
        return INVALID
    return OK


def operations_in_dataflow_order(subgraph: Subgraph) -> ErrorStatus:
    """Each operation reads only defined operands and each operand is written at most once."""
    defined = {
        i
        for i, o in enumerate(subgraph.operands)
        if o.lifetime in (OperandLifeTime.SUBGRAPH_INPUT, OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE,
                          OperandLifeTime.NO_VALUE, OperandLifeTime.SUBGRAPH)
    }
    for operation in subgraph.operations:
        if any(i not in defined for i in operation.inputs):
            return INVALID
        for i in operation.outputs:
            lifetime = subgraph.operands[i].lifetime
            if i in defined or lifetime not in (OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_OUTPUT):
                return INVALID
            defined.add(i)
    return OK if all(i in defined for i in subgraph.output_indexes) else INVALID


def subgraph_reference_cycle(model: Model) -> tuple[int, ...]:
    """The first cycle of subgraph references (referenced subgraph indexes, the first repeated at
    the end), or () when there is none; the main subgraph cannot be referenced, so no cycle holds it."""
    def named(graph: Subgraph) -> list[int]:
        return [o.location.offset for o in graph.operands
                if o.lifetime == OperandLifeTime.SUBGRAPH and 0 <= o.location.offset < len(model.referenced)]

    finished: set[int] = set()
    for start in range(len(model.referenced)):
        path: list[int] = []
        stack = [(start, iter(named(model.referenced[start])))]
        path.append(start)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                finished.add(node)
            elif child in path:
                return (*path[path.index(child):], child)
            elif child not in finished:
                stack.append((child, iter(named(model.referenced[child]))))
                path.append(child)
    return ()


def subgraph_references_acyclic(model: Model) -> ErrorStatus:
    """No subgraph references itself, directly or through others (NNAPI: no recursion)."""
    return INVALID if subgraph_reference_cycle(model) else OK


def operand_location_valid(operand: Operand, model: Model) -> ErrorStatus:
    """POOL-1: CONSTANT_COPY in operandValues, CONSTANT_REFERENCE in a pool, each of the exact byte size;
    a SUBGRAPH operand names a referenced subgraph by its offset."""
    loc = operand.location
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        capacity = len(model.operand_values) if loc.pool_index == 0 else -1
    elif operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        if not 0 <= loc.pool_index < len(model.pools):
            return INVALID
        capacity = model.pools[loc.pool_index].size
    elif operand.lifetime == OperandLifeTime.SUBGRAPH:
        named = 0 <= loc.offset < len(model.referenced) and loc.pool_index == loc.length == loc.padding == 0
        return OK if named and operand.type == OperandType.SUBGRAPH else INVALID
    else:
        return OK if loc == DataLocation() else INVALID
    if not is_fully_specified(operand.type, operand.dimensions):
        return INVALID
    if loc.offset < 0 or loc.length != operand_byte_size(operand.type, operand.dimensions):
        return INVALID
    return OK if loc.offset + loc.length <= capacity else INVALID


#: NeuralNetworks.h: zeroPoint ranges of the asymmetric types (the symmetric ones have zeroPoint 0).
_ZERO_POINT_RANGE = {
    OperandType.TENSOR_QUANT8_ASYMM: (0, 255),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    OperandType.TENSOR_QUANT16_ASYMM: (0, 65535),
    OperandType.TENSOR_QUANT8_SYMM: (0, 0),
    OperandType.TENSOR_QUANT16_SYMM: (0, 0),
}


def operand_quantization_valid(operand: Operand) -> ErrorStatus:
    """Quantized operands have a positive scale and a zero point in the element range; a per-channel
    operand has scale 0, zeroPoint 0 and one positive scale per index of a valid channel dimension;
    no other operand carries quantization."""
    if operand.type in _ZERO_POINT_RANGE:
        low, high = _ZERO_POINT_RANGE[operand.type]
        return OK if operand.scale > 0 and low <= operand.zero_point <= high and operand.channel_quant is None else INVALID
    if operand.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        quant = operand.channel_quant
        if quant is None or operand.scale != 0 or operand.zero_point != 0 or not quant.scales:
            return INVALID
        if not 0 <= quant.channel_dim < max(len(operand.dimensions), 1) or any(s <= 0 for s in quant.scales):
            return INVALID
        extent = operand.dimensions[quant.channel_dim] if operand.dimensions else 0
        return OK if extent in (0, len(quant.scales)) else INVALID
    if operand.channel_quant is not None:
        return INVALID
    if operand.type == OperandType.TENSOR_INT32:
        return OK if operand.scale >= 0 and operand.zero_point == 0 else INVALID
    return OK if operand.scale == 0 and operand.zero_point == 0 else INVALID


def scalar_has_no_dimensions(operand: Operand) -> ErrorStatus:
    return INVALID if is_scalar_type(operand.type) and operand.dimensions else OK


# --------------------------------------------------------------------------- requests


def argument_counts_match(request_inputs: int, request_outputs: int, subgraph: Subgraph) -> ErrorStatus:
    """REQ-1: one argument per model input and per model output, no more, no fewer."""
    if request_inputs != len(subgraph.input_indexes) or request_outputs != len(subgraph.output_indexes):
        return INVALID
    return OK


def no_value_argument_empty(argument: RequestArgument) -> ErrorStatus:
    """REQ-2: a hasNoValue argument has an all-zero location and no dimensions."""
    if argument.has_no_value and (argument.location != DataLocation() or argument.dimensions):
        return INVALID
    return OK


def pool_index_in_range(argument: RequestArgument, pool_count: int) -> ErrorStatus:
    """REQ-2: poolIndex < number of pools."""
    return OK if 0 <= argument.location.pool_index < pool_count else INVALID


def region_within_memory(location: DataLocation, memory: Memory) -> ErrorStatus:
    """REQ-2: offset + length + padding <= pool size."""
    if min(location.offset, location.length, location.padding) < 0:
        return INVALID
    return OK if location.offset + location.length + location.padding <= memory.size else INVALID


def argument_dimensions(argument: RequestArgument, operand: Operand) -> Dims | None:
    """REQ-2: request dimensions combined with the model's; None when they disagree."""
    if is_scalar_type(operand.type):
        return () if not argument.dimensions else None
    return combine_dimensions(operand.dimensions, argument.dimensions)


def input_fully_specified(operand_type: OperandType, combined: Dims) -> ErrorStatus:
    """REQ-2: an input (including one of unknown rank) must end up with full dimensions."""
    return OK if is_fully_specified(operand_type, combined) else INVALID


def length_matches_dimensions(location: DataLocation, operand_type: OperandType, combined: Dims) -> ErrorStatus:
    """REQ-2: length equals the byte size of the combined dimensions when they are fully known."""
    if not is_fully_specified(operand_type, combined):
        return OK
    return OK if location.length == operand_byte_size(operand_type, combined) else INVALID


def token_location_zero(argument: RequestArgument) -> ErrorStatus:
    """DOM-ROLE-4: for token pools offset, length and padding are all 0."""
    loc = argument.location
    return OK if loc.offset == loc.length == loc.padding == 0 else INVALID


def token_positive(token: int) -> ErrorStatus:
    """DOM-ROLE-1: 0 and negative tokens never name a buffer."""
    return OK if token > 0 else INVALID


def role_allowed(roles: Iterable[object], prepared_model: object, direction: object, io_index: int) -> ErrorStatus:
    """DOM-ROLE-2: the use (same prepared model object, same direction, same ioIndex) is an allocation role."""
    for role in roles:
        if role.prepared_model is prepared_model and role.direction == direction and role.io_index == io_index:  # type: ignore[attr-defined]
            return OK
    return INVALID


def token_output_exclusive(token_uses: Iterable[tuple[int, str]]) -> ErrorStatus:
    """DOM-ROLE-3: a buffer used as an output is used nowhere else in the request.

    ``token_uses`` lists (token, "input" | "output") for every token argument: the same buffer
    named in two pool slots is still the same buffer.
    """
    uses: dict[int, list[str]] = {}
    for token, direction in token_uses:
        uses.setdefault(token, []).append(direction)
    for directions in uses.values():
        if "output" in directions and len(directions) > 1:
            return INVALID
    return OK


# --------------------------------------------------------------------------- allocation


def allocation_has_models_and_roles(model_count: int, role_count: int) -> ErrorStatus:
    """DOM-ALLOC-1: at least one prepared model and at least one role."""
    return OK if model_count > 0 and role_count > 0 else INVALID


def role_probability_in_range(probability: float) -> ErrorStatus:
    """DOM-ALLOC-1: 0 < probability <= 1."""
    return OK if 0.0 < probability <= 1.0 else INVALID


def index_in_range(index: int, count: int) -> ErrorStatus:
    """DOM-ALLOC-1: modelIndex and ioIndex name something that exists."""
    return OK if 0 <= index < count else INVALID


def role_key(model_index: int, prepared_model: object, direction: str, io_index: int) -> tuple:
    """DOM-ALLOC-1: what makes two roles the same: the prepared model itself (listed twice
    is still one model), the direction and the ioIndex."""
    return (id(prepared_model), direction, io_index)


def roles_unique(role_keys: Sequence[tuple]) -> ErrorStatus:
    """DOM-ALLOC-1: no role twice (keys from `role_key`)."""
    return OK if len(set(role_keys)) == len(role_keys) else INVALID


def role_operands_agree(operands: Sequence[Operand]) -> ErrorStatus:
    """DOM-ALLOC-2: every role operand has the same type, scale and zeroPoint."""
    first = operands[0]
    same = all((o.type, o.scale, o.zero_point) == (first.type, first.scale, first.zero_point) for o in operands)
    return OK if same else INVALID


def role_dimensions(operands: Sequence[Operand], desc_dimensions: Dims) -> Dims | None:
    """DOM-ALLOC-2: the descriptor's and all role operands' dimensions combined; None on conflict."""
    combined: Dims | None = tuple(desc_dimensions)
    for operand in operands:
        if combined is None:
            return None
        combined = combine_dimensions(combined, operand.dimensions)
    return combined


def descriptor_dimensions_valid(dimensions: Dims) -> ErrorStatus:
    """DOM-ALLOC-2 (SPEC §1): each extent of a descriptor is known (positive) or unknown (0); a
    negative one is no shape, whatever the roles' extents on its axis."""
    return OK if all(d >= 0 for d in dimensions) else INVALID


def scalar_role_without_dimensions(operand_type: OperandType, dimensions: Dims) -> ErrorStatus:
    """DOM-ALLOC-2: a scalar role needs empty dimensions."""
    return INVALID if is_scalar_type(operand_type) and dimensions else OK


# --------------------------------------------------------------------------- copies


def copy_dimensions(operand_type: OperandType, initial: Dims, given: Dims) -> Dims | None:
    """DOM-COPY-2: the dimensions a copyFrom writes, or None when they are not acceptable.

    Empty is allowed only when the buffer's dimensions are fully known; otherwise the
    given dimensions must be fully specified, of the right rank and compatible.
    """
    if not given:
        return tuple(initial) if is_fully_specified(operand_type, initial) else None
    if is_scalar_type(operand_type):
        return None
    if any(d <= 0 for d in given):
        return None
    combined = combine_dimensions(initial, given)
    return combined if combined is not None and is_fully_specified(operand_type, combined) else None


def buffer_initialized(initialized: bool) -> ErrorStatus:
    """DOM-STATE-2: copyTo reads only an initialized buffer."""
    return OK if initialized else FAILURE


def input_buffer_initialized(initialized: bool) -> ErrorStatus:
    """DOM-STATE-2: an execution reads only an initialized buffer."""
    return OK if initialized else FAILURE


def output_sufficient(needed: int, capacity: int) -> bool:
    """DOM-DYN-2: an output fits its shared-memory region."""
    return needed <= capacity


def region_bounds(offset: int, length: int) -> tuple[int, int]:
    """POOL-2: an argument's bytes are exactly [offset, offset + length) of its pool."""
    return offset, offset + length


def memory_size_matches(memory_size: int, expected: int) -> ErrorStatus:
    """DOM-COPY-1: the memory's size equals the buffer's."""
    return OK if memory_size == expected else INVALID


# --------------------------------------------------------------------------- the device's rule book


class Rules:
    """The rules above, as the one object a `ReferenceDevice` consults.

    Each attribute is the module function of the same name, unchanged: the reference calls
    ``rules.region_within_memory(...)`` where it checks POOL-5, and reading this module is
    reading what it checks.  A seeded-bug driver breaks one rule by giving the device an
    instance of a subclass that overrides that method (``ReferenceDevice(rules=...)``); the
    reference never replaces one itself.
    """

    combine_dimensions = staticmethod(combine_dimensions)
    memory_kind_known = staticmethod(memory_kind_known)
    constant_pool_kind_allowed = staticmethod(constant_pool_kind_allowed)
    operand_indexes_in_range = staticmethod(operand_indexes_in_range)
    io_lifetimes_match = staticmethod(io_lifetimes_match)
    operations_in_dataflow_order = staticmethod(operations_in_dataflow_order)
    operand_location_valid = staticmethod(operand_location_valid)
    subgraph_references_acyclic = staticmethod(subgraph_references_acyclic)
    operand_quantization_valid = staticmethod(operand_quantization_valid)
    scalar_has_no_dimensions = staticmethod(scalar_has_no_dimensions)
    argument_counts_match = staticmethod(argument_counts_match)
    no_value_argument_empty = staticmethod(no_value_argument_empty)
    pool_index_in_range = staticmethod(pool_index_in_range)
    region_within_memory = staticmethod(region_within_memory)
    argument_dimensions = staticmethod(argument_dimensions)
    input_fully_specified = staticmethod(input_fully_specified)
    length_matches_dimensions = staticmethod(length_matches_dimensions)
    token_location_zero = staticmethod(token_location_zero)
    token_positive = staticmethod(token_positive)
    role_allowed = staticmethod(role_allowed)
    token_output_exclusive = staticmethod(token_output_exclusive)
    allocation_has_models_and_roles = staticmethod(allocation_has_models_and_roles)
    role_probability_in_range = staticmethod(role_probability_in_range)
    index_in_range = staticmethod(index_in_range)
    role_key = staticmethod(role_key)
    roles_unique = staticmethod(roles_unique)
    role_operands_agree = staticmethod(role_operands_agree)
    role_dimensions = staticmethod(role_dimensions)
    scalar_role_without_dimensions = staticmethod(scalar_role_without_dimensions)
    descriptor_dimensions_valid = staticmethod(descriptor_dimensions_valid)
    copy_dimensions = staticmethod(copy_dimensions)
    buffer_initialized = staticmethod(buffer_initialized)
    input_buffer_initialized = staticmethod(input_buffer_initialized)
    output_sufficient = staticmethod(output_sufficient)
    region_bounds = staticmethod(region_bounds)
    memory_size_matches = staticmethod(memory_size_matches)
