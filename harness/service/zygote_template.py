"""A process that forks driver zygotes, for pytest sessions forked from a warm server.

A zygote started as a new interpreter spends about half a second of CPU importing numpy, the
plugin registry and the service before it loads its driver.  ``harness score`` starts three or
four per seeded bug (its run, a failure's rerun, the reproducer) and six per correct variant.  The
warm server (`harness.integration.warm_sessions`) forks this template first, before it imports
pytest: the template holds what a zygote imports and nothing more, so a zygote forked from it has
the address space a new one would have (the service's memory limit, RLIMIT_AS, counts all of it),
and it stays single-threaded, so forking it is safe.

Each session forked from that server inherits `_requests`, one end of a SOCK_SEQPACKET pair;
anything else (a vendor's ``pytest``, an xdist worker, a script) has none, and starts its zygote
as a new interpreter.  The template never answers: the zygote it forks says `ZygoteStarted` on its
own control socket, as one started cold does, and a zygote that could not start closes it.

    session -> template   StartZygote(driver, cwd, environment)   fds: [control socket, output]

The template ends when no session and no server holds the other end any more.  A driver's
service never holds it (each zygote closes it first), so a driver cannot ask for zygotes.
"""

from __future__ import annotations

import faulthandler
import functools
import os
import select
import signal
import socket
import sys
import time
import traceback

from harness.service import wire, zygote
from harness.service.messages import TO_TEMPLATE, StartZygote, UnknownMessage

#: This process's end of the template's socket, if a template was forked for it (or its parent).
_requests: socket.socket | None = None
#: The template's process id, in the process that forked it.
_template: int | None = None
#: The interpreter's own settings (``PYTHON*`` variables: the path, the hash seed, warnings...) the
#: template started with.  A new interpreter reads them at its start, a fork cannot take them on: a
#: session whose settings differ starts its zygote cold.
_interpreter_settings: dict[str, str] = {}
#: Whether the template's ``sys.path`` starts with the directory it started in (``python -m``
#: puts it there): a zygote's then starts with its session's directory instead.
_directory_first = False


def start() -> None:
    """Fork the template: once, in a single-threaded process that has not imported pytest."""
    global _requests, _interpreter_settings, _directory_first, _template
    zygote.preload()
    _directory_first = bool(sys.path) and sys.path[0] == os.getcwd()
    ours, theirs = wire.socketpair()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            ours.close()
            _keep_only(theirs.fileno())
            code = _serve(theirs)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    theirs.close()
    _requests, _interpreter_settings, _template = ours, _python_settings(), pid


def stop(timeout: float = 10.0) -> None:
    """Let go of the template (from the process that forked it, once no session will ask it for
    more) and wait for it to end: it ends when nothing holds its socket any more."""
    global _requests, _template
    requests, pid, _requests, _template = _requests, _template, None, None
    if requests is not None:
        requests.close()
    if pid is None:
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            return
        if time.monotonic() > deadline:  # a session forked earlier still holds it: it goes with them
            return
        time.sleep(0.01)


def start_zygote(driver: str, control: int, output: int, environment: dict[str, str]) -> bool:
    """Ask the template for a zygote of ``driver`` on the socket ``control``, writing to
    ``output``, as this process would start one now with ``environment``; False if there is no
    template to ask."""
    if _requests is None or _python_settings() != _interpreter_settings:
        return False
    data, _ = wire.encode(StartZygote(driver, os.getcwd(), tuple(environment.items())))
    try:
        wire.send(_requests, data, [control, output])
    except OSError:  # the template is gone: the caller starts its zygote cold
        return False
    return True


def _python_settings() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name.startswith("PYTHON")}


def _keep_only(fd: int) -> None:
    """Close every descriptor the server had but ``fd`` (its request and reply pipes above all:
    a reply pipe held open here would hide the server's end from its caller)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for standard in (0, 1, 2):
        os.dup2(devnull, standard)
    os.close(devnull)
    os.closerange(3, fd)
    os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))


def _serve(requests: socket.socket) -> int:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        ready, _, _ = select.select([requests], [], [], 1.0)
        _reap()
        if not ready:
            continue
        received = wire.receive(requests)
        if received is None:
            return 0  # no session and no server is left to ask
        data, fds = received
        try:
            message, _ = wire.decode(data, [], TO_TEMPLATE, trusted=True)
        except UnknownMessage:
            message = None
        if not isinstance(message, StartZygote) or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        try:
            pid = os.fork()
        except OSError:
            pid = -1  # the zygote's control socket closes below: its session reads that it exited
        if pid == 0:
            requests.close()
            zygote.run_forked(fds[1], functools.partial(_zygote, message, fds[0]))
        for fd in fds:
            os.close(fd)


def _reap() -> None:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def _zygote(message: StartZygote, control: int) -> int:
    """A forked zygote's body (`zygote.run_forked`): what ``python -X faulthandler -m
    harness.service.zygote`` started by the session would be."""
    os.chdir(message.cwd)
    os.environ.clear()
    os.environ.update(dict(message.environment))
    if _directory_first:
        sys.path[0] = os.getcwd()
    faulthandler.enable()
    return zygote.run(message.driver, socket.socket(fileno=control))
