"""Tests that call the driver's native code in the harness's own process run in a forked child.

Packed functions (SPEC §6) are the driver's code called in-process through tvm-ffi: a tensor must
cross without a copy (FFI-4, the callee sees the caller's data pointer), so they cannot be called
in another process the way the driver service is.  A test marked ``in_forked_child`` makes its
call in a child forked from the harness: the child has everything the test set up (the loaded
library, the fixtures, the same addresses), and only its outcome comes back, as plain data
(JSON: nothing is unpickled from a process the driver's code ran in).  A child that dies is the
driver's crash (SVC-1), and the run goes on.

The outcome keeps what the harness reads from an exception: its type (rebuilt when it is one of
the harness's errors, a skip, or a built-in exception), message, rule, and whose fault it is,
decided in the child where the traceback is (`harness.report.attribution.fault_of`).
"""

from __future__ import annotations

import builtins
import json
import os
import select
import signal
import time
import traceback
import unittest
from collections.abc import Callable
from typing import Any

import pytest

from harness.api import errors
from harness.api.errors import DriverCrash, DriverHang
from harness.integration.skips import NotApplicable, NotRun
from harness.service.client import RemoteError
from harness.report.attribution import attribute_fault

MARKER = "in_forked_child"


class RaisedInChild(Exception):
    """An exception of a type the harness does not rebuild (a library's own), as it was raised in
    the forked child: ``kind`` is its module and name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def run_in_child(call: Callable[[], object], judge: Callable[[BaseException], tuple[BaseException, str]],
                 examples_run: Callable[[], int], count_examples: Callable[[int], None], description: str,
                 deadline: float) -> None:
    """Make ``call`` in a forked child and raise here what it raised there (see the module).
    ``judge(error)``: the exception that carries the verdict, and whose fault it is; a child
    still running ``deadline`` seconds later is killed (SVC-2)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: make the call, write its outcome, and leave without running anything else
        os.close(read_end)
        status = 0
        try:
            before = examples_run()
            outcome = _outcome(call, judge)
            outcome["examples"] = examples_run() - before
            unsent = json.dumps(outcome).encode("utf-8")
            while unsent:
                unsent = unsent[os.write(write_end, unsent):]
        except BaseException:  # noqa: BLE001 -- nothing may leave the child but its exit status
            status = 70
        finally:
            os._exit(status)
    os.close(write_end)
    data = _read_until_closed(read_end, time.monotonic() + deadline)
    if data is None:  # still running at the deadline
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise DriverHang(f"[SVC-2] {description}: the call into the driver's code did not return within {deadline:g} s "
                         f"(the test's calls made in a child of the harness, which was killed)")
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status) or not data:
        how = (f"killed by signal {signal.Signals(os.WTERMSIG(wait_status)).name}" if os.WIFSIGNALED(wait_status)
               else f"exited with code {os.WEXITSTATUS(wait_status)}")
        raise DriverCrash(f"[SVC-1] {description}: the process calling the driver's code died ({how}); the harness "
                          f"made the call in a child of its own, and goes on")
    try:  # the driver's code ran in the child, and could have written to the pipe too
        outcome = json.loads(data)
        count_examples(int(outcome["examples"]))
    except (ValueError, KeyError, TypeError):
        raise RemoteError(f"[SVC-1] {description}: the child that made the call sent an outcome the harness cannot "
                          f"read: {data[:200]!r}") from None
    _raise(outcome)


def first_in_child(call: Callable[[], object], description: str, deadline: float) -> None:
    """Make ``call`` (the driver's code: a library's static initializers) in a forked child
    first, where a crash cannot take the harness down; raise what it raised (SVC-1 if it died)."""
    run_in_child(call, lambda error: (error, "driver"), lambda: 0, lambda number: None, description, deadline)


def _read_until_closed(fd: int, deadline: float) -> bytes | None:
    """Everything written to the pipe ``fd`` until its writer closed it; None at ``deadline``."""
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def _outcome(call: Callable[[], object], judge: Callable[[BaseException], tuple[BaseException, str]]) -> dict[str, Any]:
    try:
        call()
    except NotApplicable as skip:
        return {"kind": "not-applicable", "capability": skip.capability, "reason": skip.reason}
    except NotRun as skip:
        return {"kind": "not-run", "reason": skip.reason, "fix": skip.fix}
    except pytest.skip.Exception as skip:
        return {"kind": "skipped", "message": str(skip.msg)}
    except unittest.SkipTest as skip:  # hypothesis' own (a replay run with nothing stored): a skip, as in-process
        return {"kind": "skipped", "message": str(skip)}
    except BaseException as error:  # noqa: BLE001 -- the outcome, sent to the parent
        verdict, fault = judge(error)
        return {"kind": "raised", "module": type(verdict).__module__, "name": type(verdict).__qualname__,
                "message": str(verdict), "requirement": getattr(verdict, "requirement", "") or "", "fault": fault,
                "checking": getattr(verdict, "checking", "") or "",
                "traceback": "".join(traceback.format_exception(error))[-6000:]}
    return {"kind": "passed"}


def _raise(outcome: dict[str, Any]) -> None:
    kind = outcome["kind"]
    if kind == "passed":
        return
    if kind == "not-applicable":
        raise NotApplicable(outcome["capability"], outcome["reason"])
    if kind == "not-run":
        raise NotRun(outcome["reason"], outcome["fix"])
    if kind == "skipped":
        pytest.skip(outcome["message"])
    error = _rebuilt(outcome)
    error.add_note(f"raised in the forked child that made the call:\n{outcome['traceback']}")
    attribute_fault(error, outcome["fault"])  # decided in the child, where its traceback was
    raise error


def _rebuilt(outcome: dict[str, Any]) -> BaseException:
    """The exception again: the same type when it is a harness error or a built-in one."""
    module, name, message = outcome["module"], outcome["name"], outcome["message"]
    if module == "harness.api.errors" and issubclass(getattr(errors, name, type(None)), errors.ConformanceError):
        rebuilt = getattr(errors, name)(message, requirement=outcome["requirement"])
        if isinstance(rebuilt, errors.DriverFault):
            rebuilt.checking = outcome.get("checking", "")
        return rebuilt
    if module == "_pytest.outcomes" and name == "Failed":
        return pytest.fail.Exception(message, pytrace=False)
    kind = getattr(builtins, name, None) if module == "builtins" else None
    if isinstance(kind, type) and issubclass(kind, Exception) and not issubclass(kind, BaseExceptionGroup):
        return kind(message)
    return RaisedInChild(f"{module}.{name}", message)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A test marked ``in_forked_child`` makes its call in a forked child (see the module)."""
    if pyfuncitem.get_closest_marker(MARKER) is None:
        return None
    from harness.integration.plugin import state_of
    from harness.integration.recording import judged

    recorder = pyfuncitem.config.pluginmanager.get_plugin("harness-recorder")
    # every call may take up to the driver's deadline; a test makes about two per example
    given = getattr(pyfuncitem.obj, "_hypothesis_internal_use_settings", None)
    deadline = state_of(pyfuncitem.config).timeout * (2 * (given.max_examples if given is not None else 1) + 10)
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    run_in_child(lambda: pyfuncitem.obj(**arguments), lambda error: judged(error, str(pyfuncitem.path)),
                 (lambda: recorder.examples_run) if recorder is not None else (lambda: 0),
                 recorder.count_examples if recorder is not None else (lambda number: None),
                 f"{pyfuncitem.path.name}::{pyfuncitem.name}", deadline)
    return True
