"""Each call on a connection keeps its own deadline, whatever the calls before it were given.

The connection lets the kernel enforce deadlines (SO_RCVTIMEO) and skips resetting the socket's
timeout while the one set is close enough.  A set-up step with a long deadline (prepare_xla: 60 s,
importing jax) after ordinary calls (the score's 2 s) must not inherit their shorter timeout: on a
loaded machine that cut prepare_xla off at 2 s and failed a correct driver."""

from __future__ import annotations

import threading
import time

import pytest

from harness.api.errors import DriverHang
from harness.service import wire
from harness.service.client import Connection
from harness.service.messages import TO_SERVICE, Call, Reply

SHORT_S = 0.2
LONG_S = 5.0
SLOW_REPLY_S = 0.6  # longer than the short deadline, well inside the long one


def _serve(sock, delays: dict[str, float]) -> None:
    """A service that answers each call with its method's name, after that method's delay."""
    while True:
        received = wire.receive(sock)
        if received is None:
            return
        message = wire.decode(*received, TO_SERVICE)[0]
        if not isinstance(message, Call):
            return
        time.sleep(delays.get(message.method, 0.0))
        try:
            wire.send(sock, *wire.encode(Reply(message.call_id, True, message.method)))
        except BrokenPipeError:  # the harness gave up on the call and closed: the service's end
            return


def _hung(description: str, reason: str) -> BaseException:
    return DriverHang(f"{description}: {reason}")


@pytest.fixture
def connection():
    harness_side, service_side = wire.socketpair()
    server = threading.Thread(target=_serve, args=(service_side, {"slow": SLOW_REPLY_S}), daemon=True)
    server.start()
    connection = Connection(harness_side, _hung, {}, lambda reference: reference)
    yield connection
    connection.shutdown()
    server.join(timeout=5)
    service_side.close()


def test_a_long_deadline_after_short_calls_is_kept(connection) -> None:
    for _ in range(3):
        assert connection.call("service", "quick", (), timeout=SHORT_S, description="quick") == "quick"
    assert connection.call("service", "slow", (), timeout=LONG_S, description="slow") == "slow"


def test_a_short_deadline_after_a_long_call_still_expires(connection) -> None:
    assert connection.call("service", "quick", (), timeout=LONG_S, description="quick") == "quick"
    started = time.monotonic()
    with pytest.raises(DriverHang, match="slow: timeout"):
        connection.call("service", "slow", (), timeout=SHORT_S, description="slow")
    assert time.monotonic() - started < SLOW_REPLY_S
