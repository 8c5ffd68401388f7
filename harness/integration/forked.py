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

When the harness asks for the driver's coverage, the child also sends the edges the libraries it
loaded reached (those built with coverage, `harness.tooling.coverage`), numbered as a service
numbers them; they join what the services' replies carried (`harness.service.coverage.RECEIVED`),
refused there unless they are what a service would send.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import os
import select
import shutil
import signal
import tempfile
import time
import traceback
import unittest
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import pytest

from harness.api import errors
from harness.api.packed import LoadedLibrary, mark_confined
from harness.api.errors import DriverCrash, DriverHang
from harness.integration.skips import NotApplicable, NotRun
from harness.service.client import RemoteError
from harness.service.coverage import RECEIVED, ServiceCoverage
from harness.tooling import coverage as native_coverage
from harness.report.attribution import attribute_fault

MARKER = "in_forked_child"


class RaisedInChild(Exception):
    """An exception of a type the harness does not rebuild (a library's own), as it was raised in
    the forked child: ``kind`` is its module and name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


#: The keys beside a test's own that hypothesis keeps its examples under (``ConjectureRunner.sub_key``).
_SUB_KEYS = (b"secondary", b"pareto")


class TestExamples:
    """A hypothesis test's stored examples, lent to the child that runs it.  The child cannot write
    the database (it is outside its sandbox): it reads what was stored under the test's keys,
    fetched here beforehand, and every save or delete it makes comes back as data, applied here
    only under the test's own key (a child cannot touch another test's, or another driver's,
    examples)."""

    __test__ = False  # not a test class, whatever pytest makes of its name

    def __init__(self, database: Any, key: bytes) -> None:
        self.database = database
        self.key = key

    def stored(self) -> dict[bytes, list[bytes]]:
        keys = (self.key, *(self.key + b"." + sub for sub in _SUB_KEYS))
        return {key: list(self.database.fetch(key)) for key in keys}

    def owns(self, key: bytes) -> bool:
        return key == self.key or key.startswith(self.key + b".")

    def apply(self, change: list[str]) -> None:
        """One save or delete the child made (``[operation, key, value]``, base64); a change under
        another key is refused."""
        operation, key, value = change[0], base64.b64decode(change[1]), base64.b64decode(change[2])
        if not self.owns(key):
            raise ValueError(f"a change outside the test's key: {key[:80]!r}")
        if operation == "save":
            self.database.save(key, value)
        elif operation == "delete":
            self.database.delete(key, value)
        else:
            raise ValueError(f"an unknown change {operation!r}")


def run_in_child(call: Callable[[], object], judge: Callable[[BaseException], tuple[BaseException, str]],
                 examples_run: Callable[[], int], count_examples: Callable[[int], None], description: str,
                 deadline: float, examples: TestExamples | None = None,
                 in_child: Callable[[Any], None] = lambda database: None) -> None:
    """Make ``call`` in a forked, confined child and raise here what it raised there (see the
    module).  ``judge(error)``: the exception that carries the verdict, and whose fault it is; a
    child still running ``deadline`` seconds later is killed (SVC-2).  ``examples``: the test's
    stored examples, lent to the child; ``in_child(database)`` runs there before ``call``, with
    the examples to hand to the test (None when none were lent).  What ``call`` says it is doing
    (`entering`) names where a child that died or hung was."""
    stored = examples.stored() if examples is not None else None
    scratch = tempfile.mkdtemp(prefix="driver-harness-child-")
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: make the call, write its outcome, and leave without running anything else
            _child(call, judge, examples_run, stored, in_child, scratch, read_end, write_end)
        os.close(write_end)
        data, closed = _read_until_closed(read_end, time.monotonic() + deadline)
        if not closed:  # still running at the deadline
            os.kill(pid, signal.SIGKILL)
            data = data[:data.rfind(b"\n") + 1]  # the line it was writing when killed is not a message
        _, wait_status = os.waitpid(pid, 0)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # what the child left in its scratch is nobody's
    # The driver's code ran in the child, and could have written to the pipe too: every line is
    # data, read against its shape.  The test's changes to its examples are applied as they come,
    # and are kept even when the child died or hung afterwards.
    outcome, stage, edges_received = None, "", False
    try:
        for line in data.splitlines():
            message = json.loads(line)
            if "change" in message and examples is not None:
                examples.apply(message["change"])
            elif "stage" in message and isinstance(message["stage"], str):
                stage = message["stage"][:300]
            elif "edges" in message:  # a bogus list can mislead the fuzzer's choices, never the verdict
                RECEIVED.add(_edges_sent(message["edges"]) if not edges_received else None)
                edges_received = True
            elif "outcome" in message and outcome is None:
                outcome = message["outcome"]
                count_examples(int(outcome["examples"]))
            else:
                raise ValueError("an unexpected message")
    except (ValueError, KeyError, TypeError, IndexError, binascii.Error):
        raise RemoteError(f"[SVC-1] {description}: the child that made the call sent an outcome the harness cannot "
                          f"read: {data[:200]!r}") from None
    stage = f" while {stage}" if stage else ""
    if not closed:
        raise DriverHang(f"[SVC-2] {description}: the call into the driver's code did not return within {deadline:g} s"
                         f"{stage} (the test's calls made in a child of the harness, which was killed)")
    if os.WIFSIGNALED(wait_status) or outcome is None:
        how = (f"killed by signal {signal.Signals(os.WTERMSIG(wait_status)).name}" if os.WIFSIGNALED(wait_status)
               else f"exited with code {os.WEXITSTATUS(wait_status)}")
        raise DriverCrash(f"[SVC-1] {description}: the process calling the driver's code died ({how}){stage}; the "
                          f"harness made the call in a child of its own, and goes on")
    _raise(outcome)


def open_in_child(library: LoadedLibrary) -> None:
    """Load a packed-function library in the child (see `LoadedLibrary.open`), saying so while it
    loads; when it was built with coverage, the child sends the edges it reached."""
    entering(f"loading {library.path}")
    library.open()
    native_coverage.lend(library.path)
    entering("")


def _edges_sent(value: Any) -> Any:
    """The child's edge list as a reply's edges (a tuple), for `RECEIVED` to judge; anything but
    a list stays as it is, and is refused there."""
    return tuple(value) if type(value) is list else value


def entering(stage: str) -> None:
    """Say, from the child, what the call is doing now ('loading libdriver.so'; '' when done with
    it): a crash or a hang then names it."""
    if _stage_sender is not None:
        _stage_sender(stage)


_stage_sender: Callable[[str], None] | None = None


def _child(call: Callable[[], object], judge: Callable[[BaseException], tuple[BaseException, str]],
           examples_run: Callable[[], int], stored: dict[bytes, list[bytes]] | None,
           in_child: Callable[[Any], None], scratch: str, read_end: int, write_end: int) -> NoReturn:
    global _stage_sender
    status = 0
    try:
        os.close(read_end)
        # A fault in the driver's code ends the child, whatever handler the harness's process
        # had installed for it (the in-process custom-call runner traps SIGSEGV to report it):
        # the parent reads the child's death as the driver's crash.
        for fault in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT):
            signal.signal(fault, signal.SIG_DFL)

        def send(message: dict[str, Any]) -> None:
            unsent = (json.dumps(message) + "\n").encode("utf-8")
            while unsent:
                unsent = unsent[os.write(write_end, unsent):]

        problem = _confine(scratch, keep=write_end)
        if problem:
            outcome: dict[str, Any] = {"kind": "not-run", "fix": "run on Linux 5.13 or newer with Landlock enabled",
                                       "reason": f"the sandbox for the driver's code could not be set up: {problem}"}
        else:
            mark_confined()
            _stage_sender = lambda stage: send({"stage": stage})  # noqa: E731
            in_child(_lent_examples(stored, lambda change: send({"change": change})) if stored is not None else None)
            before = examples_run()
            inherited = native_coverage.lent_paths()
            outcome = _outcome(call, judge)
            outcome["examples"] = examples_run() - before
            if native_coverage.requested():
                _send_edges(send, inherited)
        outcome.setdefault("examples", 0)
        send({"outcome": outcome})
    except BaseException:  # noqa: BLE001 -- nothing may leave the child but its exit status
        status = 70
    finally:
        os._exit(status)


def _send_edges(send: Callable[[dict[str, Any]], None], inherited: list[str]) -> None:
    """Send the edges this child reached.  Coverage only guides the fuzzer: a child that cannot
    read its maps sends none, and its outcome stands (it never becomes the driver's crash)."""
    try:
        edges = _edges_reached(inherited)
    except Exception:  # noqa: BLE001 - see above: no verdict may hang on coverage
        return
    send({"edges": list(edges)})


def _edges_reached(inherited: list[str]) -> tuple[int, ...]:
    """The edges the libraries this child loaded reached (not those its parent had loaded)."""
    reached = ServiceCoverage(())
    loaded = [path for path in native_coverage.lent_paths() if path not in inherited]
    for counters, slot in native_coverage.lent_maps(loaded):
        reached.add_native_map(counters, slot)
    return reached.take()


def _confine(scratch: str, keep: int) -> str:
    """Leave the child nothing of the harness's: every descriptor it inherited, but the pipe its
    outcome goes back through, now reads and writes /dev/null (the records, the reports, the
    service's sockets, pytest's captured output); its temporary files go to its own ``scratch``;
    and, where the kernel offers Landlock, it may write nothing else.  What went wrong ('' when
    nothing did)."""
    null = os.open(os.devnull, os.O_RDWR)
    for descriptor in _open_descriptors():
        if descriptor not in (keep, null):
            try:
                os.dup2(null, descriptor)
            except OSError:  # the listing's own descriptor, closed since
                continue
    os.close(null)
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = scratch
    from harness.tooling.sandbox import SandboxError, confine, landlock_abi

    if landlock_abi() == 0:  # the certificate says the run had no sandbox (`harness.tooling.sandbox`)
        return ""
    try:
        confine([scratch])
    except SandboxError as error:
        return str(error)
    return ""


def _open_descriptors() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(os.sysconf("SC_OPEN_MAX")))


def _lent_examples(stored: dict[bytes, list[bytes]], send: Callable[[list[str]], None]) -> Any:
    """The child's view of a test's examples (see `TestExamples`): what was stored, and its own
    saves and deletes, each sent back as it is made (a child that dies later keeps them)."""
    from hypothesis.database import ExampleDatabase  # here, not at import: this module is a pytest plugin

    class LentExamples(ExampleDatabase):
        def __init__(self) -> None:
            super().__init__()
            self._stored = {key: list(values) for key, values in stored.items()}

        def fetch(self, key: bytes) -> Iterable[bytes]:
            yield from list(self._stored.get(key, ()))

        def save(self, key: bytes, value: bytes) -> None:
            values = self._stored.setdefault(key, [])
            if value not in values:
                values.append(value)
            send(["save", _b64(key), _b64(value)])

        def delete(self, key: bytes, value: bytes) -> None:
            values = self._stored.get(key, [])
            if value in values:
                values.remove(value)
            send(["delete", _b64(key), _b64(value)])

    return LentExamples()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _read_until_closed(fd: int, deadline: float) -> tuple[bytes, bool]:
    """What was written to the pipe ``fd``, and whether its writer closed it before ``deadline``."""
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
            if not ready:
                return b"".join(chunks), False
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks), True
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
    test = pyfuncitem.obj
    examples = _examples_of(test, given)

    def in_child(database: Any) -> None:
        if recorder is not None:  # the harness's progress file is out of the child's reach: the parent writes it
            recorder.progress_path = ""
        if database is not None:  # the test's settings, with its examples lent
            from hypothesis import settings

            test._hypothesis_internal_use_settings = settings(given, database=database)

    def call() -> None:
        for argument in arguments.values():  # loaded here, in the confined child, never in the harness
            if isinstance(argument, LoadedLibrary):
                open_in_child(argument)
        test(**arguments)

    run_in_child(call, lambda error: judged(error, str(pyfuncitem.path)),
                 (lambda: recorder.examples_run) if recorder is not None else (lambda: 0),
                 recorder.count_examples if recorder is not None else (lambda number: None),
                 f"{pyfuncitem.path.name}::{pyfuncitem.name}", deadline, examples, in_child)
    return True


def _examples_of(test: Any, given: Any) -> TestExamples | None:
    """A hypothesis test's stored examples, under the key hypothesis keeps them by (None for a
    plain test, or one with no database)."""
    if given is None or given.database is None or not hasattr(test, "hypothesis"):
        return None
    key = getattr(test, "_hypothesis_internal_database_key", None)
    if key is None:
        from hypothesis.internal.reflection import function_digest

        key = function_digest(test.hypothesis.inner_test)
    return TestExamples(given.database, key)
