"""harness.api.memory: real shared memory, zero-copy views, no leaked descriptors (SPEC §1, POOL-3)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from harness.api.memory import (
    HardwareBufferFormat,
    Memory,
    MemoryMapError,
    create_ashmem,
    create_hardware_buffer,
    create_hardware_buffer_blob,
    create_file_mmap_fd,
    create_mmap_fd,
    map_region,
    seal_against_shrinking,
    open_file_memory,
)

FACTORIES = {
    "ashmem": lambda n: create_ashmem(n),
    "mmap_fd": lambda n: create_mmap_fd(n, offset=4096 + 24),
    "hardware_buffer_blob": lambda n: create_hardware_buffer_blob(n),
    "hardware_buffer": lambda n: create_hardware_buffer(n // 4, 1),
}


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("kind", FACTORIES)
def test_views_share_the_memory_without_copying(kind: str) -> None:
    with FACTORIES[kind](64) as memory:
        assert memory.kind == kind and memory.size == 64
        writer = memory.map(writable=True)
        reader = memory.map(writable=False)
        writer[:] = np.arange(64, dtype=np.uint8)
        assert reader.tobytes() == bytes(range(64))  # same pages, seen through another mapping
        assert not reader.flags.writeable
        with pytest.raises(ValueError):
            reader[0] = 1


def test_mmap_fd_region_starts_at_its_offset() -> None:
    with create_mmap_fd(16, offset=100) as memory:
        memory.write(b"x" * 16)
        whole = map_region(memory.fd, 0, 116, writable=False)
        assert whole[:100].tobytes() == b"\0" * 100 and whole[100:].tobytes() == b"x" * 16


def test_file_backed_mmap_fd(tmp_path) -> None:
    path = tmp_path / "pool.bin"
    path.write_bytes(bytes(range(200)))
    with open_file_memory(path, 50, 20, writable=False) as memory:
        assert memory.read() == bytes(range(50, 70))
        with pytest.raises(MemoryMapError):
            memory.map(writable=True)  # a read-only descriptor cannot be mapped for writing


def test_an_mmap_fd_in_a_regular_file_cannot_be_sealed() -> None:
    """Scenarios hand drivers mmap_fd memory in regular files too (POOL-3): a driver must map what it
    cannot seal against shrinking, as the reference does (it copies such memory in and out)."""
    with create_file_mmap_fd(64, offset=24) as in_file, create_mmap_fd(64, offset=24) as in_memfd:
        assert not seal_against_shrinking(in_file.fd) and seal_against_shrinking(in_memfd.fd)
        in_file.write(bytes(range(64)))
        assert in_file.read() == bytes(range(64)) and os.pread(in_file.fd, 4, 24) == bytes(range(4))


def test_hardware_buffer_descriptions() -> None:
    with create_hardware_buffer(8, 4, HardwareBufferFormat.R8G8B8A8_UNORM) as image:
        assert image.hardware_desc.format == HardwareBufferFormat.R8G8B8A8_UNORM
        assert image.size == 8 * 4 * 4 == image.hardware_desc.byte_size
    with create_hardware_buffer_blob(100) as blob:
        assert blob.hardware_desc.format == HardwareBufferFormat.BLOB and blob.size == 100


def test_read_only_handle_cannot_be_written() -> None:
    with create_ashmem(32) as memory, memory.read_only() as frozen:
        memory.fill(7)
        assert frozen.read() == b"\7" * 32
        with pytest.raises(MemoryMapError):
            frozen.map(writable=True)


def test_resize_grows_and_shrinks_the_region() -> None:
    with create_ashmem(10) as memory:
        memory.resize(5000)
        assert memory.map().size == 5000
        memory.resize(3)
        assert os.fstat(memory.fd).st_size == 3 and memory.read() == b"\0\0\0"


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda: _closed(), "not open"),
        (lambda: _pipe(), "not mappable"),
        (lambda: _short(), "holds 4 bytes"),
    ],
)
def test_unusable_handles_raise_a_clear_error(make, reason: str) -> None:
    memory = make()
    with pytest.raises(MemoryMapError, match=reason):
        memory.map(writable=False)
    if not memory.closed:
        memory.close()


def _closed() -> Memory:
    memory = create_ashmem(8)
    memory.close()
    return memory


def _pipe() -> Memory:
    read_end, write_end = os.pipe()
    os.close(write_end)
    return Memory("ashmem", read_end, 0, 8)


def _short() -> Memory:
    memory = create_ashmem(8)
    memory.resize(4)
    memory.size = 8  # the handle claims more than the descriptor holds
    return memory


def test_no_descriptor_leaks() -> None:
    before = open_fds()
    for round in range(20):
        for kind, make in FACTORIES.items():
            memory = make(4096 * (round + 1))
            view = memory.map(writable=True)
            view[-1] = 1
            memory.resize(memory.size * 2)
            ro = memory.read_only()
            assert ro.read()[-1] == 0
            ro.close()
            memory.close()
            memory.close()  # closing twice is harmless
            del view
    assert open_fds() == before


def test_mapping_outlives_close_without_holding_a_descriptor() -> None:
    before = open_fds()
    memory = create_ashmem(16)
    view = memory.map(writable=True)
    memory.close()
    view[:] = 3  # the mapping stays valid until the view dies
    assert view.sum() == 48
    assert open_fds() == before
