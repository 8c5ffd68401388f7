"""Shapes of custom-call operands and outputs: array leaves and (nested) tuples.

Values mirror shapes: a numpy array for a leaf, a tuple of values for a tuple.  Leaves
are always listed in pre-order, the order XLA flattens them in (SPEC CC-3).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

#: The dtypes of the leaves the suites draw most: those every target's numpy reference handles.
DTYPES = ("float32", "float64", "int32", "uint8")
#: Every dtype a leaf may have: the element types of XLA's custom-call conventions that numpy
#: holds (PRED, S8..S64, U8..U64, F16..F64; BF16 and the complex types cross no declaration).
CONVENTION_DTYPES = DTYPES + ("bool", "int8", "int16", "int64", "uint16", "uint32", "uint64", "float16")


@dataclass(frozen=True)
class Leaf:
    dtype: str
    dims: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return math.prod(self.dims) * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.dims))}]"


@dataclass(frozen=True)
class TupleShape:
    elements: tuple[Shape, ...]

    def __str__(self) -> str:
        return f"({', '.join(map(str, self.elements))})"


Shape = Union[Leaf, TupleShape]


def leaves(shape: Shape) -> Iterator[tuple[tuple[int, ...], Leaf]]:
    """(path, leaf) for every leaf of ``shape`` in pre-order; the path indexes tuple elements."""

    def walk(node: Shape, path: tuple[int, ...]):
        if isinstance(node, Leaf):
            yield path, node
        else:
            for i, element in enumerate(node.elements):
                yield from walk(element, (*path, i))

    return walk(shape, ())


def depth(shape: Shape) -> int:
    return 0 if isinstance(shape, Leaf) else 1 + max((depth(e) for e in shape.elements), default=0)


def leaf_values(value: Any) -> list[Any]:
    """The leaves of a value in pre-order."""
    if isinstance(value, tuple):
        return [leaf for element in value for leaf in leaf_values(element)]
    return [value]


def describe_path(prefix: str, path: tuple[int, ...]) -> str:
    return prefix + "".join(f"[{i}]" for i in path)
