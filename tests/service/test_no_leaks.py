"""After a full suite run through the service, nothing is left: processes, descriptors, memfds."""

from __future__ import annotations

import os
import secrets

import pytest


def harness_processes(marker: str) -> set[int]:
    """The live service and zygote processes whose environment carries ``marker``: the ones this
    test's run started (a worker running other tests beside it starts services of its own)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{entry}/environ", "rb") as f:
                environment = f.read().split(b"\0")
        except OSError:
            continue
        if b"harness.service" in command and state != "Z" and marker.encode() in environment:
            found.add(int(entry))
    return found


def descriptors() -> dict[str, str]:
    result = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            result[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return result


@pytest.mark.requirement("SVC-1", "SVC-3")
def test_suite_run_leaves_nothing_behind(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every process the run starts inherits this variable, an orphaned service included.  Each test
    # starts and ends its services whatever its examples: two a test show what a test leaves behind.
    marker = f"HARNESS_LEAK_PROBE={secrets.token_hex(8)}"
    monkeypatch.setenv(*marker.split("="))
    fds_before = descriptors()
    result = pytester.inline_run("--pyargs", "harness.suites.memory_pools", "harness.suites.memory_domains.test_concurrency",
                                 "--harness-profile=ci", "--harness-examples=2", "-p", "no:cacheprovider", "-q")
    passed, skipped, failed = result.countoutcomes()
    assert passed > 0 and not failed
    leaked = {fd: target for fd, target in descriptors().items() if fds_before.get(fd) != target}
    assert not leaked, f"descriptors left open: {leaked}"
    assert not [t for t in leaked.values() if "memfd" in t]
    assert harness_processes(marker) == set(), "a service or zygote process outlived the run"
