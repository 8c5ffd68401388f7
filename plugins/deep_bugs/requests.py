"""Deep bugs at the limits of request layouts: alignment, vector tails, the pool table's end."""

from __future__ import annotations

import numpy as np

from harness.api.hal import ExecutionResult, element_size, is_scalar_type
from harness.api.memory import DetachedRegion, Memory, MemoryKind

from ._registry import Execution, Fault, Reach, deep_bug
from ._values import operand, wrong

#: What a vector store leaves past the bytes it meant to write.
_STRAY = 0x7F


def _first_output(execution: Execution, values: dict[int, np.ndarray]) -> None:
    index = execution.model.main.output_indexes[0]
    values[index] = wrong(values[index])


@deep_bug("blob-odd-offset-half-words", "POOL-2",
          "an input of 2-byte elements at an odd offset of a hardware_buffer_blob of 32 bytes or more, ending exactly at the blob's end, "
          "in a request of three pools, is read from the offset rounded down to even (the word-aligned read past "
          "the end is refused, and the fallback forgets the odd byte), so every result is off", Reach.LIMITS)
class BlobOddOffsetHalfWords(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        request, subgraph = execution.request, execution.model.main
        if len(request.pools) != 3:
            return
        for argument, index in zip(request.inputs, subgraph.input_indexes):
            if argument.has_no_value or argument.location.offset % 2 == 0:
                continue
            kind = operand(execution, index).type
            if is_scalar_type(kind) or element_size(kind) != 2:
                continue
            pool = request.pools[argument.location.pool_index]
            if not isinstance(pool, Memory) or pool.kind != MemoryKind.HARDWARE_BUFFER_BLOB:
                continue
            if argument.location.offset + argument.location.length != pool.size:
                continue  # an aligned read fits before the blob's end
            if pool.size < 32:
                continue  # a small blob is read by the CPU
            _first_output(execution, values)
            return


@deep_bug("four-pools-last-input-at-zero", "POOL-2",
          "with four request pools, the first a hardware_buffer_blob, and at most three inputs, an input after the first, of 8 bytes or more, at offset 0 of the last one (an "
          "mmap_fd region past its file's start) is read from the pool "
          "before it: the pool table a small request keeps on the stack has three entries, and the fourth overwrites the third",
          Reach.LIMITS)
class FourPoolsLastInput(Fault):
    def outputs(self, execution: Execution, values: dict[int, np.ndarray]) -> None:
        request = execution.request
        if len(request.inputs) > 3:
            return  # a table of more inputs is allocated, with room for every pool
        if len(request.pools) != 4:
            return
        last = [a for a in request.inputs[1:] if not a.has_no_value and a.location.pool_index == 3]
        if not last:
            return
        if all(a.location.offset or a.location.length < 8 for a in last):
            return
        pool = request.pools[3]
        if not isinstance(pool, Memory) or pool.kind != MemoryKind.MMAP_FD:
            return
        if pool.offset == 0:
            return  # a region at the file's start is found by its descriptor alone
        first = request.pools[0]
        if not isinstance(first, Memory) or first.kind != MemoryKind.HARDWARE_BUFFER_BLOB:
            return  # the table is rebuilt when its first entry is not a blob
        _first_output(execution, values)


@deep_bug("mmap-fd-output-vector-tail", "POOL-2",
          "an output after the first, of 2-byte elements, in the first 8 bytes of its pool, in a request of three pools or more, with no padding, in "
          "an mmap_fd region that starts past the file's first page, "
          "whose length is no multiple of 8 and which does not end the pool, is written with whole 8-byte stores, "
          "clobbering the bytes after it", Reach.LIMITS)
class MmapFdOutputVectorTail(Fault):
    def executed(self, execution: Execution, result: ExecutionResult) -> ExecutionResult:
        request = execution.request
        subgraph = execution.model.main
        for argument, index in list(zip(request.outputs, subgraph.output_indexes))[1:]:
            if argument.has_no_value:
                continue
            location = argument.location
            pool = request.pools[location.pool_index]
            if not isinstance(pool, Memory) or pool.kind != MemoryKind.MMAP_FD:
                continue
            if pool.offset < 4096:
                continue  # the first page is mapped whole
            if element_size(operand(execution, index).type) != 2:
                continue  # bytes and words have stores of their own size
            if len(request.pools) < 3:
                continue  # the pools' table is laid out differently
            if location.padding or location.length % 8 == 0:
                continue
            if location.offset >= 8:
                continue  # past the first store, the tail is masked
            end = location.offset + location.length
            if end >= pool.size:
                continue  # the pool's own end: the store is cut there
            stray = min(8 - location.length % 8, pool.size - end)
            region = self.device.map_memory(pool, writable=True, rule="POOL-2")
            region[end:end + stray] = _STRAY
            if isinstance(region, DetachedRegion):
                region.write_back(end, stray)
        return result
