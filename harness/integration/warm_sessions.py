"""pytest sessions forked from a process that has already imported what every session imports.

``harness score`` runs over a hundred short pytest sessions: a seeded bug is often caught within a
second of its session's start.  A new interpreter spends about as long again importing pytest,
hypothesis, numpy and the harness before it collects a test.  A fork server (multiprocessing's
``forkserver``: a fresh interpreter, started once, that imports ``PRELOAD`` and then forks a child
per session) starts each session with all of that done.

Each session is still its own process, forked from the server rather than from the caller, so it
inherits none of the caller's threads or state, and nothing passes from one session to the next.
A driver that takes its session down takes only that session down.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import threading
from collections.abc import Sequence

#: What every session of the suites imports, read once by the server.  Only a speed-up: a module
#: missing here is imported by each session itself, and one that fails to import here is skipped.
#: Test modules are not listed, so pytest still imports (and rewrites the asserts of) each one.
PRELOAD = (
    "numpy", "pytest", "hypothesis", "hypothesis.stateful", "xdist.plugin",
    "pygments.lexers.python", "pygments.formatters.terminal",
    "harness.integration.plugin", "harness.integration.golden", "harness.integration.custom_calls",
    "harness.integration.histories", "harness.judging.lockstep", "harness.judging.shrinking",
    "harness.judging.custom_calls", "harness.strategies.domains", "harness.strategies.custom_calls",
    "harness.strategies.mutations", "harness.strategies.layouts", "harness.cts.check", "harness.cts.corpus",
    "reference_driver.device", "harness.drivers.inline",
)

_context = multiprocessing.get_context("forkserver")
_starting = threading.Lock()  # sessions are started from a thread pool; one start at a time
_preload_set = False


def run_pytest(arguments: Sequence[str], cwd: str, timeout: float) -> int:
    """``pytest arguments`` in ``cwd`` with no input and its output discarded; its exit code.
    Raises ``subprocess.TimeoutExpired`` (after killing it) if it runs longer than ``timeout`` s."""
    global _preload_set
    with _starting:
        if not _preload_set:  # before the server first starts: it reads the list only then
            _context.set_forkserver_preload(list(PRELOAD))
            _preload_set = True
        session = _context.Process(target=_session, args=(list(arguments), cwd), name="harness-pytest-session",
                                   daemon=False)
        session.start()
    session.join(timeout)
    if session.exitcode is None:
        session.kill()
        session.join()
        raise subprocess.TimeoutExpired(["pytest", *arguments], timeout)
    return session.exitcode


def _session(arguments: list[str], cwd: str) -> None:
    """In the forked child: what ``python -m pytest arguments`` would do, started in ``cwd``."""
    os.chdir(cwd)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    import pytest

    raise SystemExit(int(pytest.main(arguments)))
