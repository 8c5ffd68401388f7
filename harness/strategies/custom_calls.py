"""Strategies for custom calls: leaf shapes, tuple nestings (depth <= 3), operand values, opaque bytes.

Two reaches, each a swarm switch (`harness.strategies.swarm`): leaves of every dtype XLA's
host and device conventions carry (`CONVENTION_DTYPES`: a pointer per leaf, whatever its
element type), and
operand shapes at every limit the target's `OperandShapes` declares at once (the most operands,
every branch nested to the deepest, every side the longest), where fixed-size tables break.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Literal

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.api.custom_calls import CallCase, CaseSpace, Choice, Integers, Opaque, OperandShapes, Parameter, Text
from harness.api.errors import calls_into_driver
from harness.api.shapes import CONVENTION_DTYPES, DTYPES, Leaf, Shape, TupleShape, leaves

from .swarm import switch

#: Elements a tuple holds at the declared limits: never one, so that every level widens the tree.
_LIMIT_WIDTH = (2, 3)
#: Examples per switch: on in about one example of this many (cheap in ci, often met nightly).
DTYPES_ONE_IN = 16
LIMITS_ONE_IN = 48


def leaf_shapes(dtypes=DTYPES, max_dims: int = 2, max_side: int = 5) -> st.SearchStrategy[Leaf]:
    return st.builds(Leaf, st.sampled_from(dtypes), st.lists(st.integers(0, max_side), max_size=max_dims).map(tuple))


def shapes(max_depth: int = 3, leaf=None) -> st.SearchStrategy[Shape]:
    """A leaf, or a tuple whose elements are shapes, nested at most ``max_depth`` deep."""
    leaf = leaf if leaf is not None else leaf_shapes()
    if max_depth == 0:
        return leaf
    return st.one_of(leaf, st.lists(shapes(max_depth - 1, leaf), max_size=3).map(lambda e: TupleShape(tuple(e))))


#: Leaves up to this many elements are decoded from bytes; larger ones (width tests, past 65535
#: elements) would make every example, and its smallest form, that many bytes.
_DECODED_UP_TO = 1024


_FLOAT_WIDTHS: dict[str, Literal[16, 32, 64]] = {"float16": 16, "float32": 32, "float64": 64}


@functools.lru_cache(maxsize=16)
def _elements(dtype: str) -> st.SearchStrategy:
    if dtype in _FLOAT_WIDTHS:
        return st.floats(width=_FLOAT_WIDTHS[dtype], allow_nan=False, allow_infinity=False)
    if dtype == "bool":
        return st.booleans()
    if dtype == "int32":
        return st.integers(-(2**30), 2**30)  # sums stay in range: signed overflow is undefined in C
    return st.integers(0, 255)


# Strategies here are cached by their (frozen, hashable) arguments: they are asked for inside
# every example, and a new strategy object costs hypothesis more than drawing from it.
@functools.lru_cache(maxsize=1024)
def values_for(shape: Shape) -> st.SearchStrategy:
    """A value of ``shape``: an array per leaf, tuples nested like the shape.

    A leaf is one draw of bytes decoded per element (a draw costs hypothesis about 20 µs
    whatever its size): a class byte, then the element's own bytes (see `_decode_leaf`)."""
    if isinstance(shape, Leaf):
        dtype = np.dtype(shape.dtype)
        count = int(np.prod(shape.dims, dtype=np.int64))
        if count > _DECODED_UP_TO:  # large leaves: a few drawn elements and a fill, as hypothesis does
            return hnp.arrays(dtype, shape.dims, elements=_elements(shape.dtype))
        size = count * (dtype.itemsize + (dtype.itemsize > 1))
        return st.binary(min_size=size, max_size=size).map(functools.partial(_decode_leaf, shape.dtype, shape.dims))
    return st.tuples(*(values_for(element) for element in shape.elements))


@functools.lru_cache(maxsize=8)
def _special_floats(dtype: np.dtype) -> np.ndarray:
    """Made once per dtype (every decoded float leaf looks them up); read-only, as it is shared."""
    info = np.finfo(dtype)
    specials = np.array([0.0, -0.0, 1.0, -1.0, 0.5, info.smallest_subnormal, -info.smallest_subnormal,
                         info.smallest_normal, info.max, -info.max], dtype)
    specials.flags.writeable = False
    return specials


def _decode_leaf(dtype_name: str, dims: tuple[int, ...], encoded: bytes) -> np.ndarray:
    """Elements by class: small exact values, raw bit patterns over the whole finite range
    (subnormals included), and the special values (signed zeros, extremes) bugs hide behind.
    All-zero bytes decode to zeros, where shrinking goes.  int32 stays within 2**30 (sums stay
    in range: signed overflow is undefined in C); one-byte types are the bytes themselves (a bool
    their lowest bit), other integer types small values or any bit pattern."""
    dtype = np.dtype(dtype_name)
    if dtype == np.bool_:  # a PRED byte is 0 or 1; any other byte is no bool
        return (np.frombuffer(encoded, np.uint8) & 1).astype(dtype).reshape(dims)
    if dtype.itemsize == 1:
        return np.frombuffer(encoded, dtype).reshape(dims).copy()
    record = np.frombuffer(encoded, np.dtype([("kind", "u1"), ("bits", f"<u{dtype.itemsize}")]))
    kind, bits = record["kind"] % 3, record["bits"]
    k = (bits % 2001).astype(np.int64)
    small = np.where(k <= 1000, k, 1000 - k)  # 0, 1, 2, ... 1000, -1, ... -1000
    if dtype == np.int32:
        whole = bits.view(np.int32) >> 1  # [-2**30, 2**30)
        return np.where(kind == 1, whole, small).astype(dtype).reshape(dims)
    if dtype.kind in "iu":  # other integer leaves: small values, or any bit pattern of their width
        small = small if dtype.kind == "i" else k
        return np.where(kind == 1, bits.view(dtype), small.astype(dtype)).astype(dtype).reshape(dims)
    exponent = {2: 0x7C00, 4: 0x7F800000, 8: 0x7FF0000000000000}[dtype.itemsize]
    finite = np.where((bits & exponent) == exponent, bits & ~np.array(exponent, bits.dtype), bits).view(dtype)
    specials = _special_floats(dtype)
    values = np.select([kind == 0, kind == 1], [small / 8, finite], specials[bits % len(specials)])
    return values.astype(dtype).reshape(dims)


#: Operands whose values would take more bytes of hypothesis' choices than this are drawn as a
#: seed for `fixed_values` (shapes at the declared limits: hypothesis' buffer is 8 KiB an example).
_SEARCHED_UP_TO = 4096


def _encoded_size(shape: Shape) -> int:
    return sum(math.prod(leaf.dims) * (np.dtype(leaf.dtype).itemsize + 1) for _, leaf in leaves(shape))


@functools.lru_cache(maxsize=1024)
def operand_values(operands: tuple[Shape, ...]) -> st.SearchStrategy[tuple]:
    """Values of ``operands``: searched (`values_for`), or for operands too large to search (at
    their declared limits) drawn once from a seeded generator (`fixed_values`), the seed drawn."""
    if sum(_encoded_size(shape) for shape in operands) > _SEARCHED_UP_TO:
        return st.integers(0, 2**16).map(lambda seed: tuple(fixed_values(shape, seed + number)
                                                            for number, shape in enumerate(operands)))
    return st.tuples(*(values_for(shape) for shape in operands))


def opaque_bytes(max_size: int = 4096) -> st.SearchStrategy[bytes]:
    """Empty, with embedded NULs, large: the bytes a driver must pass through exactly (CC-4)."""
    return st.one_of(
        st.just(b""),
        st.binary(max_size=64),
        st.binary(min_size=1, max_size=32).map(lambda b: b"\0" + b + b"\0" + b),
        st.integers(1, max_size).map(lambda n: bytes(range(256)) * (n // 256) + b"\0" * (n % 256)),
    )


def count_leaves(shape: Shape) -> int:
    return sum(1 for _ in leaves(shape))


@functools.lru_cache(maxsize=256)
def _parameter(parameter: Parameter) -> st.SearchStrategy:
    if isinstance(parameter, Choice):
        return st.sampled_from(parameter.values)
    if isinstance(parameter, Integers):
        return st.one_of(*(st.integers(low, high) for low, high in parameter.ranges))
    if isinstance(parameter, Opaque):
        return opaque_bytes(parameter.max_size)
    if isinstance(parameter, Text):
        return st.one_of(*(st.text(min_size=low, max_size=high) for low, high in parameter.lengths))
    assert isinstance(parameter, OperandShapes)
    low, high = parameter.count
    shape = shapes(max_depth=parameter.max_depth, leaf=leaf_shapes(max_side=parameter.max_side))
    return st.lists(shape, min_size=low, max_size=high).map(tuple)


@functools.lru_cache(maxsize=64)
def limit_shapes(max_depth: int, max_side: int, dtypes: tuple[str, ...] = DTYPES) -> st.SearchStrategy[Shape]:
    """A shape at the declared limits: a tuple nested ``max_depth`` deep on every branch, each tuple
    of two or three elements, and leaves of rank 1 or 2 whose every side is ``max_side`` (a leaf
    alone when ``max_depth`` is 0)."""
    leaf = st.builds(Leaf, st.sampled_from(dtypes), st.integers(1, 2).map(lambda rank: (max_side,) * rank))
    if max_depth == 0:
        return leaf
    element = limit_shapes(max_depth - 1, max_side, dtypes)
    return st.lists(element, min_size=_LIMIT_WIDTH[0], max_size=_LIMIT_WIDTH[1]).map(lambda e: TupleShape(tuple(e)))


@st.composite
def reaching_operand_shapes(draw, parameter: OperandShapes) -> tuple[Shape, ...]:
    """The operand shapes of ``parameter`` as `_parameter` draws them, with two swarm switches:
    leaves of every dtype the conventions carry (`CONVENTION_DTYPES`), and every operand at the
    declared limits (`limit_shapes`, as many operands as ``count`` allows)."""
    dtypes = CONVENTION_DTYPES if switch(draw, "custom-call leaves of every convention dtype", DTYPES_ONE_IN) else DTYPES
    low, high = parameter.count
    if switch(draw, "custom-call operands at their declared limits", LIMITS_ONE_IN):
        return tuple(draw(st.lists(limit_shapes(parameter.max_depth, parameter.max_side, dtypes),
                                   min_size=high, max_size=high)))
    if dtypes == DTYPES:
        return draw(_parameter(parameter))
    shape = shapes(max_depth=parameter.max_depth, leaf=leaf_shapes(dtypes, max_side=parameter.max_side))
    return tuple(draw(st.lists(shape, min_size=low, max_size=high)))


@st.composite
def call_cases(draw, space: CaseSpace, reaching: bool = False) -> CallCase:
    """A case of ``space``: one labelled draw per parameter, then the target's own ``build``.
    ``reaching``: operand shapes as `reaching_operand_shapes` draws them (targets called by the
    conventions' own runner; XLA's typed FFI under jax takes fewer dtypes)."""
    values = {name: draw(reaching_operand_shapes(parameter) if reaching and isinstance(parameter, OperandShapes)
                         else _parameter(parameter), label=name)
              for name, parameter in space.parameters.items()}
    return calls_into_driver(space.build)(**values)  # the plugin's case builder: its code


def _simplest(parameter: Parameter):
    """The simplest value of a parameter that is not the one a fixed case is about."""
    if isinstance(parameter, Integers):
        return min(low for low, _ in parameter.ranges)
    if isinstance(parameter, Choice):
        return parameter.values[0]
    if isinstance(parameter, Opaque):
        return b""
    assert isinstance(parameter, Text)
    return "x" * min(low for low, _ in parameter.lengths)


def nesting_cases(space: CaseSpace) -> list[CallCase]:
    """Operand tuples with leaves and nested tuples side by side, in both orders, at the top level
    and inside a tuple: where flattening-order bugs live, and a few random draws of shapes often
    miss (a draw gives a leaf or a tuple, rarely both beside each other).  Each leaf a different
    dtype and size.  Empty for spaces without operand shapes."""
    shaped = [name for name, parameter in space.parameters.items() if isinstance(parameter, OperandShapes)]
    if len(shaped) != 1:
        return []
    spec = space.parameters[shaped[0]]
    assert isinstance(spec, OperandShapes)
    side = max(1, min(spec.max_side, 3))
    kinds = itertools.cycle([("float32", (side,)), ("int32", (side, 1)), ("uint8", (side,)), ("float64", ())])

    def leaf() -> Leaf:
        dtype, dims = next(kinds)
        return Leaf(dtype, dims)

    def pair() -> Shape:  # a tuple where the depth allows one, else a leaf
        return TupleShape((leaf(), leaf())) if spec.max_depth >= 2 else leaf()

    nestings: list[tuple[Shape, ...]] = []
    if spec.max_depth >= 1:
        nestings += [(TupleShape((leaf(), pair(), leaf())),), (TupleShape((pair(), leaf())),)]
        nestings.append((leaf(), TupleShape((leaf(), leaf())), leaf()))
    low, high = spec.count
    fixed = {name: _simplest(parameter) for name, parameter in space.parameters.items() if name != shaped[0]}
    build = calls_into_driver(space.build)  # the plugin's case builder: its code
    return [build(**fixed, **{shaped[0]: operands}) for operands in nestings if low <= len(operands) <= high]


def range_end_cases(space: CaseSpace, limit: int = 64) -> list[CallCase]:
    """The cases at both ends of every declared `Integers` range, for each `Choice` value: where
    width bugs live (a count kept in 16 bits fails only past 65535), and where a few random draws
    rarely land.  Empty for spaces with no ranges; other parameters take their simplest value."""
    parameters = space.parameters.values()
    if not any(isinstance(p, Integers) for p in parameters) or any(isinstance(p, OperandShapes) for p in parameters):
        return []
    fixed: dict[str, list] = {}
    for name, parameter in space.parameters.items():
        if isinstance(parameter, Integers):
            fixed[name] = sorted({end for low, high in parameter.ranges for end in (low, high)})
        elif isinstance(parameter, Choice):
            fixed[name] = list(parameter.values)
        elif isinstance(parameter, (Opaque, Text)):
            fixed[name] = [_simplest(parameter)]
    names = list(fixed)
    build = calls_into_driver(space.build)  # the plugin's case builder: its code
    return [build(**dict(zip(names, combination))) for combination in itertools.islice(
        itertools.product(*(fixed[name] for name in names)), limit)]


def fixed_values(shape: Shape, seed: int = 0) -> tuple:
    """Operand values drawn once from a seeded generator (no search): for cases too large to shrink."""
    rng = np.random.default_rng(seed)

    def one(leaf: Shape):
        if not isinstance(leaf, Leaf):
            return tuple(one(element) for element in leaf.elements)
        dtype = np.dtype(leaf.dtype)
        if dtype.kind == "f":
            return rng.standard_normal(leaf.dims).astype(dtype)
        if dtype == np.int32:
            return rng.integers(-(2**30), 2**30, leaf.dims, dtype=np.int32)  # sums stay in range (see _elements)
        return rng.integers(0, 256, leaf.dims).astype(dtype)
    return one(shape)
