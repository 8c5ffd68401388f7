"""Strategies for custom calls: leaf shapes, tuple nestings (depth <= 3), operand values, opaque bytes."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.api.custom_calls import CallCase, CaseSpace, Choice, Integers, Opaque, OperandShapes, Parameter, Text
from harness.api.shapes import DTYPES, Leaf, Shape, TupleShape, leaves


def leaf_shapes(dtypes=DTYPES, max_dims: int = 2, max_side: int = 5) -> st.SearchStrategy[Leaf]:
    return st.builds(Leaf, st.sampled_from(dtypes), st.lists(st.integers(0, max_side), max_size=max_dims).map(tuple))


def shapes(max_depth: int = 3, leaf=None) -> st.SearchStrategy[Shape]:
    """A leaf, or a tuple whose elements are shapes, nested at most ``max_depth`` deep."""
    leaf = leaf if leaf is not None else leaf_shapes()
    if max_depth == 0:
        return leaf
    return st.one_of(leaf, st.lists(shapes(max_depth - 1, leaf), max_size=3).map(lambda e: TupleShape(tuple(e))))


def _elements(dtype: str) -> st.SearchStrategy:
    if dtype.startswith("float"):
        return st.floats(width=32 if dtype == "float32" else 64, allow_nan=False, allow_infinity=False)
    if dtype == "int32":
        return st.integers(-(2**30), 2**30)  # sums stay in range: signed overflow is undefined in C
    return st.integers(0, 255)


@st.composite
def values_for(draw, shape: Shape):
    """A value of ``shape``: an array per leaf, tuples nested like the shape."""
    if isinstance(shape, Leaf):
        return draw(hnp.arrays(np.dtype(shape.dtype), shape.dims, elements=_elements(shape.dtype)), label=str(shape))
    return tuple(draw(values_for(element)) for element in shape.elements)


def operand_values(operands: tuple[Shape, ...]) -> st.SearchStrategy[tuple]:
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


@st.composite
def call_cases(draw, space: CaseSpace) -> CallCase:
    """A case of ``space``: one labelled draw per parameter, then the target's own ``build``."""
    values = {name: draw(_parameter(parameter), label=name) for name, parameter in space.parameters.items()}
    return space.build(**values)
