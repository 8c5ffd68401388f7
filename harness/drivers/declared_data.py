"""The values that cross between the harness and a plugin's declarations process, as JSON.

A declared target's case builder, numpy reference and failure message are the plugin's code, run
in a process of the plugin's own (`harness.drivers.declarations`).  What they take and give back
travels as JSON: plain scalars as themselves, and every other kind as a record of one tag:

    {"bytes": BASE64}                       bytes
    {"tuple": [...]}, {"list": [...]}       tuples and lists of values
    {"array": [DTYPE, [DIMS], BASE64]}      a numpy array (or scalar) of a plain numeric dtype
    {"leaf": [DTYPE, [DIMS]]}               a custom-call operand shape (`harness.api.shapes.Leaf`)
    {"tuple_shape": [SHAPE, ...]}           a tuple shape
    {"case": [[SHAPE, ...], SHAPE, BASE64]} a `CallCase`: operand shapes, output shape, opaque bytes

`decode` reads what the plugin's process sent as untrusted data: a tag outside this closed set, a
dtype outside `ARRAY_DTYPES`, an array whose bytes do not fill its shape, nesting past `MAX_DEPTH`
are each a `Refused` naming what was wrong.  Nothing is ever unpickled.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any

import numpy as np

from harness.api.custom_calls import CallCase
from harness.api.shapes import CONVENTION_DTYPES, Leaf, Shape, TupleShape

__all__ = ["ARRAY_DTYPES", "MAX_DEPTH", "Refused", "Unencodable", "decode", "decode_case", "encode"]

#: The dtypes an array may have: plain numbers (no objects, strings or structured records).
ARRAY_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                          "float16", "float32", "float64"})
MAX_DEPTH = 64
#: Elements of one array leaf: far past any case a target's space gives (its outputs are bytes in memory).
_MAX_ELEMENTS = 1 << 28


class Refused(ValueError):
    """What the plugin's process sent is not a value of the closed set."""


class Unencodable(TypeError):
    """A value of a kind the other side could not receive (the plugin declared or returned one)."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data; `Unencodable` for a kind outside the closed set."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes": _b64(bytes(value))}
    if isinstance(value, CallCase):
        return {"case": [[encode(s) for s in value.operands], encode(value.output), _b64(bytes(value.opaque))]}
    if isinstance(value, Leaf):
        return {"leaf": [str(value.dtype), [int(d) for d in value.dims]]}
    if isinstance(value, TupleShape):
        return {"tuple_shape": [encode(e) for e in value.elements]}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return {"list": [encode(v) for v in value]}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.ascontiguousarray(value)
        if array.dtype.name not in ARRAY_DTYPES:
            raise Unencodable(f"a numpy array of dtype {array.dtype} (allowed: {', '.join(sorted(ARRAY_DTYPES))})")
        return {"array": [array.dtype.name, list(array.shape), _b64(array.tobytes())]}
    raise Unencodable(f"a value of type {type(value).__name__}")


def _bytes(value: Any, where: str) -> bytes:
    if type(value) is not str:
        raise Refused(f"{where} is not base64 text")
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise Refused(f"{where} is not base64 text") from None


def _dims(value: Any, where: str) -> tuple[int, ...]:
    if type(value) is not list or len(value) > 32 or any(type(d) is not int or d < 0 for d in value):
        raise Refused(f"{where}: dimensions are not a list of at most 32 non-negative integers")
    return tuple(value)


def _shape(value: Any, depth: int) -> Shape:
    shape = decode(value, depth)
    if not isinstance(shape, (Leaf, TupleShape)):
        raise Refused("a shape is neither a leaf nor a tuple shape")
    return shape


def _array(fields: Any) -> np.ndarray:
    if type(fields) is not list or len(fields) != 3 or fields[0] not in ARRAY_DTYPES:
        raise Refused(f"an array is not [dtype, dims, bytes] with a dtype of {', '.join(sorted(ARRAY_DTYPES))}")
    dtype = np.dtype(fields[0])
    dims = _dims(fields[1], "an array")
    count = math.prod(dims)
    data = _bytes(fields[2], "an array's data")
    if count > _MAX_ELEMENTS or len(data) != count * dtype.itemsize:
        raise Refused(f"an array of {fields[0]}{list(dims)} came with {len(data)} bytes")
    return np.frombuffer(data, dtype).reshape(dims).copy()


def decode(value: Any, depth: int = 0) -> Any:
    """The value ``encode`` made of it, from data the plugin's process sent; `Refused` otherwise."""
    if depth > MAX_DEPTH:
        raise Refused(f"values nest deeper than {MAX_DEPTH}")
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is not dict or len(value) != 1:
        raise Refused("a value is neither a JSON scalar nor a record of one tag")
    (tag, fields), = value.items()
    if tag == "bytes":
        return _bytes(fields, "bytes")
    if tag in ("tuple", "list", "tuple_shape"):
        if type(fields) is not list:
            raise Refused(f"a {tag} is not a list")
        if tag == "tuple_shape":
            return TupleShape(tuple(_shape(v, depth + 1) for v in fields))
        items = [decode(v, depth + 1) for v in fields]
        return tuple(items) if tag == "tuple" else items
    if tag == "array":
        return _array(fields)
    if tag == "leaf":
        if type(fields) is not list or len(fields) != 2 or fields[0] not in CONVENTION_DTYPES:
            raise Refused(f"a leaf is not [dtype, dims] with a dtype of {', '.join(CONVENTION_DTYPES)}")
        return Leaf(fields[0], _dims(fields[1], "a leaf"))
    if tag == "case":
        if type(fields) is not list or len(fields) != 3 or type(fields[0]) is not list:
            raise Refused("a case is not [operands, output, opaque]")
        return CallCase(tuple(_shape(s, depth + 1) for s in fields[0]), _shape(fields[1], depth + 1),
                        _bytes(fields[2], "a case's opaque bytes"))
    raise Refused(f"a value is tagged {str(tag)[:40]!r}, which is none of the closed set")


def decode_case(value: Any) -> CallCase:
    """A `CallCase` the plugin's case builder made, or `Refused`."""
    case = decode(value)
    if not isinstance(case, CallCase):
        raise Refused(f"the case builder gave {type(case).__name__}, not a CallCase")
    return case
