"""The circuit breaker: a driver that crashes, hangs or raises on every call of a method gets its
verdict once, clearly, instead of paying a service restart (or a whole deadline) per call.

After `THRESHOLD` faults in a row of one method (``PreparedModel.execute``, ``Buffer.copy_to``...),
with no call of it answered in between, the breaker opens for that method: its calls fail at once
with the same kind of fault (so the verdict and the requirement are the same) and a message that
says it is the breaker speaking and names the first fault.  A probe still reaches the driver after
8, 16, 32... refused calls, with a short deadline; one answered probe closes the breaker, so a
driver that fails only on some inputs is judged input by input again.
"""

from __future__ import annotations

import threading
from typing import Any

from harness.api.errors import DriverFault

THRESHOLD = 3
FIRST_PROBE_AFTER = 8
PROBE_DEADLINE_S = 2.0


class _Circuit:
    __slots__ = ("faults", "first", "last", "refused", "next_probe")

    def __init__(self) -> None:
        self.faults = 0
        self.first: DriverFault | None = None
        self.last: DriverFault | None = None
        self.refused = 0
        self.next_probe = FIRST_PROBE_AFTER


class Breaker:
    """Per-method fault counts of one driver service (all its generations)."""

    def __init__(self) -> None:
        self._circuits: dict[str, _Circuit] = {}
        self._lock = threading.Lock()
        self.opened: list[str] = []  # methods whose breaker opened, in order, for the run's summary
        # Whether any method has a fault on record: until then, calls skip the breaker.
        self.watching = False

    def admit(self, key: str, description: Any) -> tuple[bool, DriverFault | None]:
        """Before a call: (is this a probe, the fault to raise instead of calling)."""
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None or circuit.faults < THRESHOLD:
                return False, None
            circuit.refused += 1
            if circuit.refused >= circuit.next_probe:
                circuit.refused = 0
                circuit.next_probe *= 2
                return True, None
            last, first = circuit.last, circuit.first
            faults = circuit.faults
        assert last is not None and first is not None
        headline = str(first).splitlines()[0] if str(first) else type(first).__name__
        error = type(last)(f"[{last.requirement}] {description}: not called: the last {faults} calls of {key} all "
                           f"failed the same way (circuit breaker; a probe still reaches the driver now and then). "
                           f"The first: {headline}")
        return False, error

    def answered(self, key: str) -> None:
        """The driver answered a call of ``key`` (a result, or a DriverError): the breaker closes."""
        if key in self._circuits:
            with self._lock:
                self._circuits.pop(key, None)
                self.watching = bool(self._circuits)

    def failed(self, key: str, fault: DriverFault) -> None:
        with self._lock:
            circuit = self._circuits.setdefault(key, _Circuit())
            self.watching = True
            circuit.faults += 1
            circuit.first = circuit.first or fault
            circuit.last = fault
            if circuit.faults == THRESHOLD:
                self.opened.append(key)
