"""After a full suite run through the service, nothing is left: processes, descriptors, memfds."""

from __future__ import annotations

import os

import pytest


def harness_processes() -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"harness.service" in command and state != "Z":
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
def test_suite_run_leaves_nothing_behind(pytester: pytest.Pytester) -> None:
    processes_before = harness_processes()
    fds_before = descriptors()
    result = pytester.inline_run("--pyargs", "harness.suites.memory_pools", "harness.suites.memory_domains.test_concurrency",
                                 "--harness-profile=ci", "-p", "no:cacheprovider", "-q")
    passed, skipped, failed = result.countoutcomes()
    assert passed > 0 and not failed
    leaked = {fd: target for fd, target in descriptors().items() if fds_before.get(fd) != target}
    assert not leaked, f"descriptors left open: {leaked}"
    assert not [t for t in leaked.values() if "memfd" in t]
    assert harness_processes() <= processes_before, "a service or zygote process outlived the run"
