"""Atomic file writes: a reader never sees half a report."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process's umask, read without changing it (Linux reports it in /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)  # elsewhere: read it by setting it, and put it straight back
    os.umask(current)
    return current


def write_atomically(path: str | os.PathLike[str], text: str, *, durable: bool = True) -> None:
    """Write ``text`` to a temporary file beside ``path``, fsync it (unless not ``durable``: a
    display aid replaced every second), then rename it over ``path``.

    The file gets the mode an ordinary ``open()`` would give it (0666 less the umask), not the
    0600 of a temporary file: a report is meant to be read by others.
    """
    target = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def append_whole(fd: int, data: bytes) -> None:
    """Append ``data`` through ``fd`` (opened O_APPEND) in one write, or not at all: a write that
    a full disk cut short is taken back (a torn line reads as a broken record), and raises OSError."""
    written = os.write(fd, data)
    if written < len(data):
        try:
            os.ftruncate(fd, os.fstat(fd).st_size - written)
        except OSError:
            pass  # not a regular file: nothing kept what was cut short
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
