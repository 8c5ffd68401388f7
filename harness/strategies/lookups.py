"""Models of the lookup operations: EMBEDDING_LOOKUP, HASHTABLE_LOOKUP and LSH_PROJECTION.

One family per operation (`FAMILIES`); each model is one operation on types NNAPI gives it and the
driver declares.  Values have rank 2 to 4, so that a row is more than its last axis; lookups
repeat rows and come in any order.  HASHTABLE_LOOKUP's keys are sorted and distinct (NNAPI: a
map, sorted), and about half its lookups miss, whose rows must be zero bytes.  LSH_PROJECTION draws
its seeds from [-8, 8), items of any type NNAPI allows and 1 to 4 bits for 1 to 4 functions, its
weights given or omitted (a NO_VALUE operand), in each of its three projection types; its
output is bits of fingerprints, so a value is right or wholly wrong, never close.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from harness.api.hal import Capabilities, OperandType, OperationType

from .models import ModelCase, _Case, _Choices, _narrowed_to, _operation_and_type_of, _start
from .values import FLOAT_TYPES, QUANT_TYPES, arrays, usable_types

Op = OperationType
F32, I32, QU8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_QUANT8_ASYMM
INT32 = OperandType.INT32
#: NeuralNetworks.h's value (EMBEDDING_LOOKUP, HASHTABLE_LOOKUP) and item (LSH_PROJECTION) types.
OPERATION_TYPES: dict[OperationType, tuple[OperandType, ...]] = {
    Op.EMBEDDING_LOOKUP: FLOAT_TYPES + QUANT_TYPES + (I32,),
    Op.HASHTABLE_LOOKUP: (F32, I32, QU8),
    Op.LSH_PROJECTION: FLOAT_TYPES + (I32, QU8),
}
FAMILIES: dict[str, tuple[OperationType, ...]] = {
    "embedding_lookup": (Op.EMBEDDING_LOOKUP,),
    "hashtable_lookup": (Op.HASHTABLE_LOOKUP,),
    "lsh_projection": (Op.LSH_PROJECTION,),
}
#: LSH_PROJECTION's projection types (NeuralNetworks.h): SPARSE_DEPRECATED, DENSE, SPARSE.
_PROJECTIONS = (1, 2, 3)


def _companions(op: OperationType) -> frozenset[OperandType]:
    """The operand types a model of ``op`` needs besides its data type: the lookups and keys
    (TENSOR_INT32), HASHTABLE_LOOKUP's hits (TENSOR_QUANT8_ASYMM), LSH_PROJECTION's type (INT32),
    output (TENSOR_INT32) and seeds (a float type, `_seed_types`)."""
    if op == Op.HASHTABLE_LOOKUP:
        return frozenset({I32, QU8})
    if op == Op.LSH_PROJECTION:
        return frozenset({I32, INT32})
    return frozenset({I32})


def _seed_types(caps: Capabilities) -> tuple[OperandType, ...]:
    return usable_types(FLOAT_TYPES, caps.operand_types)


@functools.lru_cache(maxsize=1024)
def operation_types(caps: Capabilities, op: OperationType) -> tuple[OperandType, ...]:
    """The data types a model of ``op`` can have for this driver: NNAPI's, declared, with companions declared."""
    if op == Op.LSH_PROJECTION and not _seed_types(caps):
        return ()
    declared = caps.types_of(op)
    return tuple(t for t in usable_types(OPERATION_TYPES[op], declared) if _companions(op) <= declared)


def operations(caps: Capabilities, family: str) -> tuple[OperationType, ...]:
    """The operations of ``family`` a model can be built of for this driver (declared, on a type it declares)."""
    return tuple(op for op in FAMILIES[family] if op in caps.operations and operation_types(caps, op))


def _operation_and_type(c: _Choices, caps: Capabilities, family: str) -> tuple[OperationType, OperandType]:
    return _operation_and_type_of(c, operations(caps, family), functools.partial(operation_types, caps))


def _given(c: _Choices, label: str) -> str:
    return c.choice(("input", "copy", "reference"), f"{label} given as")


@st.composite
def embedding_lookup_models(draw, caps: Capabilities) -> ModelCase:
    """EMBEDDING_LOOKUP of 1 to 6 rows (repeated, in any order) of values of rank 2 to 4."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "embedding_lookup")
    shape = c.shape("values", min_rank=2, max_rank=4, max_side=4)
    picks = np.asarray([c.integer(0, shape[0] - 1, f"lookup {i}") for i in range(c.integer(1, 6, "lookups"))], np.int32)
    case = _Case(c)
    quant = c.quantization(type, "values")
    lookups = case.operand(I32, picks, how=_given(c, "lookups"), label="lookups")
    values = case.operand(type, draw(arrays(type, shape), label="values"), quant, how=_given(c, "values"), label="values")
    out = (picks.size, *shape[1:])
    case.output(op, [lookups, values], type, out, quant)
    return case.done([out], f"EMBEDDING_LOOKUP {type.name} of {len(shape)}-D values")


@st.composite
def hashtable_lookup_models(draw, caps: Capabilities) -> ModelCase:
    """HASHTABLE_LOOKUP among 1 to 5 sorted distinct keys of [-20, 20], by lookups that hit or miss;
    outputs: the rows (zero bytes for a miss) and the hits."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "hashtable_lookup")
    shape = c.shape("values", min_rank=2, max_rank=4, max_side=4)
    keys = np.asarray(sorted(set(c.integer(-20, 20, f"key {i}") for i in range(shape[0]))), np.int32)
    shape = (keys.size, *shape[1:])
    wanted = [int(keys[c.integer(0, keys.size - 1, f"lookup {i} key")]) if c.boolean(f"lookup {i} hits")
              else c.integer(-25, 25, f"lookup {i} value") for i in range(c.integer(1, 6, "lookups"))]
    case = _Case(c)
    quant = c.quantization(type, "values")
    lookups = case.operand(I32, np.asarray(wanted, np.int32), how=_given(c, "lookups"), label="lookups")
    keys_at = case.operand(I32, keys, how=_given(c, "keys"), label="keys")
    values = case.operand(type, draw(arrays(type, shape), label="values"), quant, how=_given(c, "values"), label="values")
    out = (len(wanted), *shape[1:])
    outputs = [(type, c.declared(out, "output"), *quant), (QU8, c.declared((len(wanted),), "hits"), 1.0, 0)]
    case.b.operation_outputs(op, [lookups, keys_at, values], outputs)
    return case.done([out, (len(wanted),)], f"HASHTABLE_LOOKUP {type.name} of {len(shape)}-D values")


@st.composite
def lsh_projection_models(draw, caps: Capabilities) -> ModelCase:
    """LSH_PROJECTION of 1 to 3 items of rank 1 to 3 under 1 to 4 functions of 1 to 4 bits, its
    weights given or omitted, in each projection type."""
    c = _start(draw)
    op, type = _operation_and_type(c, caps, "lsh_projection")
    seed_type = c.choice(_seed_types(caps), "seed type")
    functions, bits = c.integer(1, 4, "functions"), c.integer(1, 4, "bits")
    items = c.shape("input", min_rank=1, max_rank=3, max_side=3)
    projection = c.choice(_PROJECTIONS, "projection type")
    case = _Case(c)
    seeds = case.operand(seed_type, draw(arrays(seed_type, (functions, bits)), label="seeds"), how=_given(c, "seeds"),
                         label="seeds")
    x = case.operand(type, draw(arrays(type, items), label="input"), c.quantization(type, "input"), label="input")
    if c.boolean("weights given"):
        weights = case.operand(seed_type, draw(arrays(seed_type, (items[0],)), label="weights"),
                               how=_given(c, "weights"), label="weights")
    else:
        weights = case.b.omitted(seed_type, (items[0],))
    out = (functions * bits,) if projection == 2 else (functions,)
    case.output(op, [seeds, x, weights, case.b.scalar(projection)], I32, out)
    return case.done([out], f"LSH_PROJECTION {type.name} type {projection}")


MAKERS: dict[str, Callable[[Capabilities], st.SearchStrategy[ModelCase]]] = {
    "embedding_lookup": embedding_lookup_models,
    "hashtable_lookup": hashtable_lookup_models,
    "lsh_projection": lsh_projection_models,
}


@functools.lru_cache(maxsize=256)
def single_operation_models(caps: Capabilities, op: OperationType) -> st.SearchStrategy[ModelCase]:
    """Models of ``op`` alone (of one of `FAMILIES`): the driver's declarations narrowed to it."""
    return _narrowed_to(op, FAMILIES, MAKERS, caps)
