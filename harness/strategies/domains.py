"""Memory-domain building blocks: small models to allocate for, requests that use tokens,
and generated role sets (valid and invalid)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import event
from hypothesis import strategies as st

from harness.judging.builders import ModelBuilder
from harness.api.hal import (
    BufferDesc,
    BufferRole,
    Capabilities,
    DataLocation,
    OperandType,
    OperationType,
    RequestArgument,
    numpy_dtype,
    operand_byte_size,
)
from harness.judging.scenario import MemorySpec, Scenario, TokenRef

from .models import family_types
from .values import BOOLEANS, QUANT_TYPES, integers, operand_types, quantization, sampled

DOMAIN_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_QUANT8_ASYMM)
#: The types NNAPI's ADD, MUL and SUB also take (HAL 1.3), for a driver that declares none of those:
#: without them its memory domains would go unchecked.
FALLBACK_DOMAIN_TYPES = (OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_INT32)
#: The operations the memory-domain models are made of, in order of preference.
BINARY_OPS = (OperationType.ADD, OperationType.MUL, OperationType.SUB)
#: The quantization of a quantized flavour picked without drawing.
FIXED_QUANT = (0.5, 10)


@dataclass(frozen=True)
class Flavor:
    """What the memory-domain models of a test are made of: one binary operation and one
    operand type the driver declares (SPEC CHOICE-5: scenarios stay inside the declarations)."""

    op: OperationType
    type: OperandType
    quant: tuple[float, int] = (0.0, 0)

    def model(self, dims: Sequence[int], *, outputs: int = 1, scalar_input: bool = False,
              type: OperandType | None = None, quant: tuple[float, int] | None = None) -> Scenario:
        return binary_model(type or self.type, dims, self.quant if quant is None else quant, self.op,
                            outputs=outputs, scalar_input=scalar_input)


def identity_operand(flavor: Flavor, shape: Sequence[int]) -> np.ndarray:
    """The second operand that leaves the first unchanged under ``flavor``'s operation (0 for ADD
    and SUB, 1 for MUL), stored in the flavour's type."""
    real = 1.0 if flavor.op == OperationType.MUL else 0.0
    scale, zero_point = flavor.quant
    return np.full(tuple(shape), real / scale + zero_point if scale else real, numpy_dtype(flavor.type))


def domain_types(caps: Capabilities) -> tuple[OperandType, ...]:
    """The declared types the memory-domain models are made of: of `DOMAIN_TYPES`, or else of
    `FALLBACK_DOMAIN_TYPES` (so a driver that declares one of the first has the same models
    whatever else it declares)."""
    declared = tuple(t for t in DOMAIN_TYPES if t in caps.operand_types)
    return declared or tuple(t for t in FALLBACK_DOMAIN_TYPES if t in caps.operand_types)


def domain_operations(caps: Capabilities) -> tuple[OperationType, ...]:
    """The declared binary operations the memory-domain models can be made of: none unless their
    element-wise models can be built on a memory-domain type, companion types included
    (`models.family_types`: the INT32 scalar of the fused activation; CHOICE-5)."""
    if not family_types("elementwise", caps, domain_types(caps)):
        return ()
    return tuple(o for o in BINARY_OPS if o in caps.operations)


def declared_flavor(caps: Capabilities) -> Flavor | None:
    """The first declared binary operation and memory-domain type, or None when nothing fits."""
    op = next(iter(domain_operations(caps)), None)
    type = next(iter(domain_types(caps)), None)
    if op is None or type is None:
        return None
    return Flavor(op, type, FIXED_QUANT if type in QUANT_TYPES else (0.0, 0))


@dataclass(frozen=True)
class TokenUse:
    """A request argument served by a named buffer (with optional request dimensions)."""

    buffer: str
    dimensions: tuple[int, ...] = ()
    location: DataLocation = DataLocation()
    #: The token in a pool slot of this argument's own, though an earlier argument's slot names
    #: it already: DOM-ROLE-3's "the same buffer" is the same token, in one slot or several.
    own_slot: bool = False


def binary_model(type: OperandType, dims: Sequence[int], quant=(0.0, 0), op=OperationType.ADD,
                 *, outputs: int = 1, scalar_input: bool = False) -> Scenario:
    """``out = op(a, b)`` (and ``out1 = MUL(a, b)`` with ``outputs=2``) as a model-only scenario."""
    return _binary_model(type, tuple(dims), tuple(quant), op, outputs, scalar_input)


@functools.lru_cache(maxsize=1024, typed=True)
def _binary_model(type: OperandType, dims: tuple[int, ...], quant: tuple[float, int], op: OperationType,
                  outputs: int, scalar_input: bool) -> Scenario:
    # One Scenario per distinct model (it is frozen data): the memory-domain tests build the same
    # few small models in nearly every example.
    b = ModelBuilder()
    x = b.input(type, dims, *quant)
    y = b.input(type, dims, *quant)
    act = b.input(OperandType.INT32) if scalar_input else b.scalar(0)
    b.operation(op, [x, y, act], type, dims, *quant)
    if outputs == 2:  # the same operation again: a second output of the declared operation
        b.operation(op, [y, x, b.scalar(0)], type, dims, *quant)
    label = f"{op.name} {type.name} {tuple(dims)}{' scale=%g zp=%d' % quant if quant[0] else ''}"
    return Scenario(b.subgraph(), bytes(b.values), notes=(label,))


def reshape_model(type: OperandType = OperandType.TENSOR_FLOAT32, quant: tuple[float, int] = (0.0, 0)) -> Scenario:
    """``out = RESHAPE(data, shape)``: its output shape comes from the shape input's values."""
    b = ModelBuilder()
    data = b.input(type, (0,), *quant)
    shape = b.input(OperandType.TENSOR_INT32, (0,))
    b.operation(OperationType.RESHAPE, [data, shape], type, (), *quant)
    return Scenario(b.subgraph(), bytes(b.values), notes=(f"RESHAPE {type.name}",))


def dynamic_producer(caps: Capabilities, flavor: Flavor) -> Scenario:
    """A model whose output shape is decided at execution: RESHAPE where the driver declares it,
    otherwise the flavour's operation on inputs of unknown shape (the request gives the shape)."""
    if OperationType.RESHAPE in caps.operations and family_types("reshape", caps, (flavor.type,)):  # its shape too
        return reshape_model(flavor.type, flavor.quant)
    return flavor.model((0, 0))


def request(model: Scenario, inputs: Sequence[np.ndarray | TokenUse], outputs: Sequence[int | TokenUse],
            label: str = "") -> Scenario:
    """A request on ``model``: arrays go into one ashmem pool, output capacities into another,
    and each named buffer becomes a token pool."""
    operands = model.subgraph.operands
    pools: list[MemorySpec | TokenRef] = []
    token_pools: dict[str, int] = {}

    def token_argument(use: TokenUse) -> RequestArgument:
        if use.buffer not in token_pools or use.own_slot:
            token_pools[use.buffer] = len(pools)
            pools.append(TokenRef(use.buffer))
        location = DataLocation(token_pools[use.buffer], use.location.offset, use.location.length, use.location.padding)
        return RequestArgument(False, location, use.dimensions)

    data, in_args = bytearray(), []
    in_pool = len(pools)
    pools.append(MemorySpec("ashmem", b""))  # filled below
    for value, index in zip(inputs, model.subgraph.input_indexes):
        if isinstance(value, TokenUse):
            in_args.append(token_argument(value))
            continue
        raw = np.ascontiguousarray(value, dtype=numpy_dtype(operands[index].type)).tobytes()
        data.extend(b"\0" * (-len(data) % 8))
        in_args.append(RequestArgument(False, DataLocation(in_pool, len(data), len(raw)), tuple(np.shape(value))))
        data.extend(raw)
    out_pool = len(pools)
    pools.append(MemorySpec("ashmem", b""))
    out_size, out_args = 0, []
    for capacity in outputs:
        if isinstance(capacity, TokenUse):
            out_args.append(token_argument(capacity))
            continue
        out_size += -out_size % 8
        out_args.append(RequestArgument(False, DataLocation(out_pool, out_size, capacity)))
        out_size += capacity
    pools[in_pool] = MemorySpec("ashmem", bytes(data) or b"\0")
    pools[out_pool] = MemorySpec("ashmem", b"\xa5" * max(out_size, 1))
    # the model's own fields (a relaxed model, say) are kept; the request is what this adds
    return replace(model, inputs=tuple(in_args), outputs=tuple(out_args), request_pools=tuple(pools),
                   notes=(label or model.notes[0],))


def values_for(type: OperandType, shape: Sequence[int], seed: int = 0) -> np.ndarray:
    """Small values of ``type`` in ``shape``, the same for the same ``seed`` (read-only)."""
    return _values_for(type, tuple(shape), seed)


@functools.lru_cache(maxsize=1024, typed=True)
def _values_for(type: OperandType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    # Kept per (type, shape, seed): a numpy generator costs more to make than these few values.
    rng = np.random.default_rng(seed)
    low, high = (0, 100) if type in QUANT_TYPES else (-4, 5)
    values = rng.integers(low, high, size=shape).astype(numpy_dtype(type))
    values.setflags(write=False)
    return values


def nbytes(type: OperandType, shape: Sequence[int]) -> int:
    return operand_byte_size(type, tuple(shape))


# --------------------------------------------------------------------------- strategies


@functools.lru_cache(maxsize=64)
def domain_flavors(caps: Capabilities, quantized: bool = False) -> st.SearchStrategy[Flavor]:
    """A declared binary operation and a declared memory-domain operand type (with its quantization)."""
    types = [t for t in domain_types(caps) if t in QUANT_TYPES] if quantized else domain_types(caps)
    ops = domain_operations(caps)
    return _flavors(operand_types(types, caps.operand_types), sampled(ops) if ops else st.just(OperationType.ADD))


@st.composite
def _flavors(draw, types: st.SearchStrategy[OperandType], ops: st.SearchStrategy[OperationType]) -> Flavor:
    type = draw(types, label="role operand type")
    op = draw(ops, label="operation")
    # one quantization for both inputs and the output: MUL's needs a scale below 1 (NNAPI)
    return Flavor(op, type, draw(quantization(type, scale_below=1.0 if op == OperationType.MUL else float("inf")),
                                 label="quantization"))


_MODEL_SHAPES = st.sampled_from([(2, 2), (2, 3), (0, 2), (), (2, 2, 1), (4,)])
_ODD_MODELS = st.sampled_from(["none", "other-type", "other-scale", "other-zero-point", "scalar-input"])


@st.composite
def role_models(draw, caps: Capabilities) -> list[Scenario]:
    """A handful of models to allocate for: the same flavour at various shapes, and sometimes
    one that differs in type, scale or zeroPoint (conflicting roles) or has a scalar input."""
    flavor = draw(domain_flavors(caps))
    type, quant = flavor.type, flavor.quant
    models = [flavor.model(draw(_MODEL_SHAPES, label=f"model {i} dims"))
              for i in range(draw(integers(1, 3), label="model count"))]
    variant = draw(_ODD_MODELS, label="odd model")
    event(f"odd model: {variant}")
    if variant == "other-type":
        other = next((t for t in domain_types(caps) if t != type), None)
        if other is not None:
            models.append(flavor.model((2, 2), type=other, quant=FIXED_QUANT if other in QUANT_TYPES else (0.0, 0)))
    elif variant in ("other-scale", "other-zero-point") and type in QUANT_TYPES:
        scale, zero_point = quant
        # another scale below the flavour's: still one a MUL may keep (NNAPI: output scale > s * s)
        models.append(flavor.model((2, 2), quant=(scale / 2, zero_point) if variant == "other-scale" else (scale, (zero_point + 1) % 128)))
    elif variant == "scalar-input":
        models.append(flavor.model((2, 2), scalar_input=True))
    return models


_DESCRIPTOR_DIMS = st.sampled_from([(), (2, 2), (2, 3), (0, 2), (2, 0), (2, 2, 1)])
_PROBABILITIES = st.one_of(st.just(1.0), st.just(0.5), st.sampled_from([0.0, -0.5, 10.0, 1.0000001]))


@st.composite
def role_sets(draw, model_count: int, io_counts: Sequence[tuple[int, int]]) -> tuple[BufferDesc, list[int], list[BufferRole], list[BufferRole]]:
    """(descriptor, which prepared models to list (repeats allowed), input roles, output roles).

    Mostly valid, with every DOM-ALLOC-1/2 mistake reachable: empty lists, indexes out of
    range, probabilities out of (0, 1], duplicated roles, conflicting descriptor dimensions."""
    listed = draw(st.lists(integers(0, model_count - 1), min_size=0, max_size=3), label="listed models")
    if not listed and draw(BOOLEANS, label="never empty"):
        listed = [0]

    def roles(direction: int):
        def one(_):
            model_index = draw(integers(0, len(listed)), label="model index") if listed else 0
            io_count = io_counts[listed[model_index]][direction] if model_index < len(listed) else 1
            return BufferRole(model_index, draw(integers(0, io_count), label="io index"), draw(_PROBABILITIES, label="probability"))
        return [one(i) for i in range(draw(integers(0, 2), label="role count"))]

    inputs, outputs = roles(0), roles(1)
    if inputs and draw(BOOLEANS, label="repeat a role"):
        inputs.append(inputs[0])
    desc = BufferDesc(draw(_DESCRIPTOR_DIMS, label="descriptor dims"))
    return desc, listed, inputs, outputs
