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
import signal
import socket
import struct
import sys
import threading
import traceback
from typing import Any

from harness.hal import DriverError
from harness.memory import Memory
from harness.service import wire

_POOL_THREADS = 16
CUSTOM_CALLS = -1  # the target id of the driver's custom-call executor


class _Connection:
    def __init__(self, service: Service, sock: socket.socket, primary: bool) -> None:
        self.service = service
        self.sock = sock
        self.primary = primary
        self._readers_lock = threading.Lock()
        self.objects: dict[int, Any] = {}
        self.retained: dict[int, list[Memory]] = {}
        self.ids = itertools.count(1)

    # ----------------------------------------------------------------- object ids

    def _load_object(self, pid: tuple) -> Any:
        if pid[0] == "object":
            obj = self.objects.get(pid[1])
            return obj if obj is not None else wire.Foreign(f"id {pid[1]} unknown to this connection")
        if pid[0] == "foreign":
            return wire.Foreign(pid[1])
        raise ValueError(f"unknown reference {pid!r}")

    def _register(self, obj: Any, kind: str) -> wire.ObjectRef:
        number = next(self.ids)
        self.objects[number] = obj
        return wire.ObjectRef(("object", number, kind))

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
        try:
            message, memories = wire.decode(data, fds, self._load_object)
            kind, call_id = message[0], message[1]
            if kind == "shutdown":
                self.service.stop()
                return
            if kind == "drop":  # the client let go of these objects
                for number in message[2]:
                    self._drop(number)
                return
            _, _, target, method, args = message
            reply = ("reply", call_id, True, self._call(target, method, args, memories))
        except DriverError as error:
            reply = ("reply", call_id, False, error)
        except BaseException as error:  # reported to the harness with its traceback, never swallowed
            reply = ("reply", call_id, False, ("error", type(error).__name__, str(error), traceback.format_exc()))
        finally:
            for memory in memories:
                if not any(memory in kept for kept in self.retained.values()):
                    memory.close()
        if call_id is not None:
            self._reply(reply)

    def _call(self, target: int, method: str, args: tuple, memories: list[Memory]) -> Any:
        device = self.service.device
        if method == "hello":
            return (device.name, device.version, device.capabilities())
        if method == "ping":  # the service's own round trip, without the driver (benchmarks)
            return None
        if target == CUSTOM_CALLS:
            return getattr(self.service.custom_calls(), method)(*args)
        obj = device if target == 0 else self.objects[target]
        result = getattr(obj, method)(*args)
        if method == "prepare_model":
            ref = self._register(result, "prepared_model")
            self.retained[ref[1]] = list(memories)  # a driver may keep using a model's pools
            return ref
        if method == "allocate":
            buffer, token = result
            return (self._register(buffer, "buffer"), token)
        return result

    def _drop(self, number: int) -> None:
        self.objects.pop(number, None)
        for memory in self.retained.pop(number, []):
            memory.close()

    def _reply(self, reply: tuple) -> None:
        try:
            data, fds = wire.encode(reply)
        except Exception as error:  # an unpicklable result is the driver's bug; report it as such
            data, fds = wire.encode(("reply", reply[1], False, ("error", type(error).__name__,
                                     f"the driver returned a value that cannot cross the service boundary: {error}", "")))
        try:  # no lock: a SOCK_SEQPACKET record is queued whole, so replies from threads never interleave
            wire.send(self.sock, data, fds)
        except OSError:
            pass  # the client is gone; its connection closes on the next receive

    def close(self) -> None:
        for obj in list(self.objects.values()):
            if hasattr(obj, "release") and hasattr(obj, "copy_to"):
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

    def custom_calls(self) -> Any:
        """The driver's custom-call targets, loaded (and built) at first use."""
        from harness.custom_calls.executor import executor_for

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
    from harness.registry import load_registry

    try:
        device = load_registry().resolve(options.driver).create()
    except Exception as error:
        print(f"driver service: cannot load {options.driver!r}: {error}", file=sys.stderr)
        return 3
    code = serve(device, options.fd, options.listen, options.driver)
    os._exit(code)  # driver threads may still be blocked; the process ends here regardless


if __name__ == "__main__":
    sys.exit(main())
