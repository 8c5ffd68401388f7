"""Lockstep call sequences as stored data: what an example database keeps of a verdict that no
single hypothesis example carries (a leak judged across the runs of one test call).

An example database may be shared (Redis, a farm's directory), so what it holds is read as
untrusted data: JSON naming only the closed set of value types a `Step` is made of (the Driver
API's records and enums, scenarios and their memories) and only the lockstep's own calls.
Nothing is unpickled and nothing is evaluated; anything else is refused with what was found.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import zlib
from collections.abc import Sequence
from typing import Any

from harness.api import hal, memory, shapes
from harness.judging import scenario
from harness.judging.lockstep import ALONE, NEXT_RUN, Step

__all__ = ["CALLS", "FORMAT", "StoredStepsError", "decode_steps", "encode_steps"]

#: The format's version, the first field of every stored value.
FORMAT = "driver-harness/steps/1"
#: The lockstep calls a stored sequence may name (`harness.judging.lockstep.replay` runs them).
CALLS = frozenset({"prepare", "allocate", "execute", "copy_from", "copy_to", "release", "served_again", NEXT_RUN, ALONE})
_LIMIT = 64 * 1024 * 1024  # decompressed bytes: a stored history is far smaller


class StoredStepsError(ValueError):
    """A stored value that is not a call sequence of this format."""


def _types() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in (hal, memory, shapes, scenario):
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__ and (
                    dataclasses.is_dataclass(value) or issubclass(value, enum.Enum)):
                found[f"{module.__name__}.{value.__qualname__}"] = value
    return found


#: The value types a step's arguments may hold, by qualified name.
_TYPES = _types()


def _encoded(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):
        return {"enum": _name_of(type(value)), "value": value.value}
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, tuple):
        return {"tuple": [_encoded(v) for v in value]}
    if isinstance(value, list):
        return {"list": [_encoded(v) for v in value]}
    if isinstance(value, frozenset):
        return {"frozenset": [_encoded(v) for v in value]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"record": _name_of(type(value)),
                "fields": {f.name: _encoded(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}}
    raise TypeError(f"a step argument of type {type(value).__name__} cannot be stored")


def _name_of(kind: type) -> str:
    name = f"{kind.__module__}.{kind.__qualname__}"
    if _TYPES.get(name) is not kind:
        raise TypeError(f"{name} is not one of the types a stored step may hold")
    return name


def encode_steps(steps: Sequence[Step]) -> bytes:
    """``steps`` as a stored value (compressed JSON)."""
    document = [FORMAT, [[step.method, _encoded(tuple(step.args))] for step in steps]]
    return zlib.compress(json.dumps(document, separators=(",", ":")).encode("utf-8"), 9)


def _decoded(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if not isinstance(value, dict) or len(value) not in (1, 2):
        raise StoredStepsError(f"unexpected value {str(value)[:80]!r}")
    if "bytes" in value:
        return base64.b64decode(value["bytes"], validate=True)
    for name, build in (("tuple", tuple), ("list", list), ("frozenset", frozenset)):
        if name in value:
            if not isinstance(value[name], list):
                raise StoredStepsError(f"a {name} that is not a list: {str(value[name])[:80]!r}")
            return build(_decoded(v) for v in value[name])
    if "enum" in value:
        kind = _known(value["enum"])
        if not issubclass(kind, enum.Enum):
            raise StoredStepsError(f"{value['enum']} is not an enum")
        return kind(value.get("value"))
    if "record" in value:
        kind = _known(value["record"])
        fields = value.get("fields")
        names = {f.name for f in dataclasses.fields(kind) if f.init} if dataclasses.is_dataclass(kind) else set()
        if not isinstance(fields, dict) or not set(fields) <= names:
            raise StoredStepsError(f"fields of {value['record']} must be among {sorted(names)}")
        return kind(**{name: _decoded(v) for name, v in fields.items()})
    raise StoredStepsError(f"unexpected value {str(value)[:80]!r}")


def _known(name: Any) -> type:
    kind = _TYPES.get(name) if isinstance(name, str) else None
    if kind is None:
        raise StoredStepsError(f"{str(name)[:80]!r} is not one of the types a stored step may hold")
    return kind


def decode_steps(data: bytes) -> tuple[Step, ...]:
    """The call sequence a stored value holds; `StoredStepsError` naming what is wrong with it."""
    try:
        inflater = zlib.decompressobj()
        text = inflater.decompress(data, _LIMIT)
        if inflater.unconsumed_tail:
            raise StoredStepsError(f"more than {_LIMIT} bytes once decompressed")
        document = json.loads(text)
    except (zlib.error, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StoredStepsError(f"not compressed JSON: {error}") from None
    if not (isinstance(document, list) and len(document) == 2 and document[0] == FORMAT and isinstance(document[1], list)):
        raise StoredStepsError(f"not a {FORMAT} document")
    steps = []
    for number, entry in enumerate(document[1], 1):
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] in CALLS):
            raise StoredStepsError(f"step {number} is not one of the lockstep's calls {sorted(CALLS)}: {str(entry)[:80]!r}")
        try:
            args = _decoded(entry[1])
        except (TypeError, ValueError) as error:  # a record or enum built from values it refuses
            raise StoredStepsError(f"step {number}: {error}") from None
        if not isinstance(args, tuple):
            raise StoredStepsError(f"step {number}: its arguments are not a tuple")
        steps.append(Step(entry[0], args))
    return tuple(steps)
