"""Red zones: every leaf buffer sits between guard bytes of a known pattern (SPEC CC-5).

An arena is one shared memory holding a list of leaves, each aligned like an XLA buffer
and fenced by guards.  After a call, changed guard bytes (and, for inputs, any changed
byte) are reported by leaf and byte offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.api.shapes import Leaf, Shape, leaves
from harness.api.memory import Memory, create_ashmem

GUARD = 64
ALIGN = 64
CANARY = np.frombuffer(bytes([0xFD, 0xFE, 0xCA, 0x5A]) * (GUARD // 4), dtype=np.uint8)
UNWRITTEN = 0xCD  # what an output holds before the call


def _align(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


@dataclass
class Arena:
    memory: Memory
    names: list[str]
    leaves: list[Leaf]
    offsets: list[int]

    @classmethod
    def create(cls, named_leaves: Sequence[tuple[str, Leaf]], contents: Sequence[bytes] | None = None) -> Arena:
        offsets, at = [], GUARD
        for _, leaf in named_leaves:
            at = _align(at)
            offsets.append(at)
            at += leaf.nbytes + GUARD
        memory = create_ashmem(max(at, 1))
        view = memory.map(writable=True)
        view[:] = np.resize(CANARY, view.size)
        for i, (_, leaf) in enumerate(named_leaves):
            data = contents[i] if contents is not None else bytes([UNWRITTEN]) * leaf.nbytes
            view[offsets[i]: offsets[i] + leaf.nbytes] = np.frombuffer(data, dtype=np.uint8)
        return cls(memory, [n for n, _ in named_leaves], [leaf for _, leaf in named_leaves], offsets)

    def layout(self, shapes: Sequence[Shape], first: int = 0) -> tuple:
        """The leaf offsets nested like ``shapes`` (what the executor builds pointers from)."""
        position = iter(self.offsets[first:])

        def nest(shape: Shape):
            return next(position) if isinstance(shape, Leaf) else tuple(nest(e) for e in shape.elements)

        return tuple(nest(shape) for shape in shapes)

    def leaf_bytes(self, index: int) -> bytes:
        view = self.memory.map(writable=False)
        return view[self.offsets[index]: self.offsets[index] + self.leaves[index].nbytes].tobytes()

    def value(self, index: int) -> np.ndarray:
        leaf = self.leaves[index]
        return np.frombuffer(self.leaf_bytes(index), dtype=leaf.dtype).reshape(leaf.dims)

    def locate(self, offset: int) -> str:
        """Which leaf (or red zone) byte ``offset`` of the arena belongs to."""
        for name, leaf, start in zip(self.names, self.leaves, self.offsets):
            if start <= offset < start + leaf.nbytes:
                return f"{name} ({leaf}) at byte offset {offset - start}"
        nearest = min(range(len(self.offsets)), key=lambda i: min(abs(offset - self.offsets[i]),
                      abs(offset - self.offsets[i] - self.leaves[i].nbytes)), default=None)
        if nearest is None:
            return f"byte {offset} of an arena with no leaves"
        start, end = self.offsets[nearest], self.offsets[nearest] + self.leaves[nearest].nbytes
        where = f"{start - offset} bytes before the start" if offset < start else f"{offset - end} bytes after the end"
        return f"the red zone {where} of {self.names[nearest]} ({self.leaves[nearest]}), byte offset {offset - start}"

    def changed_red_zones(self) -> list[str]:
        """Every red-zone run of bytes that no longer holds the canary, by leaf and offset."""
        view = self.memory.map(writable=False)
        expected = np.resize(CANARY, view.size)
        inside = np.zeros(view.size, dtype=bool)
        for leaf, start in zip(self.leaves, self.offsets):
            inside[start: start + leaf.nbytes] = True
        changed = np.flatnonzero((view != expected) & ~inside)
        if changed.size == 0:
            return []
        runs = np.split(changed, np.flatnonzero(np.diff(changed) != 1) + 1)
        return [f"{len(run)} byte(s) written in {self.locate(int(run[0]))}" for run in runs]

    def changed_leaves(self, snapshot: bytes) -> list[str]:
        """Leaf bytes that differ from ``snapshot`` (the arena as filled before the call)."""
        view = self.memory.map(writable=False)
        before = np.frombuffer(snapshot, dtype=np.uint8)
        changed = np.flatnonzero(view != before)
        found = []
        for name, leaf, start in zip(self.names, self.leaves, self.offsets):
            inside = changed[(changed >= start) & (changed < start + leaf.nbytes)]
            if inside.size:
                found.append(changed_leaf(name, leaf, inside - start))
        return found

    def close(self) -> None:
        self.memory.close()


def changed_leaf(name: str, leaf: Leaf, offsets: np.ndarray) -> str:
    """How a leaf's bytes changed: how many, and the first (``offsets`` counted from the leaf's start)."""
    return f"{offsets.size} byte(s) of {name} ({leaf}) changed, first at byte offset {offsets[0]}"


def named_leaves(prefix: str, shapes: Sequence[Shape], single: bool = False) -> list[tuple[str, Leaf]]:
    """Leaves of ``shapes`` in pre-order, named like ``operand 0[1][0]`` or ``output[1]``."""
    named = []
    for i, shape in enumerate(shapes):
        head = prefix if single else f"{prefix} {i}"
        named += [(head + "".join(f"[{k}]" for k in path), leaf) for path, leaf in leaves(shape)]
    return named
