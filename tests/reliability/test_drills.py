"""Drills: a broken or hostile driver gets a classified FAIL quickly and leaves nothing behind (issue 16).

Each drill runs the memory-pool suite (``ci`` profile) against one driver of ``drills.py`` in a
pytest process of its own, then checks three things:

- the outcome class: which failures, of which type, naming which requirement;
- the time to verdict, as counts (service starts and calls, from the run's record), never as a
  timed assertion: a driver that crashes, hangs or raises on every call trips the circuit breaker
  after a handful of service starts, whatever the number of calls;
- that nothing is left behind: no process the driver started, no file in the run's temporary
  directory, no entry in /dev/shm.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from harness.api.errors import DriverFault
from harness.integration.own_config import own_pytest_options
from harness.service.breaker import FIRST_PROBE_AFTER, THRESHOLD

DRILLS = Path(__file__).with_name("drills.py")
SUITE = "harness.suites.memory_pools"
# Few examples and no shrinking: a drill is about how a fault is handled, not about finding it
# (benchmarks/bench_faults.py times whole ci and certify runs, shrinking included).


def _processes_with(marker: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in command:
                found.append(f"{entry}: {command}")
    return found


class Drill:
    def __init__(self, name: str, tmp_path: Path, *options: str, tests: tuple[str, ...] = (SUITE,), shrink: bool = False) -> None:
        self.marker = f"drill-{secrets.token_hex(6)}"
        self.temporary = tmp_path / "tmp"
        self.temporary.mkdir()
        record = tmp_path / "record.jsonl"
        shm_before = set(os.listdir("/dev/shm"))
        env = {**os.environ, "TMPDIR": str(self.temporary), "DRILL_MARKER": self.marker}
        done = subprocess.run([sys.executable, "-m", "pytest", *own_pytest_options(), "-q", "--pyargs", *tests,
                               f"--driver={DRILLS}:{name}", "--harness-profile=ci", f"--harness-record={record}",
                               "--harness-examples=4", *(() if shrink else ("--harness-no-shrink",)), *options], capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
        self.code, self.output = done.returncode, done.stdout + done.stderr
        lines = [json.loads(line) for line in record.read_text().splitlines() if line.strip()] if record.exists() else []
        self.tests = [r for r in lines if "id" in r]
        self.failures = [r for r in self.tests if r["outcome"] == "failed"]
        self.service = next((r["service"] for r in lines if "service" in r), None)
        # Chromium's own entries are another test's (the fuzz report's rendering runs a browser beside
        # this one under xdist); no drill starts a browser.
        self.left_in_shm = {name for name in set(os.listdir("/dev/shm")) - shm_before
                            if not name.startswith(".org.chromium.")}

    def failure_types(self) -> set[str]:
        return {r["error_type"] for r in self.failures}

    def assert_nothing_left_behind(self) -> None:
        assert _processes_with(self.marker) == [], "processes the driver started survived the run"
        assert sorted(p.name for p in self.temporary.iterdir()) == [], "the run left temporary files"
        assert self.left_in_shm == set(), "the run left entries in /dev/shm"

    def assert_bounded(self) -> None:
        """Service starts stay within the breaker's threshold and its probes, whatever the calls."""
        assert self.service is not None, self.output[-2000:]
        probes = math.ceil(math.log2(self.service["calls"] / FIRST_PROBE_AFTER + 1)) + 1
        assert self.service["starts"] <= 1 + THRESHOLD + probes, (self.service, self.output[-2000:])

    def explain(self) -> str:
        return f"exit {self.code}; failures {[(r['id'], r['error_type'], r['rule']) for r in self.failures][:5]}\n" \
               f"{self.output[-3000:]}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name, error_type, rule", [
    ("segfault_every_execute", "DriverCrash", "SVC-1"),
    ("exit_every_execute", "DriverCrash", "SVC-1"),
    ("keyerror_every_execute", "RemoteError", "SVC-1"),
])
def test_a_driver_that_fails_every_call_gets_one_classified_fail(tmp_path, name, error_type, rule) -> None:
    drill = Drill(name, tmp_path)
    assert drill.code == 1 and drill.failures, drill.explain()
    assert drill.failure_types() == {error_type} and {r["rule"] for r in drill.failures} == {rule}, drill.explain()
    assert drill.service["breaker_opened"] == ["PreparedModel.execute"], drill.explain()
    assert "circuit breaker" in drill.output
    drill.assert_bounded()
    drill.assert_nothing_left_behind()


@pytest.mark.timeout(600)
def test_a_test_the_breaker_refused_ends_at_its_first_refusal(tmp_path) -> None:
    """Shrinking a refusal has nothing to find (every example fails alike, and its reproducer replays
    the call that really failed): a test ends at the example the breaker first refused.  Most are
    among the 4 examples the drill draws (a test still shrinking a real crash when a refusal came
    took a few more), where shrinking each refusal ran dozens more."""
    drill = Drill("segfault_every_execute", tmp_path, shrink=True)
    refused = [r for r in drill.failures if r["by_breaker"]]
    assert refused and drill.failure_types() == {"DriverCrash"}, drill.explain()
    examples = [r["examples"] for r in refused if r["examples"] is not None]
    assert len(examples) > 50 and sum(examples) <= 4 * len(examples), sorted(examples)
    assert all(r["error_type"] == "DriverCrash" and r["rule"] == "SVC-1" and not r.get("unshrunk") for r in refused)
    # a few calls of the driver per failed test, where shrinking each refusal made about 140
    assert drill.service["calls"] <= 10 * len(drill.failures), drill.service


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", [
    "hang_every_execute",
    "closes_every_descriptor",  # its own socket too: the service can no longer answer, nor does it end
])
def test_a_driver_that_hangs_on_every_call_gets_a_classified_fail(tmp_path, name) -> None:
    drill = Drill(name, tmp_path, "--driver-timeout=1")
    assert drill.code == 1 and drill.failures, drill.explain()
    # The service that closed its own socket may also be seen to hang up (a crash) rather than stall.
    allowed = {"DriverHang"} if name == "hang_every_execute" else {"DriverHang", "DriverCrash"}
    assert drill.failure_types() <= allowed and "DriverHang" in drill.failure_types(), drill.explain()
    assert {r["rule"] for r in drill.failures} <= {"SVC-1", "SVC-2"}, drill.explain()
    assert drill.service["breaker_opened"] == ["PreparedModel.execute"]
    drill.assert_bounded()
    drill.assert_nothing_left_behind()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name, error_type, rule, says", [
    ("forged_pass", "RemoteError", "SVC-1", "_exit"),  # the driver does not choose the verdict
    ("undecodable_reply", "RemoteError", "SVC-1", "ValueError"),
    ("junk_in_result", "RemoteError", "SVC-1", "over the limit"),
    ("returns_none", "ConformanceError", "POOL-2", "NoneType"),
    ("returns_wrong_type", "ConformanceError", "POOL-2", "dict"),
])
def test_a_reply_that_is_not_a_result_is_a_classified_failure(tmp_path, name, error_type, rule, says) -> None:
    drill = Drill(name, tmp_path)
    assert drill.code == 1 and drill.failures, drill.explain()
    # A reply that is no result breaks the rule the test judges the call under: the output rule in
    # every test of a model's results, FLOW-3 in the one that waits for a loop timeout's status.
    rules = {r["rule"] for r in drill.failures}
    assert drill.failure_types() == {error_type} and rule in rules and rules <= {rule, "FLOW-3"}, drill.explain()
    assert any(says in r["message"] or says in (r.get("details") or "") for r in drill.failures), drill.explain()
    drill.assert_bounded()
    drill.assert_nothing_left_behind()


@pytest.mark.timeout(600)
def test_a_leak_past_the_memory_limit_is_a_resource_failure_of_the_call(tmp_path) -> None:
    drill = Drill("leaks_memory", tmp_path, "--driver-memory-limit=1536")
    assert drill.code == 1 and drill.failures, drill.explain()
    assert drill.failure_types() <= {"DriverOutOfMemory", "DriverCrash"}, drill.explain()
    assert any(r["error_type"] == "DriverOutOfMemory" and "RESOURCE" in r["message"] for r in drill.failures)
    drill.assert_bounded()
    drill.assert_nothing_left_behind()


@pytest.mark.timeout(600)
def test_helper_processes_a_driver_starts_do_not_survive_it(tmp_path) -> None:
    drill = Drill("starts_helpers", tmp_path, tests=(f"{SUITE}.test_layouts",))
    assert drill.code == 0, drill.explain()
    drill.assert_nothing_left_behind()


@pytest.mark.timeout(600)
def test_a_chatty_driver_is_kept_bounded(tmp_path) -> None:
    drill = Drill("chatty", tmp_path, tests=(f"{SUITE}.test_layouts",))
    assert drill.code == 0, drill.explain()
    assert drill.service["calls"] > 50  # every execute printed 64 KiB: megabytes, held nowhere
    assert drill.output.count("x" * 1000) == 0  # nor copied into the run's own output
    drill.assert_nothing_left_behind()


@pytest.mark.timeout(600)
def test_a_slow_but_correct_driver_is_told_why_its_run_is_long(tmp_path) -> None:
    drill = Drill("slow_but_correct", tmp_path, "-k", "test_every_memory_kind_serves_execution and ashmem",
                  tests=(f"{SUITE}.test_layouts",))
    assert drill.code == 0, drill.explain()
    assert drill.service["slow_calls"] >= 1 and drill.service["breaker_opened"] == []
    assert "per-call budget" in drill.output and "--driver-timeout" in drill.output
    drill.assert_nothing_left_behind()


@pytest.mark.parametrize("name, outcome", [("segfault_every_execute", "DriverCrash"), ("hang_every_execute", "DriverHang"),
                                           ("junk_in_result", "RemoteError"), ("starts_helpers", "answered")])
def test_the_harness_keeps_no_descriptor_of_a_faulty_driver(name, outcome) -> None:
    """In the harness's own process: a faulty driver's service, used and closed, leaves no descriptor open."""
    import numpy as np

    from harness.judging.builders import binary_model, pack_request
    from harness.service import DriverService

    before = set(os.listdir("/proc/self/fd"))
    service = DriverService(f"{DRILLS}:{name}", timeout=1)
    try:
        model = binary_model(dims=(4,))
        request, *memories = pack_request(model, [np.ones(4, np.float32)] * 2)
        outcomes = set()
        for _ in range(12):
            try:  # prepared again each time: a model prepared by a service that was replaced is gone
                service.device.prepare_model(model).execute(request)
                outcomes.add("answered")
            except DriverFault as error:  # the fault under drill, recorded by type
                outcomes.add(type(error).__name__)
        assert outcomes == {outcome}
        for memory in memories:
            memory.close()
    finally:
        service.close()
    left = set(os.listdir("/proc/self/fd")) - before
    assert not {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in left if os.path.exists(f"/proc/self/fd/{fd}")}
