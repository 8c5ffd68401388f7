"""The circuit breaker: a driver that crashes, hangs or raises on every call of a method gets its
verdict once, clearly, instead of paying a service restart (or a whole deadline) per call.

After `THRESHOLD` faults in a row of one method (``PreparedModel.execute``, ``Buffer.copy_to``...; a
custom call's are counted per target, ``CustomCalls.invoke[add@Host]``),
with no call of it answered in between, in two tests or more, the breaker opens for that method:
its calls fail at once with the same kind of fault (so the verdict and the requirement are the
same) and a message that says it is the breaker speaking and names the first fault.  The refusal
carries the scenario, call sequence or golden example of the last fault, which its reproducer
replays: the call it refused may be one the driver serves.  Within one
test, crashes and exceptions cost little (a restart from the zygote) and the breaker stays shut,
so that hypothesis shrinks a crash on some inputs to the input that really crashes; hangs cost a
whole deadline each, so `THRESHOLD` of them in one test open it for the rest of that test.  The
next test's first call goes through: a driver that failed on one test's inputs only is judged
afresh.  A probe still reaches the driver after
8, 16, 32... refused calls, with a short deadline; one answered probe closes the breaker, so a
driver that fails only on some inputs is judged input by input again.  A probe that hangs waits
its deadline out, so the probe after it comes after four times as many refused calls, not twice.
A probe that fails changes nothing the refusals carry: they go on replaying the fault that opened
the breaker, one reproducer for every test refused, checked once (a probe's fault in each test would
make each refusal's reproducer a new one to check, a whole deadline for a hang).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.api.errors import DriverFault, DriverHang

THRESHOLD = 3
FIRST_PROBE_AFTER = 8
PROBE_DEADLINE_S = 2.0
FIRST_FAULT_CHARS = 6000  # the first fault's report (stacks, stderr) travels with every refusal
LAST_FAULT_CHARS = 300  # the last fault's first line: which call its reproducer replays


class _Circuit:
    __slots__ = ("faults", "hangs", "contexts", "first", "last", "refused", "next_probe", "probes_failed")

    def __init__(self) -> None:
        self.faults = 0
        self.hangs = 0
        self.contexts: set[str | None] = set()
        self.first: DriverFault | None = None
        self.last: DriverFault | None = None
        self.refused = 0
        self.next_probe = FIRST_PROBE_AFTER
        self.probes_failed = 0  # since it opened


class Breaker:
    """Per-method fault counts of one driver service (all its generations)."""

    def __init__(self) -> None:
        self._circuits: dict[str, _Circuit] = {}
        self._lock = threading.Lock()
        self.opened: list[str] = []  # methods whose breaker opened, in order, for the run's summary
        # The test being run (set by the pytest plugin); None outside pytest.
        self.context: str | None = None
        self._suspended = 0  # `suspended` blocks entered

    @property
    def watching(self) -> bool:
        """Whether any method has a fault on record (until then, calls skip the breaker)."""
        return bool(self._circuits) and not self._suspended

    @staticmethod
    def key(description: Any, target: Any, method: str) -> str:
        """What faults are counted by: the method of the kind of object called (``PreparedModel.execute``),
        or what the call's description counts it as (one custom-call target: ``CustomCalls.invoke[add@Host]``)."""
        return getattr(description, "counted_as", "") or f"{getattr(description, 'owner', target)}.{method}"

    def _open(self, circuit: _Circuit) -> bool:
        if circuit.faults < THRESHOLD:
            return False
        if len(circuit.contexts) >= 2:
            return True
        return self.context in circuit.contexts and circuit.hangs >= THRESHOLD

    def admit(self, key: str, description: Any) -> tuple[bool, DriverFault | None]:
        """Before a call: (is this a probe, the fault to raise instead of calling)."""
        with self._lock:
            circuit = self._circuits.get(key)
            if circuit is None or not self._open(circuit):
                return False, None
            circuit.refused += 1
            if circuit.refused >= circuit.next_probe:
                circuit.refused = 0
                circuit.next_probe *= 2
                return True, None
            last, first = circuit.last, circuit.first
            faults, probed = circuit.faults, circuit.probes_failed
        assert last is not None and first is not None
        # The refused call never ran (hypothesis prints it as the falsifying example all the same): the
        # message names the call that really failed last before the breaker opened, the one its
        # reproducer replays.
        which = "the last of them before the breaker opened" if probed else "the last of them"
        replayed = "" if last is first else f"; its reproducer replays {which}: {_first_line(last)}"
        error = type(last)(f"[{last.requirement}] {description}: not called: the last {faults} calls of {key} all "
                           f"failed the same way (circuit breaker; a probe still reaches the driver now and then)"
                           f"{replayed}. The first: {str(first)[:FIRST_FAULT_CHARS] or type(first).__name__}",
                           # what reproduces the refusal is a call that really failed: the last one (while
                           # hypothesis shrinks, the smallest), not the call refused here, which may pass
                           scenario=last.scenario, steps=last.steps, earlier=last.earlier)
        error.by_breaker = True
        error.golden = last.golden  # a golden example's fault: the example it failed on
        return False, error

    @contextmanager
    def suspended(self) -> Iterator[None]:
        """Calls made inside go to the driver and are not counted: a check that a failure replays on
        a fresh driver must see the driver fail, not the breaker refuse."""
        with self._lock:
            self._suspended += 1
        try:
            yield
        finally:
            with self._lock:
                self._suspended -= 1

    def answered(self, key: str) -> None:
        """The driver answered a call of ``key`` (a result, or a DriverError): the breaker closes."""
        if key in self._circuits:
            with self._lock:
                self._circuits.pop(key, None)

    def failed(self, key: str, fault: DriverFault) -> None:
        with self._lock:
            if self._suspended:
                return
            circuit = self._circuits.setdefault(key, _Circuit())
            probe = self._open(circuit)  # open: only a probe reached the driver
            circuit.faults += 1
            circuit.hangs += isinstance(fault, DriverHang)
            circuit.contexts.add(self.context)
            circuit.first = circuit.first or fault
            if probe:
                circuit.probes_failed += 1
                if isinstance(fault, DriverHang):  # it waited out its deadline: the next comes later
                    circuit.next_probe *= 2
            else:
                circuit.last = fault
            if key not in self.opened and self._open(circuit):
                self.opened.append(key)


def _first_line(fault: DriverFault) -> str:
    """A fault's first line, without its requirement tag (the refusal's message has it already)."""
    line = next((text.strip() for text in str(fault).splitlines() if text.strip()), type(fault).__name__)
    return line.removeprefix(f"[{fault.requirement}] ").rstrip(".")[:LAST_FAULT_CHARS]
