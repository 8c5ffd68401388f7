"""What a driver service printed, as the harness keeps it (harness.service.output)."""

from __future__ import annotations

import os
import time

from harness.service.output import BoundedOutput


class _LateReader(BoundedOutput):
    """A reader thread that has not run for a while, as on a loaded machine."""

    def _drain(self) -> None:
        time.sleep(0.5)
        super()._drain()


def test_what_an_ended_writer_wrote_is_all_read_when_its_end_is_known() -> None:
    """A service that died at start-up wrote its reason just before it ended, and the harness reads
    its stderr right after.  Told that the writer has ended, settle waits for the end of the pipe;
    a quiet spell alone (what settle waits for while the service lives) can come before the reader ran."""
    output = _LateReader()
    writer = os.dup(output.write_fd)
    output.close_write_end()
    time.sleep(0.1)  # longer than settle's quiet spell
    os.write(writer, b"driver service: cannot create driver 'broken.py:factory': no device found\n")
    os.close(writer)  # the service has ended
    output.settle(writers_gone=True)
    try:
        assert output.text().endswith("no device found\n")
    finally:
        output.close()
