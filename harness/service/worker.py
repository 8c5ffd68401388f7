"""The driver service process: hosts one driver and serves Driver API calls.

    python -m harness.service.worker --driver SPEC --fd N --listen ADDRESS

Calls arrive on the inherited SOCK_SEQPACKET descriptor (the first client) and on
connections accepted at ADDRESS (other clients); a pool of threads receives on each
connection and handles what it receives, so calls run concurrently as a HAL service
serves binder calls.  Objects a client creates (prepared models,
buffers) are kept per connection and released when it closes.  SIGUSR1 dumps every
thread's stack to stderr (the harness asks for it before killing a hung service).

This module imports nothing from pytest or the harness plugin.
"""

from __future__ import annotations

import argparse
import faulthandler
import itertools
import os
import pickle
import signal
import socket
import struct
import sys
import threading
import traceback
from typing import Any

from harness.api.hal import DriverError, support_answers
from harness.api.memory import Memory
from harness.service import wire
from harness.service.coverage import COVERAGE_ENVIRONMENT, ServiceCoverage, driver_paths
from harness.service.messages import (
    METHODS, TO_SERVICE, Call, Failure, HeldKind, Reply, ServiceObject, Shutdown, UnknownMessage, call_id_of,
)
from harness.tooling import coverage as native_coverage

_POOL_THREADS = 16
_SERVICE, _DEVICE = ServiceObject.SERVICE, ServiceObject.DEVICE  # compared by identity on every call


class _Connection:
    def __init__(self, service: Service, sock: socket.socket, primary: bool) -> None:
        self.service = service
        self.sock = sock
        self.primary = primary
        self._readers_lock = threading.Lock()
        self.objects: dict[int, tuple[HeldKind, Any]] = {}
        self.retained: dict[int, list[Memory]] = {}
        self.ids = itertools.count(1)

    # ----------------------------------------------------------------- object ids

    def _load_object(self, pid: tuple) -> Any:
        if pid[0] == "object":
            held = self.objects.get(pid[1])
            return held[1] if held is not None else wire.Foreign(f"id {pid[1]} unknown to this connection")
        if pid[0] == "foreign":
            return wire.Foreign(pid[1])
        raise ValueError(f"unknown reference {pid!r}")

    def _register(self, obj: Any, kind: HeldKind) -> wire.ObjectRef:
        number = next(self.ids)
        self.objects[number] = (kind, obj)
        return wire.ObjectRef(("object", number, kind.value))

    # ----------------------------------------------------------------- serving

    def serve(self, threads: int = _POOL_THREADS) -> None:
        """Serve with ``threads`` threads that all receive: each call is handled by the
        thread that received it (no hand-off), and several calls run at once."""
        self._readers_left = threads
        workers = [threading.Thread(target=self._receive_and_handle, daemon=True, name=f"driver-call-{i}")
                   for i in range(threads)]
        for worker in workers:
            worker.start()

    def _receive_and_handle(self) -> None:
        for received in wire.messages(self.sock):
            self._handle(*received)
        with self._readers_lock:
            self._readers_left -= 1
            last = self._readers_left == 0
        if last:
            self.close()

    def _handle(self, data: bytes, fds: list[int]) -> None:
        call_id = None
        memories: list[Memory] = []
        reply: Reply | None = None
        try:
            message, memories = wire.decode(data, fds, TO_SERVICE, self._load_object, trusted=True)
            if type(message) is Call:
                call_id = message.call_id
                for number in message.drops:  # the client let go of these objects
                    self._drop(number)
                reply = tuple.__new__(Reply, (call_id, True, self._call(message, memories), ()))  # Reply(...), without its Python __new__
            else:  # TO_SERVICE is closed: Shutdown is all that is left
                assert isinstance(message, Shutdown)
                self.service.stop()
        except DriverError as error:
            reply = Reply(call_id, False, error) if call_id is not None else None
        except UnknownMessage as error:  # refused, naming what came; the sender learns why if it can
            call_id = call_id if call_id is not None else _call_id_in(data)
            reply = Reply(call_id, False, Failure(type(error).__name__, str(error), "")) if call_id is not None else None
            if reply is None:
                print(f"driver service: refused a message: {error}", file=sys.stderr)
        except BaseException as error:  # reported to the harness with its traceback, never swallowed
            if call_id is not None:
                reply = Reply(call_id, False, Failure(type(error).__name__, str(error), traceback.format_exc()))
            else:
                traceback.print_exc()
        finally:
            for memory in memories:
                if not any(memory in kept for kept in self.retained.values()):
                    memory.close()
        if reply is not None:
            coverage = self.service.coverage
            if coverage is not None:
                reply = tuple.__new__(Reply, (*reply[:3], coverage.take()))
            self._reply(reply)

    def _call(self, call: Call, memories: list[Memory]) -> Any:
        kind, obj = self._target(call.target)
        method = call.method
        if method not in METHODS[kind]:
            raise UnknownMessage(f"{kind} has no method {method!r}; it has " + ", ".join(sorted(METHODS[kind])))
        if kind is _SERVICE:
            if method == "hello":
                device = self.service.device
                return (device.name, device.version, device.capabilities())
            return None  # ping: the service's own round trip, without the driver (benchmarks)
        result = getattr(obj, method)(*call.args)
        if kind is _DEVICE:
            if method == "prepare_model":
                if result is None:  # else its first execution fails, blaming a None that has no execute
                    raise TypeError("prepare_model returned None; the Driver API returns the prepared model")
                ref = self._register(result, HeldKind.PREPARED_MODEL)
                self.retained[ref[1]] = list(memories)  # a driver may keep using a model's pools
                return ref
            if method == "allocate":
                if not (isinstance(result, (tuple, list)) and len(result) == 2):
                    raise TypeError(f"allocate returned {type(result).__name__}; the Driver API returns (buffer, token)")
                buffer, token = result
                return (self._register(buffer, HeldKind.BUFFER), token)
            if method == "get_supported_operations":
                # numpy code answers with numpy bools or a bool array: sent as the same answer in Python
                # bools (the harness unpickles no array from the service); anything else goes as it is
                answers = support_answers(result)
                return answers if answers is not None else result
        return result

    def _target(self, target: Any) -> tuple[str, Any]:
        """The kind and object a call's target names; an unknown one is refused."""
        held = self.objects.get(target) if type(target) is int else self.service.named.get(target)
        if held is not None:
            return held
        if target == ServiceObject.CUSTOM_CALLS:
            return ServiceObject.CUSTOM_CALLS, self.service.custom_calls()
        if type(target) is int:
            raise UnknownMessage(f"object {target} is not held for this connection (dropped, or never made)")
        raise UnknownMessage(f"unknown call target {target!r}; targets are held object numbers and "
                             + ", ".join(member.value for member in ServiceObject))

    def _drop(self, number: int) -> None:
        self.objects.pop(number, None)
        for memory in self.retained.pop(number, []):
            memory.close()

    def _reply(self, reply: Reply) -> None:
        try:
            data, fds = wire.encode(reply)
        except Exception as error:  # an unpicklable result is the driver's bug; report it as such
            data, fds = wire.encode(Reply(reply.call_id, False, Failure(
                type(error).__name__, f"the driver returned a value that cannot cross the service boundary: {error}", "")))
        try:  # no lock: a SOCK_SEQPACKET record is queued whole, so replies from threads never interleave
            wire.send(self.sock, data, fds)
        except OSError:
            pass  # the client is gone; its connection closes on the next receive

    def close(self) -> None:
        for kind, obj in list(self.objects.values()):
            if kind == HeldKind.BUFFER:
                try:
                    obj.release()  # a client that goes away frees its buffers
                except Exception:
                    traceback.print_exc()
        self.objects.clear()
        for kept in self.retained.values():
            for memory in kept:
                memory.close()
        self.retained.clear()
        self.sock.close()
        if self.primary:
            self.service.stop()


class Service:
    def __init__(self, device: Any, driver: str = "") -> None:
        self.device = device
        self.driver = driver
        self.stopped = threading.Event()
        # The named objects every connection may call (custom calls are loaded at first use).
        self.named: dict[str, tuple[str, Any]] = {_DEVICE.value: (_DEVICE, device), _SERVICE.value: (_SERVICE, None)}
        # the driver's coverage, when the harness asked for it (its fuzz loop is guided by it)
        self.coverage = (ServiceCoverage(driver_paths(device)) if os.environ.get(COVERAGE_ENVIRONMENT) == "1"
                         else None)
        if self.coverage is not None:  # the maps of instrumented libraries loaded here, now and later
            native_coverage.subscribe(self.coverage.add_native_map)

    def custom_calls(self) -> Any:
        """The driver's custom-call targets, loaded (and built) at first use."""
        from harness.service.custom_calls import executor_for

        return executor_for(self.driver)

    def accept_forever(self, listener: socket.socket) -> None:
        while not self.stopped.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            if not _same_user(sock):  # checked before a single byte is read, let alone decoded
                sock.close()
                continue
            _Connection(self, sock, primary=False).serve()

    def stop(self) -> None:
        self.stopped.set()


def _call_id_in(data: bytes) -> int | None:
    """The call id of a message that was refused, if it decodes to a tuple that has one."""
    try:
        return call_id_of(pickle.loads(data))
    except Exception:
        return None


def _same_user(sock: socket.socket) -> bool:
    """Whether the peer of an accepted connection runs as this process's user (SO_PEERCRED)."""
    try:
        credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid == os.getuid()


def serve(device: Any, fd: int, listen: str, driver: str = "") -> int:
    """Serve ``device`` on the connected socket ``fd`` and on ``listen``; returns when the
    primary client closes or asks for shutdown.

    ``listen`` is a filesystem path in a directory only this user can enter (the harness made it
    0700), never an abstract socket name, which any process on the machine could connect to; and
    a connection whose peer is another user is closed before anything is read from it.
    """
    faulthandler.enable(sys.stderr, all_threads=True)
    faulthandler.register(signal.SIGUSR1, sys.stderr, all_threads=True)
    primary = socket.socket(fileno=fd)
    service = Service(device, driver)
    if service.coverage is not None:  # before the service's threads start: each inherits the tracing
        service.coverage.start()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(listen)
    os.chmod(listen, 0o600)
    listener.listen(16)
    threading.Thread(target=service.accept_forever, args=(listener,), daemon=True).start()
    _Connection(service, primary, primary=True).serve()
    service.stopped.wait()
    listener.close()
    try:
        os.unlink(listen)
    except OSError:
        pass
    sys.stderr.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one service directly (the harness normally forks services from a zygote)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", required=True)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--listen", required=True)
    options = parser.parse_args(argv)
    from harness.drivers.registry import load_registry

    try:
        device = load_registry().resolve(options.driver).create()
    except Exception as error:
        print(f"driver service: cannot load {options.driver!r}: {error}", file=sys.stderr)
        return 3
    code = serve(device, options.fd, options.listen, options.driver)
    os._exit(code)  # driver threads may still be blocked; the process ends here regardless


if __name__ == "__main__":
    sys.exit(main())
