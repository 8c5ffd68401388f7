"""A failure's traceback in Python's own format, from the test down.

pytest's native format (the harness's sessions use it: `harness-pytest.ini` says why) prints the
whole chain of frames, pytest's runner and pluggy's hook calls first: about forty lines of them
before every failure, and the harness's own hooks among them, saying nothing of the driver.
`from_the_test` starts the chain at the test function; the message, the frames of the suite and
of the harness below it, and hypothesis' notes (its falsifying example) are kept whole.
"""

from __future__ import annotations

import os
import traceback
from types import CodeType, TracebackType

import pluggy
import _pytest

__all__ = ["from_the_test"]

#: the folders of the code that runs a test, whose frames come before the test's own
_RUNNERS = tuple(os.path.dirname(os.path.abspath(str(module.__file__))) + os.sep for module in (_pytest, pluggy))


def _start(tb: TracebackType | None, test: CodeType | None) -> TracebackType | None:
    """The frame of ``tb`` running the test function ``test``, else the first that is not pytest's
    or pluggy's (``tb`` itself when there is neither)."""
    entry, first_own = tb, None
    while entry is not None:
        if test is not None and entry.tb_frame.f_code is test:
            return entry
        if first_own is None and not os.path.abspath(entry.tb_frame.f_code.co_filename).startswith(_RUNNERS):
            first_own = entry
        entry = entry.tb_next
    return first_own or tb


def from_the_test(error: BaseException, test: CodeType | None = None) -> str:
    """``error`` formatted as Python does, its traceback starting at the test function ``test``
    (the hooks around it, the harness's own included, left out)."""
    return "".join(traceback.format_exception(type(error), error, _start(error.__traceback__, test))).rstrip("\n")
