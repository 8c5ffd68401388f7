"""Real shared memory for models and requests (SPEC §1, POOL-3).

A `Memory` is a handle, not bytes: a file descriptor plus the region of it that the
memory covers, and for hardware buffers a description.  On Linux:

- ``ashmem`` is a memfd;
- ``mmap_fd`` is any mappable descriptor (a memfd or a regular file) with offset and length;
- ``hardware_buffer_blob`` and ``hardware_buffer`` carry a `HardwareBufferDesc` and a memfd.

`map_region` maps a region as a numpy ``uint8`` view without copying.  Mappings are
made with ``mmap(2)`` through ctypes rather than the ``mmap`` module because the
module duplicates the descriptor for each mapping (a descriptor that outlives
`Memory.close`) and refuses to unmap while numpy views exist; here a mapping lives
exactly as long as the last view of it, and holds no descriptor.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import enum
import errno
import fcntl
import mmap as _mmap_consts
import os
import stat
import tempfile
import threading
import weakref
from typing import NoReturn
from dataclasses import dataclass

import numpy as np

__all__ = [
    "MEMORY_KINDS",
    "REQUIRED_KINDS",
    "MemoryKind",
    "DetachedRegion",
    "HardwareBufferDesc",
    "HardwareBufferFormat",
    "Memory",
    "MemoryMapError",
    "create_ashmem",
    "create_hardware_buffer",
    "create_hardware_buffer_blob",
    "create_file_mmap_fd",
    "create_mmap_fd",
    "map_region",
    "open_file_memory",
    "read_detached",
    "seal_against_shrinking",
]

class MemoryKind(enum.StrEnum):
    """The memory kinds of SPEC §2, by their AIDL names.  `Memory.kind` is a plain string, so a
    test can hand a driver a kind that does not exist (POOL-5); these are the ones that do."""

    ASHMEM = "ashmem"
    MMAP_FD = "mmap_fd"
    HARDWARE_BUFFER_BLOB = "hardware_buffer_blob"
    HARDWARE_BUFFER = "hardware_buffer"


MEMORY_KINDS: tuple[MemoryKind, ...] = tuple(MemoryKind)
#: The kinds every driver supports for constants, and (with memory domains) for copies.
REQUIRED_KINDS: tuple[MemoryKind, ...] = (MemoryKind.ASHMEM, MemoryKind.MMAP_FD, MemoryKind.HARDWARE_BUFFER_BLOB)


class HardwareBufferFormat(enum.IntEnum):
    """AHardwareBuffer formats used here (values from the NDK)."""

    R8G8B8A8_UNORM = 1
    R8_UNORM = 0x38
    BLOB = 0x21


_BYTES_PER_PIXEL = {
    HardwareBufferFormat.R8G8B8A8_UNORM: 4,
    HardwareBufferFormat.R8_UNORM: 1,
    HardwareBufferFormat.BLOB: 1,
}

_USAGE_CPU_READ_OFTEN = 3
_USAGE_CPU_WRITE_OFTEN = 3 << 4


@dataclass(frozen=True)
class HardwareBufferDesc:
    format: HardwareBufferFormat
    width: int
    height: int = 1
    layers: int = 1
    usage: int = _USAGE_CPU_READ_OFTEN | _USAGE_CPU_WRITE_OFTEN
    stride: int = 0  # in pixels; 0 means "same as width"

    @property
    def byte_size(self) -> int:
        stride = self.stride or self.width
        return stride * self.height * self.layers * _BYTES_PER_PIXEL[self.format]


class MemoryMapError(OSError):
    """A memory region could not be mapped (closed, unmappable, too short, ...)."""


# --------------------------------------------------------------------------- mapping

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _unmap(address: int, length: int) -> None:
    _libc.munmap(address, length)


def _check_region(fd: int, offset: int, length: int) -> os.stat_result:
    """The descriptor's stat when ``[offset, offset + length)`` of it can be mapped."""
    if offset < 0 or length < 0:
        raise MemoryMapError(errno.EINVAL, f"negative region offset={offset} length={length}")
    if fd < 0:
        raise MemoryMapError(errno.EBADF, f"descriptor {fd} is not open: no handle was passed")
    try:
        info = os.fstat(fd)
    except OSError as error:
        raise MemoryMapError(error.errno, f"descriptor {fd} is not open: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise MemoryMapError(errno.ENODEV, f"descriptor {fd} is not mappable memory (mode {stat.filemode(info.st_mode)})")
    if info.st_size < offset + length:
        raise MemoryMapError(
            errno.EINVAL, f"descriptor {fd} holds {info.st_size} bytes, region needs {offset + length}"
        )
    return info


def map_region(fd: int, offset: int, length: int, *, writable: bool) -> np.ndarray:
    """Map ``length`` bytes of ``fd`` at ``offset`` as a ``uint8`` array, without copying.

    Read-only mappings give a non-writeable array.  The mapping is unmapped when the
    last array that views it is garbage collected.  Raises `MemoryMapError` when the
    descriptor is closed, not mappable (a pipe, a socket), or shorter than the region.
    """
    _check_region(fd, offset, length)
    if length == 0:
        array = np.zeros(0, dtype=np.uint8)
        array.flags.writeable = writable
        return array
    page = _mmap_consts.PAGESIZE
    aligned = offset - offset % page
    delta = offset - aligned
    map_length = length + delta
    prot = _mmap_consts.PROT_READ | (_mmap_consts.PROT_WRITE if writable else 0)
    flags = _mmap_consts.MAP_SHARED
    address = _libc.mmap(None, map_length, prot, flags, fd, aligned)
    if address in (None, _MAP_FAILED):
        err = ctypes.get_errno()
        raise MemoryMapError(err, f"mmap of descriptor {fd} failed: {os.strerror(err)}")
    window = (ctypes.c_uint8 * length).from_address(address + delta)
    # The ctypes window is the numpy array's base; when it dies, the pages are unmapped.
    window._finalizer = weakref.finalize(window, _unmap, address, map_length)  # type: ignore[attr-defined]
    array = np.frombuffer(memoryview(window), dtype=np.uint8)
    if not writable:
        array.flags.writeable = False
    return array


def seal_against_shrinking(fd: int) -> bool:
    """Forbid shrinking the file behind ``fd`` (memfd seals); True when it is now impossible.

    A process that maps memory another process can shrink gets SIGBUS on access past the
    new end; a sealed memfd can never shrink, so mapping it is safe (SPEC SVC-3).
    """
    if fd < 0:
        return False
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        if seals & fcntl.F_SEAL_SHRINK:
            return True
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
        return True
    except OSError:  # not a memfd, or sealing not allowed: the caller must not map it
        return False


class DetachedRegion(np.ndarray):
    """A private copy of a region, for memory that cannot be safely mapped.

    Reading never faults (the bytes were read with pread); writes reach the memory only
    through `write_back`, with pwrite, which fails cleanly if the file shrank."""

    fd: int
    offset: int

    def write_back(self, start: int, length: int) -> None:
        data = self[start : start + length].tobytes()
        if os.pwrite(self.fd, data, self.offset + start) != len(data):
            raise MemoryMapError(errno.EIO, f"short write to descriptor {self.fd}")


def _pread_exactly(fd: int, offset: int, length: int) -> bytes:
    """``length`` bytes of ``fd`` at ``offset`` with pread; `MemoryMapError` if unreadable or short."""
    try:
        data = os.pread(fd, length, offset)
    except OSError as error:
        raise MemoryMapError(error.errno, f"cannot read descriptor {fd}: {error.strerror}") from None
    if len(data) != length:
        raise MemoryMapError(errno.EINVAL, f"descriptor {fd} ended after {len(data)} of {length} bytes")
    return data


def read_detached(fd: int, offset: int, length: int, *, writable: bool) -> DetachedRegion:
    """Copy ``[offset, offset + length)`` of ``fd`` with pread; `MemoryMapError` if unreadable or short."""
    _check_region(fd, offset, length)
    if writable and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
        raise MemoryMapError(errno.EACCES, f"descriptor {fd} is open read-only")
    region = np.frombuffer(bytearray(_pread_exactly(fd, offset, length)), dtype=np.uint8).view(DetachedRegion)
    region.fd, region.offset = fd, offset
    region.flags.writeable = writable
    return region


# --------------------------------------------------------------------------- Memory


class Memory:
    """A shared memory handle: kind, descriptor, region, and (hardware buffers) a description.

    The constructor accepts any values, so that tests can build invalid handles
    (unknown kinds, closed descriptors, wrong sizes); the ``create_*`` functions build
    valid ones.  A Memory owns its descriptor: `close` closes it exactly once.
    """

    __slots__ = ("kind", "fd", "offset", "size", "hardware_desc", "_finalizer", "_closed", "_lock", "_views", "__weakref__")

    def __init__(
        self,
        kind: str,
        fd: int,
        offset: int,
        size: int,
        hardware_desc: HardwareBufferDesc | None = None,
        *,
        owns_fd: bool = True,
    ) -> None:
        self.kind = kind
        self.fd = fd
        self.offset = offset
        self.size = size
        self.hardware_desc = hardware_desc
        # A handle dropped without close() still gives its descriptor back (long fuzz runs).
        self._finalizer = weakref.finalize(self, _close_quietly, fd) if owns_fd else None
        self._closed = False
        self._lock = threading.Lock()
        # (offset, size, writable) -> (view, (st_dev, st_ino)); mapping once per handle keeps
        # the per-call cost at one fstat instead of mmap + page faults + munmap.
        self._views: dict[tuple[int, int, bool], tuple[np.ndarray, tuple[int, int]]] = {}

    def __reduce__(self) -> NoReturn:
        # The service wire's own pickler sends a Memory as a record plus its descriptor (it
        # consults its dispatch table before this); pickled anywhere else, a descriptor number
        # would arrive meaning nothing, or another file.
        raise TypeError("a Memory crosses a process boundary only as a descriptor, through the driver service wire")

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"Memory(kind={self.kind!r}, fd={self.fd}, offset={self.offset}, size={self.size}{state})"

    @property
    def closed(self) -> bool:
        return self._closed

    def map(self, *, writable: bool = True) -> np.ndarray:
        """A ``uint8`` view of this memory's region (read-only when ``writable`` is False).

        The region is re-checked on every call (closed handle, shrunk file, replaced
        descriptor), so a cached view is never returned for a handle that went bad.
        """
        if self._closed:
            raise MemoryMapError(errno.EBADF, f"descriptor {self.fd} is not open: the handle was closed")
        key = (self.offset, self.size, writable)
        info = _check_region(self.fd, self.offset, self.size)
        cached = self._views.get(key)
        if cached is not None and cached[1] == (info.st_dev, info.st_ino):
            return cached[0]
        view = map_region(self.fd, self.offset, self.size, writable=writable)
        self._views[key] = (view, (info.st_dev, info.st_ino))
        return view

    # write and read copy with pwrite/pread, one system call each: a handle that is written
    # once and read once (every generated pool) would otherwise pay two mmaps and munmaps.
    # Both see what mappings of the same descriptor see (one page cache).

    def write(self, data: bytes | np.ndarray, at: int = 0) -> None:
        """Copy ``data`` into the region at byte ``at``; it must fit (ValueError otherwise)."""
        raw = (memoryview(data).cast("B") if isinstance(data, (bytes, bytearray))
               else np.ascontiguousarray(data).view(np.uint8).reshape(-1).data)
        if at < 0 or at + raw.nbytes > self.size:
            raise ValueError(f"{raw.nbytes} bytes at {at} do not fit a region of {self.size} bytes")
        self._region_checked()
        try:
            written = os.pwrite(self.fd, raw, self.offset + at)
        except OSError as error:
            raise MemoryMapError(error.errno, f"cannot write descriptor {self.fd}: {error.strerror}") from None
        if written != raw.nbytes:
            raise MemoryMapError(errno.EIO, f"short write to descriptor {self.fd}")

    def read(self) -> bytes:
        """A copy of the region's bytes."""
        self._region_checked()
        return _pread_exactly(self.fd, self.offset, self.size)

    def _region_checked(self) -> None:
        if self._closed:
            raise MemoryMapError(errno.EBADF, f"descriptor {self.fd} is not open: the handle was closed")
        _check_region(self.fd, self.offset, self.size)

    def fill(self, value: int) -> None:
        self.map(writable=True)[:] = value

    def resize(self, size: int) -> None:
        """Grow or shrink the backing file to ``offset + size`` bytes and cover that region."""
        os.ftruncate(self.fd, self.offset + size)
        self._views.clear()
        self.size = size

    def read_only(self) -> Memory:
        """A new handle to the same region through a read-only descriptor."""
        fd = os.open(f"/proc/self/fd/{self.fd}", os.O_RDONLY | os.O_CLOEXEC)
        return Memory(self.kind, fd, self.offset, self.size, self.hardware_desc)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._views.clear()
        if self._finalizer is not None:
            self._finalizer.detach()
            os.close(self.fd)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:  # already closed by its owner behind the handle's back
        pass


def _memfd(name: str, size: int) -> int:
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_ashmem(size: int) -> Memory:
    """An ``ashmem`` memory: a memfd of exactly ``size`` bytes."""
    return Memory(MemoryKind.ASHMEM, _memfd("ashmem", size), 0, size)


def create_mmap_fd(size: int, offset: int = 0) -> Memory:
    """An ``mmap_fd`` memory: ``size`` bytes at ``offset`` of a memfd of ``offset + size`` bytes."""
    return Memory(MemoryKind.MMAP_FD, _memfd("mmap_fd", offset + size), offset, size)


def create_file_mmap_fd(size: int, offset: int = 0) -> Memory:
    """An ``mmap_fd`` memory: ``size`` bytes at ``offset`` of an unlinked regular file, as a model's
    weights on disk are.  Unlike a memfd it cannot be sealed against shrinking."""
    fd, path = tempfile.mkstemp(prefix="mmap_fd-")
    os.unlink(path)
    os.set_inheritable(fd, False)
    os.ftruncate(fd, offset + size)
    return Memory(MemoryKind.MMAP_FD, fd, offset, size)


def open_file_memory(path: str | os.PathLike[str], offset: int, size: int, *, writable: bool = True) -> Memory:
    """An ``mmap_fd`` memory over a region of a regular file."""
    flags = (os.O_RDWR if writable else os.O_RDONLY) | os.O_CLOEXEC
    return Memory(MemoryKind.MMAP_FD, os.open(path, flags), offset, size)


def create_hardware_buffer_blob(size: int) -> Memory:
    """A BLOB AHardwareBuffer of ``size`` bytes (width = size, height = 1)."""
    desc = HardwareBufferDesc(HardwareBufferFormat.BLOB, width=size, stride=size)
    return Memory(MemoryKind.HARDWARE_BUFFER_BLOB, _memfd("ahwb_blob", size), 0, size, desc)


def create_hardware_buffer(
    width: int, height: int, fmt: HardwareBufferFormat = HardwareBufferFormat.R8G8B8A8_UNORM, layers: int = 1
) -> Memory:
    """A non-BLOB AHardwareBuffer (an image); valid only for execution inputs and outputs."""
    desc = HardwareBufferDesc(fmt, width=width, height=height, layers=layers, stride=width)
    size = desc.byte_size
    return Memory(MemoryKind.HARDWARE_BUFFER, _memfd("ahwb", size), 0, size, desc)
