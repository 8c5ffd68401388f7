"""A run's evidence is the harness's own: its output directory locked, its records held open.

The records a certificate is built from are read back through the descriptor the harness
created them with, never by opening their path again: a file renamed over that path, or the
path deleted, changes nothing the certificate says.  The pytest session writes them through
``/proc/PID/fd/N`` of that descriptor (its xdist workers too), so every writer reaches the same
file, and the certificate carries the SHA-256 of the bytes it was built from.

An output directory belongs to one run at a time: a second run into it is refused at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from dataclasses import dataclass

__all__ = ["DirectoryInUse", "HeldRecords", "lock_output_directory"]

class DirectoryInUse(Exception):
    """Another run holds the output directory."""


@dataclass
class _Lock:
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops the lock
            self.fd = -1


def lock_output_directory(directory: str) -> _Lock:
    """Hold ``directory`` for this run until the returned lock is released (or the process ends,
    however it ends: the kernel drops the lock with the descriptor).

    The lock is taken on the directory itself, so a run leaves nothing behind in it: a run
    refused before it starts writes no file."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        os.close(fd)
        raise DirectoryInUse(f"output directory {directory!r} is in use by another run"
                             f"{f' (process {holder})' if holder else ''}; give each run its own --out") from None
    return _Lock(fd)


def _lock_holder(fd: int) -> int | None:
    """The process holding a flock on the file behind ``fd``, as /proc/locks names it."""
    info = os.fstat(fd)
    wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            for line in locks:
                fields = line.split()
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == wanted and fields[4].isdigit():
                    return int(fields[4])
    except OSError:
        pass  # the holder's number is a courtesy in the message, not needed to refuse
    return None


class HeldRecords:
    """A records file created anew at ``path`` and held open for the run."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)

    @property
    def writer_path(self) -> str:
        """The name every writer of this run opens: the held file itself, whatever happens to ``path``."""
        return f"/proc/{os.getpid()}/fd/{self._fd}"

    def read(self) -> tuple[list[dict], str]:
        """The records written so far and the SHA-256 of their bytes, read through the held descriptor."""
        chunks, offset = [], 0
        while True:
            chunk = os.pread(self._fd, 1 << 20, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        data = b"".join(chunks)
        records = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        return records, hashlib.sha256(data).hexdigest()

    def discard(self) -> None:
        """Remove the records file, if its path still names the file this run holds."""
        try:
            if os.path.samestat(os.stat(self.path), os.fstat(self._fd)):
                os.unlink(self.path)
        except OSError:
            pass

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
