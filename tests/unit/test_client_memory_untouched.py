"""A driver writes only its outputs: the client's constant pools (POOL-2) and a copy_from's
source memory (DOM-COPY-1) read back as the client wrote them (`oracle.written_over`)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from harness.judging.oracle import constant_pool_change, written_over
from harness.judging.scenario import Defect, MemorySpec, make_memory

CONTENT = bytes(range(16))


@pytest.mark.parametrize("kind", ["ashmem", "mmap_fd", "hardware_buffer_blob"])
def test_a_memory_as_written_has_no_change(kind) -> None:
    spec = MemorySpec(kind, CONTENT, file_offset=8 if kind == "mmap_fd" else 0)
    with make_memory(spec) as memory:
        assert written_over(spec, memory) == ""


@pytest.mark.parametrize("kind", ["ashmem", "mmap_fd"])
def test_a_byte_written_over_is_named_with_both_values(kind) -> None:
    spec = MemorySpec(kind, CONTENT)
    with make_memory(spec) as memory:
        memory.write(b"\xee\xee", at=5)
        assert written_over(spec, memory) == "byte 5 changed from 0x05 to 0xee (2 bytes changed)"


def test_a_shrunk_memory_is_a_change_not_an_error() -> None:
    spec = MemorySpec("ashmem", CONTENT)
    with make_memory(spec) as memory:
        os.ftruncate(memory.fd, 4)  # as a driver that truncated the client's file would
        assert "can no longer be read whole" in written_over(spec, memory)


@pytest.mark.parametrize("defect", [Defect.CLOSED, Defect.SHORT, Defect.READ_ONLY])
def test_a_handle_made_unusable_on_purpose_is_not_judged(defect) -> None:
    spec = MemorySpec("ashmem", CONTENT, defect=defect)
    with make_memory(spec) as memory:
        assert written_over(spec, memory) == ""


def test_the_first_constant_pool_changed_is_named() -> None:
    specs = (MemorySpec("ashmem", CONTENT), MemorySpec("mmap_fd", CONTENT))
    memories = [make_memory(spec) for spec in specs]
    try:
        scenario = SimpleNamespace(constant_pools=specs)
        assert constant_pool_change(scenario, memories) == ""
        memories[1].write(b"\x00", at=3)
        assert constant_pool_change(scenario, memories) == "constant pool 1 (mmap_fd): byte 3 changed from 0x03 to 0x00 (1 bytes changed)"
    finally:
        for memory in memories:
            memory.close()
