"""A reproducer prints its calls' arguments as Python source: what it prints evaluates, in the
script's own namespace, to the very values the run used (a role probability of NaN included,
which `repr` prints as a bare name the script does not define)."""

from __future__ import annotations

import math

import pytest

from harness.api.hal import BufferDesc, BufferRole, DataLocation, OperandType, RequestArgument
from harness.report.reproducer import _HEADER, _literal


def _script_namespace() -> dict:
    namespace: dict = {}
    source = _HEADER.format(requirement="DOM-ALLOC-1", driver="reference", summary="", imports="", setup="")
    exec(compile(source, "reproducer", "exec"), namespace)
    return namespace


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (tuple, list)) and type(a) is type(b):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        return all(_same(getattr(a, name), getattr(b, name)) for name in a.__dataclass_fields__)
    return a == b


@pytest.mark.parametrize("value", [
    BufferRole(0, 0, float("nan")),
    BufferRole(0, 0, float("inf")),
    BufferRole(0, 0, float("-inf")),
    BufferRole(0, 0, -0.0),
    BufferRole(-1, -1, 1.0000001),
    [BufferRole(0, 0, float("nan")), BufferRole(1, 0)],
    (BufferDesc((-1, 2)), [BufferRole(0, 0)], ()),
    RequestArgument(False, DataLocation(0, -4, 16, 0), (2, 2)),
    OperandType.TENSOR_FLOAT32,
    b"\x00" * 100,
], ids=repr)
def test_what_a_reproducer_prints_evaluates_to_the_same_value(value: object) -> None:
    printed = _literal(value)
    assert _same(eval(printed, _script_namespace()), value), f"{printed} is not {value!r}"
