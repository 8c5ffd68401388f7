"""Request layouts: arguments spread over several pools of every supported kind, with
random gaps, offsets and padding, pools pre-filled with a canary pattern."""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import event, note
from hypothesis import strategies as st

from harness.api.hal import (
    Capabilities,
    DataLocation,
    RequestArgument,
    element_size,
    is_fully_specified,
    numpy_dtype,
    operand_byte_size,
)
from harness.judging.scenario import MemorySpec, Scenario
from harness.api.memory import REQUIRED_KINDS, MemoryKind

from .models import ModelCase, model_cases
from .values import BOOLEANS, integers, sampled

CONSTANT_POOL_KINDS = REQUIRED_KINDS


def canaries() -> st.SearchStrategy[int]:
    return sampled((0xA5, 0x5A, 0xFF, 0x00))


def _lay_out(draw, case: ModelCase, caps: Capabilities, *, allow_insufficient: bool = True) -> Scenario:
    """Place every input and output of ``case`` in request pools; returns the whole scenario."""
    subgraph = case.subgraph
    kinds = tuple(sorted(caps.memory_kinds))
    pool_count = draw(integers(1, 4), label="pool count")
    pool_kinds = [draw(sampled(kinds), label=f"pool {i} kind") for i in range(pool_count)]
    canary = draw(canaries(), label="canary byte")
    pools: list[bytearray] = [bytearray() for _ in range(pool_count)]

    arguments = len(case.inputs) + len(case.output_shapes)
    # Where each argument goes (pool, gap before, padding after) and each pool's tail: one draw of
    # bytes for the whole request (a draw per number was most of a layout's cost); zero bytes
    # shrink to pool 0, no gaps, no padding.
    placement = iter(draw(_placement_bytes(arguments, pool_count), label="placement: pool, gap, padding per argument"))

    def place(payload: bytes | int) -> DataLocation:
        index, gap, padding = next(placement) % pool_count, next(placement) % 17, next(placement) % 9
        data = pools[index]
        data.extend(bytes([canary]) * gap)
        offset = len(data)
        length = payload if isinstance(payload, int) else len(payload)
        data.extend(payload if isinstance(payload, bytes) else bytes([canary]) * length)
        data.extend(bytes([canary]) * padding)
        return DataLocation(index, offset, length, padding)

    inputs = []
    for value, index in zip(case.inputs, subgraph.input_indexes):
        operand = subgraph.operands[index]
        full = is_fully_specified(operand.type, operand.dimensions)
        give_dims = not full or draw(BOOLEANS, label="input dims given")
        raw = np.ascontiguousarray(value, dtype=numpy_dtype(operand.type)).tobytes()
        inputs.append(RequestArgument(False, place(raw), tuple(value.shape) if give_dims else ()))

    outputs = []
    for shape, index in zip(case.output_shapes, subgraph.output_indexes):
        operand = subgraph.operands[index]
        needed = operand_byte_size(operand.type, shape)
        if is_fully_specified(operand.type, operand.dimensions):
            capacity, dims = needed, (shape if draw(BOOLEANS, label="output dims given") else ())
        else:
            step = element_size(operand.type)
            choices = ("exact", "larger", "smaller") if allow_insufficient else ("exact", "larger")
            fit = draw(sampled(choices), label="output capacity")
            event(f"dynamic output capacity: {fit}")
            capacity = (needed if fit == "exact" else needed + step * draw(integers(1, 8)) if fit == "larger"
                        else needed - step * draw(integers(1, max(1, needed // step))))
            dims = ()
        outputs.append(RequestArgument(False, place(max(capacity, 0)), dims))

    for data in pools:
        data.extend(bytes([canary]) * (next(placement) % 9))  # the pool's tail
        if not data:
            data.append(canary)
    request_pools = tuple(_memory(draw, kind, bytes(data), f"pool {i}") for i, (kind, data) in enumerate(zip(pool_kinds, pools)))
    constant_pools: tuple[MemorySpec, ...] = ()
    if case.pool_data:
        usable = tuple(k for k in CONSTANT_POOL_KINDS if k in caps.memory_kinds) or (MemoryKind.ASHMEM,)  # ashmem is required
        kind = draw(sampled(usable), label="constant pool kind")
        constant_pools = (_memory(draw, kind, case.pool_data, "constant pool"),)
    for kind in pool_kinds:
        event(f"request pool kind: {kind}")
    scenario = Scenario(subgraph, case.operand_values, constant_pools, tuple(inputs), tuple(outputs), request_pools,
                        notes=(case.label,), referenced=case.referenced)
    note(f"request: {len(inputs)} inputs, {len(outputs)} outputs in pools {pool_kinds}")
    return scenario


#: Where an ``mmap_fd`` memory's region lies: its offset in the file, and whether the file is a
#: regular one (weights on disk, which no driver can seal against shrinking) or a memfd.
_MMAP_FD_REGIONS = ((0, False), (8, False), (4096 + 16, False), (0, True), (24, True))


def _memory(draw, kind: str, content: bytes, label: str) -> MemorySpec:
    if kind != MemoryKind.MMAP_FD:
        return MemorySpec(kind, content)
    offset, in_file = draw(sampled(_MMAP_FD_REGIONS), label=f"{label}: file offset, regular file")
    return MemorySpec(kind, content, offset, in_file=in_file)


@functools.lru_cache(maxsize=256)
def _placement_bytes(arguments: int, pools: int) -> st.SearchStrategy[bytes]:
    return st.binary(min_size=3 * arguments + pools, max_size=3 * arguments + pools)


request_layouts = st.composite(_lay_out)


def scenarios(caps: Capabilities, *, allow_insufficient: bool = True, family: str = "",
              models: st.SearchStrategy | None = None) -> st.SearchStrategy[Scenario]:
    """A valid model with a valid request on it, laid out in the driver's memory kinds (none, and
    so no example, for a driver whose declarations build no model: `buildable_families`)."""
    return _laid_out_once(model_cases(caps, family) if models is None else models, caps, allow_insufficient)


@functools.lru_cache(maxsize=256)
def _laid_out_once(models: st.SearchStrategy, caps: Capabilities, allow_insufficient: bool) -> st.SearchStrategy[Scenario]:
    # One strategy object per (models strategy, capabilities, options): hypothesis validates a
    # strategy and works out its properties once per object, which cost more than the drawing when
    # built per example.  Keyed by the models object, so callers pass cached ones (model_cases is).
    return _laid_out(models, caps, allow_insufficient)


@st.composite
def _laid_out(draw, cases: st.SearchStrategy, caps: Capabilities, allow_insufficient: bool) -> Scenario:
    # request_layouts' body drawn in place (a flatmap would build a new strategy per example)
    return _lay_out(draw, draw(cases), caps, allow_insufficient=allow_insufficient)
