"""A driver service that could not be started again is not closed for good, and a new service on a
reused process id is not judged by an earlier process's exit."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from harness.api.errors import DriverCrash
from harness.judging.builders import binary_model, pack_request
from harness.service import DriverService, wire
from harness.service.messages import Exited, Spawned
from harness.service.supervisor import START_BACKOFF_S, _Zygote

DRILLS = Path(__file__).with_name("drills.py")


def _executes(service: DriverService) -> None:
    model = binary_model(dims=(4,))
    request, *memories = pack_request(model, [np.ones(4, np.float32)] * 2)
    try:
        service.device.prepare_model(model).execute(request)
    finally:
        for memory in memories:
            memory.close()


def test_a_failed_restart_is_not_the_end_of_the_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = tmp_path / "cannot-start"
    monkeypatch.setenv("DRILL_START_FLAG", str(flag))
    service = DriverService(f"{DRILLS}:cannot_start_while_flagged", timeout=5)
    try:
        _executes(service)
        flag.touch()
        with pytest.raises(DriverCrash) as failed:
            service.restart()
        assert "could not be started again" in str(failed.value) and "cannot start now" in str(failed.value)
        # Each call meanwhile fails at once with a failure of its own: its call, and the start that failed
        model = binary_model(dims=(4,))
        for _ in range(3):
            started = time.monotonic()
            with pytest.raises(DriverCrash) as refused:
                service.device.prepare_model(model)
            message = str(refused.value)
            assert message.startswith("[SVC-1]") and "prepare_model" in message, message
            assert "could not be started again" in message and "cannot start now" in message, message
            assert "was closed" not in message
            assert time.monotonic() - started < START_BACKOFF_S * 4  # no start waited out per call
        flag.unlink()
        deadline = time.monotonic() + 30  # past the back-off, a later call starts a service that works
        while True:
            try:
                _executes(service)
                break
            except DriverCrash as error:
                assert "was closed" not in str(error) and time.monotonic() < deadline, str(error)
                time.sleep(0.1)
    finally:
        service.close()


def test_a_spawned_process_is_never_judged_by_an_earlier_process_exit_with_its_pid() -> None:
    """The zygote says `Exited(pid)` when a service ends, and `Spawned(request, pid)` for a new one: a
    later service given the same pid is running, whatever the exit recorded for the earlier one."""
    zygote = _Zygote.__new__(_Zygote)  # its reader alone, fed as a zygote would feed it
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    zygote.sock, zygote._cond, zygote._spawned, zygote._exits, zygote._closed, zygote.pid = \
        theirs, threading.Condition(), {}, {}, False, None
    reader = threading.Thread(target=zygote._read, daemon=True)
    reader.start()
    try:
        for message in (Exited(4242, 9), Spawned(7, 4242)):
            data, fds = wire.encode(message)
            wire.send(ours, data, fds)
        with zygote._cond:
            assert zygote._cond.wait_for(lambda: 7 in zygote._spawned, timeout=10)
        assert zygote.exit_status(4242) is None  # the new process is running
        data, fds = wire.encode(Exited(4242, 0))
        wire.send(ours, data, fds)
        assert zygote.exit_status(4242, timeout=10) == 0  # and its own exit is seen
    finally:
        ours.close()
        reader.join(timeout=10)
        theirs.close()


NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def test_a_new_service_on_a_reused_pid_is_not_taken_for_a_crash() -> None:
    """The kernel gives a new service the pid of one that was killed (set up with ns_last_pid, which
    needs CAP_SYS_ADMIN).  The calls on the new one's objects are answered: the earlier exit recorded
    for that pid made it look dead, and a call on its prepared model a DriverCrash."""
    if not os.access(NS_LAST_PID, os.W_OK):
        pytest.skip(f"choosing the next pid needs a writable {NS_LAST_PID} (CAP_SYS_ADMIN)")
    service = DriverService("reference", timeout=5)
    model = binary_model(dims=(4,))
    request, *memories = pack_request(model, [np.ones(4, np.float32)] * 2)
    try:
        for attempt in range(30):  # another process on the machine may take the pid first: try again
            killed = service.running_pid()
            os.kill(killed, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while service.running and time.monotonic() < deadline:  # its exit recorded
                time.sleep(0.01)
            with open(NS_LAST_PID, "w") as last:  # the start's own thread (its output's reader) takes one too
                last.write(str(killed - 1 - attempt % 3))
            prepared = service.device.prepare_model(model)  # starts a new service: on the same pid, with luck
            if service.pid == killed:
                break
        else:
            pytest.skip("another process took the pid every time")
        starts = service.starts
        prepared.execute(request)  # before: "the object belongs to a driver service that was replaced"
        assert service.starts == starts and service.pid == killed
    finally:
        for memory in memories:
            memory.close()
        service.close()
