"""Deep bugs that only the generators reaching further meet (`harness.strategies.swarm`'s
switches): a dtype a short run never sends, a container filled to its declared limit, a table filled from several threads at
once, and a cache that shows after several executions on reused memory.

Two are in native code the reference ships (a custom-call target and the packed-function probes,
built with a ``*_DEEP_*`` flag): each is a driver of its own, whose hooks below declare the flagged
build.  The token table is the reference's with another `TokenTable`, also a driver of its own.
The result cache is a `Fault`, part of ``deep-bugs``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import numpy as np

from harness import hookimpl
from harness.api.hal import Device
from reference_driver import ReferenceDevice
from reference_driver.buffers import ManagedBuffer, TokenTable

from ._registry import Execution, Fault, Reach, deep_bug, deep_bug_driver

#: driver name -> the compile-time flag of its custom-call targets or packed-function probes
_CUSTOM_CALL_FLAGS: dict[str, str] = {}
_PACKED_FUNCTION_FLAGS: dict[str, str] = {}


def _named_reference(name: str, **parts: object) -> Callable[[], Device]:
    def create() -> Device:
        device = ReferenceDevice(**parts)
        device.name = name
        return device
    return create


def _flagged(flags: dict[str, str], name: str, requirement: str, description: str, reach: Reach, flag: str) -> None:
    driver = f"deep-{name}"
    flags[driver] = flag
    deep_bug_driver(name, requirement, description, reach, _named_reference(driver))


# --------------------------------------------------------------------------- limits (custom calls)

_flagged(_CUSTOM_CALL_FLAGS, "cc-host-leaf-table-24", "CC-2",
         "the host-convention tuple walker keeps leaf pointers in a table of 24 and drops later leaves without a word",
         Reach.LIMITS, "CC_DEEP_LEAF_TABLE_24")


# --------------------------------------------------------------------------- dtypes (packed functions)

_flagged(_PACKED_FUNCTION_FLAGS, "ffi-uint64-as-int64", "FFI-4",
         "describes a uint64 tensor as int64 (the binding's own element-type enum has no 64-bit unsigned entry)",
         Reach.DTYPES, "FFI_DEEP_UINT64_AS_INT64")


@hookimpl
def harness_custom_call_targets(driver_name: str) -> list:
    flag = _CUSTOM_CALL_FLAGS.get(driver_name)
    if flag is None:
        return []
    from reference_driver.custom_calls import reference_targets

    return reference_targets((f"-D{flag}",))


@hookimpl
def harness_packed_functions(driver_name: str) -> list:
    flag = _PACKED_FUNCTION_FLAGS.get(driver_name)
    if flag is None:
        return []
    from reference_driver.packed_functions import packed_library

    return [packed_library(driver_name, (f"-D{flag}",))]


# --------------------------------------------------------------------------- threads (allocation)


class _OverflowingTokens(TokenTable):
    """A table of `SLOTS` buffers under its lock, and past it an overflow list whose walk to its
    end (the wait below stands for it) happens outside the lock, between reading the next token
    and storing it: two allocations that overflow at once get one token."""

    SLOTS = 16

    def __init__(self) -> None:
        super().__init__()
        self._counter = 1

    def add(self, make: Callable[[int], ManagedBuffer]) -> ManagedBuffer:
        with self._lock:
            if len(self._live) < self.SLOTS:
                token, self._counter = self._counter, self._counter + 1
                buffer = self._live[token] = make(token)
                return buffer
        token = self._counter
        time.sleep(0.002)
        self._counter = token + 1
        buffer = make(token)
        with self._lock:
            self._live[token] = buffer
        return buffer


def _overflowing_tokens_device() -> Device:
    return _named_reference("deep-overflowing-allocations-share-a-token", tokens=_OverflowingTokens())()


deep_bug_driver("overflowing-allocations-share-a-token", "DOM-ALLOC-3",
                "allocations past 16 live buffers go to an overflow list whose next token is read and stored outside the "
                "lock: two such allocations at once get the same token", Reach.THREADS, _overflowing_tokens_device)


# --------------------------------------------------------------------------- state (sequences)


@deep_bug("results-cached-by-input-location", "STATE-1",
          "once a prepared model ran three times with its inputs at the same places of the same memories, it hands "
          "back the outputs it stored then instead of computing them again: its result cache is keyed by where the "
          "inputs are, not what they hold", Reach.STATE)
class ResultsCachedByInputLocation(Fault):
    """A result cache for repeated inference, keyed by the prepared model and each input's memory
    (the file behind its descriptor), offset, length and dimensions; it serves a key seen
    `WARM_AFTER` times before."""

    WARM_AFTER = 3

    def __init__(self, device) -> None:
        super().__init__(device)
        self._lock = threading.Lock()
        self._seen: dict[tuple, int] = {}
        self._stored: dict[tuple, dict[int, np.ndarray]] = {}

    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        key = self._key(execution)
        if key is None:
            return
        outputs = execution.model.main.output_indexes
        with self._lock:
            seen = self._seen[key] = self._seen.get(key, 0) + 1
            if seen <= self.WARM_AFTER:
                self._stored[key] = {index: np.array(values[index], copy=True) for index in outputs}
                return
            stored = self._stored[key]
        for index in outputs:
            values[index] = stored[index]

    @staticmethod
    def _key(execution: Execution) -> tuple | None:
        """The inputs' places, or None when an input is not in shared memory (a token, no value)."""
        places = []
        for argument in execution.request.inputs:
            if argument.has_no_value:
                return None
            pool = execution.request.pools[argument.location.pool_index]
            if isinstance(pool, int):
                return None
            file = os.fstat(pool.fd)
            places.append((file.st_dev, file.st_ino, pool.offset, argument.location.offset, argument.location.length,
                           tuple(argument.dimensions)))
        return (execution.prepared, *places)
