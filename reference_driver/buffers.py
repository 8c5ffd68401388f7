"""Driver-managed buffers: the token table, buffer state and locking (SPEC §3).

Locking rule (DOM-CONC): each buffer has a readers-writer lock; readers (copyTo, use
as an execution input) share it, writers (copyFrom, use as an output) take it alone.
An execution that touches several buffers takes their locks in ascending token order,
so no two calls can wait on each other in a cycle.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

import numpy as np

from harness.api.hal import IODirection, OperandType, is_fully_specified, numpy_dtype


class ReadWriteLock:
    """Many readers or one writer; waiting writers block new readers (no writer starvation)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        self._enter_reading()
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    def _enter_reading(self) -> None:
        """Wait until no writer holds the lock or waits for it, then count one more reader."""
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


@dataclass(frozen=True)
class Role:
    """One allowed use of a buffer: which prepared model, which direction, which I/O index."""

    prepared_model: object
    direction: IODirection
    io_index: int


@dataclass(eq=False)
class ManagedBuffer:
    """A buffer's state. ``initial_dimensions`` are fixed at allocation (may hold unknowns);
    ``dimensions`` and ``data`` are what was last written."""

    token: int
    operand_type: OperandType
    scale: float
    zero_point: int
    initial_dimensions: tuple[int, ...]
    roles: frozenset[Role]
    lock: ReadWriteLock = field(default_factory=ReadWriteLock)
    initialized: bool = False
    dimensions: tuple[int, ...] = ()
    data: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    released: bool = False

    def __post_init__(self) -> None:
        self.dimensions = self.initial_dimensions

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(numpy_dtype(self.operand_type))

    @property
    def byte_size(self) -> int | None:
        """Bytes of the current contents, or None while the shape is not known."""
        if not is_fully_specified(self.operand_type, self.dimensions):
            return None
        return int(np.prod(self.dimensions, dtype=np.int64)) * self.dtype.itemsize

    def store(self, value: np.ndarray) -> None:
        """Write a new value (possibly of a new shape) and mark the buffer initialized."""
        self.data = np.array(value, dtype=self.dtype, copy=True)
        self.dimensions = tuple(self.data.shape)
        self.initialized = True

    def invalidate(self) -> None:
        self.initialized = False

    def value(self) -> np.ndarray:
        return self.data.reshape(self.dimensions)


class TokenTable:
    """Live buffers by token.  Tokens start at 1 and are never reused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = itertools.count(1)
        self._live: dict[int, ManagedBuffer] = {}

    def new_token(self, live: Collection[int]) -> int:
        """The token of the next buffer; called with the table locked (``live``: the tokens in
        use).  A variant driver may override it: SPEC lets tokens be any positive numbers."""
        return next(self._next)

    def add(self, make: Callable[[int], ManagedBuffer]) -> ManagedBuffer:
        with self._lock:
            buffer = make(self.new_token(self._live.keys()))
            self._live[buffer.token] = buffer
            return buffer

    def get(self, token: int) -> ManagedBuffer | None:
        with self._lock:
            return self._live.get(token)

    def remove(self, token: int) -> None:
        with self._lock:
            buffer = self._live.pop(token, None)
            if buffer is not None:
                buffer.released = True

    def live_tokens(self) -> list[int]:
        """The tokens of the buffers not yet released, oldest first."""
        with self._lock:
            return sorted(self._live)

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)


@contextmanager
def locked(reads: Sequence[ManagedBuffer], writes: Sequence[ManagedBuffer]) -> Iterator[None]:
    """Hold read locks on ``reads`` and write locks on ``writes``, taken in token order."""
    modes: dict[int, tuple[ManagedBuffer, bool]] = {b.token: (b, False) for b in reads}
    modes.update({b.token: (b, True) for b in writes})
    with ExitStack() as stack:
        for token in sorted(modes):
            buffer, write = modes[token]
            stack.enter_context(buffer.lock.writing() if write else buffer.lock.reading())
        yield

