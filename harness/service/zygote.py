"""The zygote: imports the driver once, then forks a fresh service process per request.

    python -m harness.service.zygote --driver SPEC --fd N

Starting a Python process and importing numpy and the driver's plugin takes ~0.4 s;
forking a process that already has them takes milliseconds.  That matters when a
driver crashes on many generated examples: hypothesis needs a fresh service for each
example it runs while shrinking (Android starts app processes the same way).

The zygote stays single-threaded so that forking it is safe.  Control messages on the
inherited SOCK_SEQPACKET descriptor:

    zygote  -> harness  ZygoteStarted(pid)       first, before it loads the driver
    harness -> zygote   Spawn(request, listen)   fds: [service socket, the write end of its output pipe]
    zygote  -> harness  Spawned(request, pid) | SpawnFailed(request, reason)
    zygote  -> harness  Exited(pid, wait_status)   whenever a service process ends

The zygote is a child subreaper: what a service leaves running (helpers in their own session,
daemons that forked twice) is reparented to it, and killed when a service ends or the harness
goes away.
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import functools
import os
import resource
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import NoReturn

from harness.service import wire
from harness.service.messages import (TO_ZYGOTE, Exited, Message, Spawn, Spawned, SpawnFailed, UnknownMessage,
                                      ZygoteStarted)


#: The directories a driver's processes may write beneath, as the harness asks (``os.pathsep``
#: between them); unset: no sandbox (the kernel offers none).
SANDBOX_ENVIRONMENT = "DRIVER_HARNESS_SANDBOX_WRITABLE"
#: The labels of the plugin that registers the driver and of those that declare for it, one a line
#: (`harness.drivers.catalog`); unset: all of them.
PLUGIN_ENVIRONMENT = "DRIVER_HARNESS_PLUGIN"


def run_forked(output: int, body: Callable[[], int]) -> NoReturn:
    """The whole life of a process just forked: a session of its own, its output (stdout and
    stderr) into ``output``, and ``body``'s result as its exit code (3 if it raised, after the
    traceback)."""
    code = 3
    try:
        os.setsid()
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        code = body()
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _service(spec, service_fd: int, listen: str, memory_limit: int) -> int:
    """A forked service's body (`run_forked`): the driver, created and served."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    if memory_limit > 0:  # a leak or a huge allocation fails as MemoryError in the call that made it
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    from harness.service.worker import serve

    # A factory that hangs is asked for its stacks like any hung call (serve registers this again)
    faulthandler.register(signal.SIGUSR1, sys.stderr, all_threads=True)
    try:
        device = spec.create()
    except Exception as error:
        print(f"driver service: cannot create driver {spec.name!r}: {error}", file=sys.stderr)
        return 3
    return serve(device, service_fd, listen, spec.name)


_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    """Processes a service starts and leaves behind (daemons that forked twice, helpers in their
    own session) are reparented to this process instead of init, so it can end them."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the services' own process groups still go
        pass


def _children_of_this_process() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


def _end_orphans(services: set[int]) -> None:
    """Kill every child of the zygote that is not a live service: what services left behind.
    (A service's helpers that stayed in its process group died with it already.)"""
    for pid in _children_of_this_process():
        if pid in services:
            continue
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _reap(control: socket.socket, services: set[int]) -> None:
    ended = False
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        if pid in services:
            services.discard(pid)
            ended = True
            _send(control, Exited(pid, status))
    if ended:
        _end_orphans(services)


def _send(control: socket.socket, message: Message) -> None:
    data, fds = wire.encode(message)
    try:
        wire.send(control, data, fds)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", required=True)
    parser.add_argument("--fd", type=int, required=True)
    options = parser.parse_args(argv)
    return run(options.driver, socket.socket(fileno=options.fd))


def preload() -> None:
    """What a zygote imports before it loads its driver: imported once here, inherited by every
    service it forks (and by every zygote a template forks)."""
    import numpy  # noqa: F401

    from harness.drivers import registry  # noqa: F401
    from harness.service import worker  # noqa: F401


def run(driver: str, control: socket.socket) -> int:
    """Load ``driver`` and fork a service per `Spawn` on ``control`` until the harness closes it
    (started as ``python -m harness.service.zygote``, or forked from `zygote_template`)."""
    _send(control, ZygoteStarted(os.getpid()))  # the harness's handle on a zygote it did not start itself
    preload()
    writable = os.environ.get(SANDBOX_ENVIRONMENT)
    if writable is not None:  # before any of the driver's code is imported, for good
        from harness.tooling.sandbox import SandboxError, confine

        try:
            confine(writable.split(os.pathsep))
        except SandboxError as error:
            print(f"driver zygote: the sandbox could not be set up: {error}", file=sys.stderr)
            return 3
    from harness.drivers.registry import load_plugins, load_registry
    from harness.service import custom_calls

    try:
        plugin = os.environ.get(PLUGIN_ENVIRONMENT)
        # Only the driver's own plugins: another installed plugin's code has no business in its process.
        registry = load_plugins(plugin.split("\n")) if plugin else load_registry()
        spec = registry.resolve(driver)
        custom_calls.DRIVER_REGISTRY = registry  # its declarations too: a file's hooks are registered in it alone
    except Exception as error:
        print(f"driver service: cannot load {driver!r}: {error}", file=sys.stderr)
        return 3

    _become_subreaper()
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([control.fileno(), wake_read], [], [], 1.0)
        if wake_read in ready:
            while True:
                try:
                    if not os.read(wake_read, 512):
                        break
                except BlockingIOError:
                    break
        _reap(control, children)
        if control.fileno() not in ready:
            continue
        received = wire.receive(control)
        if received is None:
            break
        data, fds = received
        try:
            message, _ = wire.decode(data, [], TO_ZYGOTE, trusted=True)
        except UnknownMessage as error:
            print(f"driver zygote: refused a message: {error}", file=sys.stderr)
            message = None
        if not isinstance(message, Spawn) or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        request_id, listen, memory_limit = message
        service_fd, stderr_fd = fds
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as error:
            _send(control, SpawnFailed(request_id, f"fork failed: {error}"))
            os.close(service_fd)
            os.close(stderr_fd)
            continue
        if pid == 0:
            control.close()
            os.close(wake_read)
            os.close(wake_write)
            run_forked(stderr_fd, functools.partial(_service, spec, service_fd, listen, memory_limit))
        os.close(service_fd)
        os.close(stderr_fd)
        children.add(pid)
        _send(control, Spawned(request_id, pid))
    _end_orphans(set())  # the harness went away: no service outlives it, nor anything it started
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.01)
        except ChildProcessError:  # every child is reaped
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
