"""What a driver service prints, kept bounded.

A driver that writes 64 KiB per call must not fill the disk or the harness's memory: the service's
stdout and stderr are one pipe, and a reader thread keeps only its last `KEEP_BYTES`.  Positions
count every byte ever written, so a caller can ask for what was printed since a moment (a test's
start) and gets at most what is still kept.
"""

from __future__ import annotations

import collections
import os
import threading
import time

KEEP_BYTES = 256 * 1024


class BoundedOutput:
    """The read end of a pipe, drained into a ring of the last ``keep`` bytes."""

    def __init__(self, keep: int = KEEP_BYTES) -> None:
        self._read_fd, self.write_fd = os.pipe2(os.O_CLOEXEC)
        self._keep = keep
        self._chunks: collections.deque[bytes] = collections.deque()
        self._kept = 0
        self.written = 0  # every byte ever read from the pipe
        self._last_read = time.monotonic()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._drain, daemon=True, name="driver-output")
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._read_fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self._chunks.append(data)
                self._kept += len(data)
                self.written += len(data)
                self._last_read = time.monotonic()
                while self._kept - len(self._chunks[0]) >= self._keep:
                    self._kept -= len(self._chunks.popleft())

    def close_write_end(self) -> None:
        """Once the service holds its own copy, the harness's copy of the write end goes."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def settle(self, quiet: float = 0.05, longest: float = 1.0, writers_gone: bool = False) -> None:
        """Wait (at most ``longest``) until nothing has arrived for ``quiet`` seconds: what a dying
        process wrote last, its fatal-error report, is then in the ring.  When the caller knows the
        writing process has ended (``writers_gone``), wait for the end of the pipe instead: a quiet
        spell says nothing when the reader thread has not run since the process wrote (a loaded
        machine), and the pipe's end comes only after everything written has been read."""
        if writers_gone:
            self._reader.join(longest)
            return
        deadline = time.monotonic() + longest
        while time.monotonic() < deadline and self._reader.is_alive():
            with self._lock:
                idle = time.monotonic() - self._last_read
            if idle >= quiet:
                return
            time.sleep(quiet - idle)

    def text(self, since: int = 0) -> str:
        """What was written from position ``since`` on, as far as it is still kept."""
        with self._lock:
            data = b"".join(self._chunks)
            start = self.written - len(data)
        return data[max(since - start, 0):].decode("utf-8", "replace")

    def close(self) -> None:
        self.close_write_end()
        try:
            os.close(self._read_fd)
        except OSError:
            pass
