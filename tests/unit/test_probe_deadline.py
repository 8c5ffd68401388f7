"""A probe (a call the open circuit breaker lets through now and then) is given less time than a
call, but a set-up step keeps its own deadline: importing jax in a new service for prepare_xla
takes seconds, and a probe of it cut to the probe's 2 s failed every time on a loaded machine, so
that circuit never closed."""

from __future__ import annotations

from types import SimpleNamespace

from harness.api.errors import DriverHang
from harness.service.breaker import FIRST_PROBE_AFTER, PROBE_DEADLINE_S, THRESHOLD
from harness.service.supervisor import _Endpoint

CALL_TIMEOUT_S = 30.0
SETUP_DEADLINE_S = 60.0


class _Recording:
    """A connection that answers every call and keeps the timeout each was given."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def call(self, target, method, args, timeout, description):
        self.timeouts.append(timeout)
        return ("ok",)


class _RecordingEndpoint(_Endpoint):
    def __init__(self) -> None:
        super().__init__(CALL_TIMEOUT_S)
        self.recording = _Recording()

    def _connection_for(self, generation, description):
        return self.recording


def _probe_timeout(deadline: float | None) -> float:
    """The timeout of the first probe of a call whose circuit is open."""
    endpoint = _RecordingEndpoint()
    description = SimpleNamespace(counted_as="CustomCalls.prepare_xla[add_mod128@Host]")
    for number in range(THRESHOLD):
        endpoint.breaker.context = f"test_{number % 2}"  # in two tests: the breaker may open
        endpoint.breaker.failed(description.counted_as, DriverHang(f"[SVC-2] hang {number}"))
    refused = 0
    while not endpoint.recording.timeouts:  # refused until the probe is let through
        try:
            endpoint.call(None, "custom_calls", "prepare_xla", ("add_mod128", "Host"), description, deadline=deadline)
        except DriverHang as refusal:
            assert refusal.by_breaker
            refused += 1
    assert refused == FIRST_PROBE_AFTER - 1
    return endpoint.recording.timeouts[0]


def test_a_probe_of_a_call_is_given_the_probe_deadline() -> None:
    assert _probe_timeout(None) == min(CALL_TIMEOUT_S, PROBE_DEADLINE_S)


def test_a_probe_of_a_set_up_step_keeps_its_deadline() -> None:
    assert _probe_timeout(SETUP_DEADLINE_S) == SETUP_DEADLINE_S
