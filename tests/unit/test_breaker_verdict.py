"""A verdict the circuit breaker gives in place of a call says so as data (``by_breaker``): the
recorder then runs its test again after every earlier test of the round, whose faults opened it."""

from __future__ import annotations

from harness.api.errors import DriverCrash
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
