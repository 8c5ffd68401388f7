"""A verdict the circuit breaker gives in place of a call says so as data (``by_breaker``), and
carries the scenario or call sequence of the last call that really failed, which its reproducer
replays (the refused call may pass).  A check on a fresh driver suspends the breaker.  With nothing
to replay, the recorder runs the test again after every earlier test of the round, whose faults
opened it."""

from __future__ import annotations

import pytest

from harness.api.errors import DriverCrash, DriverHang
from harness.service.breaker import THRESHOLD, Breaker


def test_the_breakers_own_verdict_is_marked_and_the_drivers_fault_is_not() -> None:
    breaker = Breaker()
    key = "PreparedModel.execute"
    faults = []
    for number in range(THRESHOLD):
        breaker.context = f"test_{number % 2}"  # in two tests: the breaker may open
        fault = DriverCrash(f"[SVC-1] crash {number}")
        faults.append(fault)
        breaker.failed(key, fault)
    probe, refusal = breaker.admit(key, "PreparedModel.execute(request)")
    assert not probe and isinstance(refusal, DriverCrash) and refusal.by_breaker
    assert not any(fault.by_breaker for fault in faults)


def test_the_breakers_refusal_carries_the_call_that_really_failed() -> None:
    """The call refused may be one the driver serves (while hypothesis shrinks a hang, the smallest
    example is refused too): its reproducer replays the last call that really failed."""
    breaker = Breaker()
    key = "PreparedModel.execute"
    for number in range(THRESHOLD):
        breaker.context = f"test_{number % 2}"
        hang = DriverHang(f"[SVC-2] hang {number}")
        hang.scenario = f"scenario {number}"  # set as the fault left the scenario's run
        breaker.failed(key, hang)
    _, refusal = breaker.admit(key, "PreparedModel.execute(request of 1 pools)")
    assert isinstance(refusal, DriverHang) and refusal.by_breaker
    assert refusal.scenario == f"scenario {THRESHOLD - 1}" and "hang 0" in str(refusal)  # the message names the first
    assert f"hang {THRESHOLD - 1}" in str(refusal).splitlines()[0]  # and, in the record's line, the one it replays


def test_calls_inside_a_suspended_breaker_reach_the_driver_and_are_not_counted() -> None:
    """A check that a failure replays on a fresh driver must see the driver, not the breaker."""
    breaker = Breaker()
    key = "PreparedModel.execute"
    for number in range(THRESHOLD):
        breaker.context = f"test_{number % 2}"
        breaker.failed(key, DriverCrash(f"[SVC-1] crash {number}"))
    with breaker.suspended():
        assert not breaker.watching  # the service's calls skip the breaker
        breaker.failed(key, DriverCrash("[SVC-1] the check's crash"))
    assert breaker.watching
    _, refusal = breaker.admit(key, "PreparedModel.execute(request)")
    assert refusal is not None and "the last 3 calls" in str(refusal) and "check" not in str(refusal)


class _RefusingDriver:
    """A driver behind an open breaker: every prepare_model is refused with ``refusal``."""

    def __init__(self, refusal: DriverHang) -> None:
        self.refusal = refusal

    def prepare_model(self, model):
        raise self.refusal


def test_a_call_sequence_keeps_the_refusals_scenario_instead_of_its_own_calls() -> None:
    """A refusal met in a lockstep sequence replays the scenario that really hung: the sequence's own
    calls (up to the refused one) pass on a fresh driver."""
    from harness.api.hal import OperandType, OperationType
    from harness.judging.lockstep import Lockstep
    from harness.strategies.domains import Flavor
    from reference_driver import ReferenceDevice

    refusal = DriverHang("[SVC-2] not called (circuit breaker)", scenario="the scenario that hung")
    refusal.by_breaker = True
    step = Lockstep(_RefusingDriver(refusal), ReferenceDevice())
    with pytest.raises(DriverHang) as raised:
        step.prepare(Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32).model((2, 2)))
    assert raised.value.scenario == "the scenario that hung" and raised.value.steps == ()
    # a fault of the driver itself (no breaker) gets the sequence's steps, as before
    own = DriverHang("[SVC-2] did not return")
    step = Lockstep(_RefusingDriver(own), ReferenceDevice())
    with pytest.raises(DriverHang):
        step.prepare(Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32).model((2, 2)))
    assert own.steps and own.steps[-1].method == "prepare"


def test_one_custom_call_targets_crashes_do_not_get_another_targets_calls_refused() -> None:
    """Each custom-call target is its own function in the driver's library: faults are counted per
    target, so a correct target is still called (and judged) after another crashed in two tests."""
    from harness.service.proxies import CallDescription, _described

    breaker = Breaker()
    crashing = _described("invoke", "fail_with_status", "Host", ())
    for number in range(THRESHOLD):
        breaker.context = f"test_{number % 2}"
        breaker.failed(Breaker.key(crashing, "custom_calls", "invoke"), DriverCrash(f"[SVC-1] crash {number}"))
    breaker.context = "test_of_another_target"
    for description in (_described("invoke", "add_mod128", "Host", ()), _described("invoke", "fail_with_status", "CUDA", ()),
                        _described("under_xla", "fail_with_status", "Host", ())):
        assert breaker.admit(Breaker.key(description, "custom_calls", description.method), description) == (False, None)
    _, refusal = breaker.admit(Breaker.key(crashing, "custom_calls", "invoke"), crashing)
    assert refusal is not None and refusal.by_breaker
    # the other calls of the service are still counted by method
    assert Breaker.key(CallDescription("PreparedModel", "execute", ()), 7, "execute") == "PreparedModel.execute"


def _failed(test: str, rule: str, message: str, by_breaker: bool = False) -> dict:
    return {"id": test, "outcome": "failed", "rule": rule, "message": message, "by_breaker": by_breaker}


def test_a_fuzz_run_counts_a_breakers_verdict_as_the_fault_the_test_really_showed() -> None:
    """Round after round a test meets the same crash, then the breaker's refusal of it (a message that
    names the call refused): one failure, not one per refused call."""
    from harness.commands.fuzz import _distinct_failures

    records = [
        _failed("t_crashes", "SVC-1", "the driver service died during invoke(64 bytes)"),
        _failed("t_crashes", "SVC-1", "invoke(64 bytes): not called (circuit breaker)", by_breaker=True),
        _failed("t_refused", "SVC-1", "invoke(8 bytes): not called (circuit breaker)", by_breaker=True),
        _failed("t_refused", "SVC-1", "invoke(16 bytes): not called (circuit breaker)", by_breaker=True),
        _failed("t_wrong", "CC-5", "the output differs"),
        _failed("t_wrong", "SVC-1", "invoke(8 bytes): not called (circuit breaker)", by_breaker=True),
        {"id": "t_passes", "outcome": "passed", "rule": "", "message": ""},
    ]
    failures = _distinct_failures(records)
    assert sorted((record["id"], record["rule"], record["by_breaker"]) for record in failures.values()) == [
        ("t_crashes", "SVC-1", False), ("t_refused", "SVC-1", True), ("t_wrong", "CC-5", False), ("t_wrong", "SVC-1", True)]


def _opened(kind: type, key: str = "PreparedModel.execute") -> tuple[Breaker, list]:
    """A breaker opened by THRESHOLD faults of ``kind`` in two tests, each with a scenario of its own."""
    breaker = Breaker()
    faults = []
    for number in range(THRESHOLD):
        breaker.context = f"test_{number % 2}"
        fault = kind(f"[{kind.requirement}] fault {number}", scenario=f"scenario {number}")
        faults.append(fault)
        breaker.failed(key, fault)
    breaker.context = "a later test"
    return breaker, faults


def _refused_until_probe(breaker: Breaker, key: str = "PreparedModel.execute") -> int:
    refused = 0
    while True:
        probe, refusal = breaker.admit(key, "PreparedModel.execute(request)")
        if probe:
            return refused
        assert refusal is not None
        refused += 1


def test_a_failed_probe_leaves_what_the_refusals_replay_as_it_was() -> None:
    """Every test refused replays the fault that opened the breaker: one reproducer, checked once (a
    probe's hang in each test made each refusal's scenario a new one, a deadline waited out per check)."""
    breaker, faults = _opened(DriverHang)
    _refused_until_probe(breaker)
    breaker.failed("PreparedModel.execute", DriverHang("[SVC-2] the probe hung", scenario="the probe's scenario"))
    _, refusal = breaker.admit("PreparedModel.execute", "PreparedModel.execute(request)")
    assert refusal is not None and refusal.scenario is faults[-1].scenario
    assert "before the breaker opened" in str(refusal).splitlines()[0] and "the probe hung" not in str(refusal)
    assert f"the last {THRESHOLD + 1} calls" in str(refusal)  # the probe is counted all the same


def test_a_probe_that_hangs_is_followed_by_one_four_times_as_late() -> None:
    """A hung probe waits out its deadline: probes of a driver that hangs on every call come after 8,
    32, 128... refused calls; of one that crashes (a restart each), after 8, 16, 32..."""
    from harness.service.breaker import FIRST_PROBE_AFTER

    for kind, growth in ((DriverHang, 4), (DriverCrash, 2)):
        breaker, _ = _opened(kind)
        spacing = []
        for _ in range(4):
            spacing.append(_refused_until_probe(breaker) + 1)
            breaker.failed("PreparedModel.execute", kind(f"[{kind.requirement}] the probe failed"))
        assert spacing == [FIRST_PROBE_AFTER * growth ** n for n in range(4)], (kind, spacing)


def test_refusals_that_replay_one_fault_are_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test the breaker refuses carries the same scenario (the fault's that opened it): whether it
    fails on a fresh driver is one question, asked of the driver once, not once per test refused."""
    from types import SimpleNamespace

    from harness.integration import histories
    from harness.integration.plugin import _replaying_on_a_fresh_driver

    checks, starts = [], []
    monkeypatch.setattr(histories, "scenario_fails_on_a_fresh_driver",
                        lambda fresh_device, reference, verdict: checks.append(verdict.scenario) or True)
    replaying = _replaying_on_a_fresh_driver(SimpleNamespace(service=None, fresh_device=lambda: starts.append(1)))
    breaker, faults = _opened(DriverCrash)
    refusals = [breaker.admit("PreparedModel.execute", f"PreparedModel.execute({n})")[1] for n in range(3)]
    assert all(replaying(refusal) is True for refusal in refusals)
    assert checks == [faults[-1].scenario] and len(starts) == 1
    assert replaying(faults[0]) is True and len(checks) == 2  # the driver's own fault: checked on its own
