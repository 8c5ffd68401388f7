"""The oracle runs a scenario on the reference while the driver's service works on it.

A driver behind the service gets each call sent first; the in-process reference makes the
same call meanwhile; then the driver's reply is read.  These tests watch the order of the
calls through a stand-in for the service's endpoint, and check that the outcomes are the
ones `run_scenario` gives one side at a time.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.judging.builders import binary_model
from harness.judging.oracle import execute_on_both, run_on_both, run_scenario
from harness.service.proxies import DeviceProxy, PreparedModelProxy, begin_call
from harness.strategies import scenarios
from reference_driver import ReferenceDevice

CAPABILITIES = ReferenceDevice().capabilities()


class _Endpoint:
    """Stands in for the service: a call is logged when begun and made when finished."""

    def __init__(self, log: list[tuple[str, str]]) -> None:
        self.log = log
        self.device = ReferenceDevice()
        self.objects: dict[int, Any] = {}

    def begin(self, generation: int | None, target: Any, method: str, args: tuple, description: Any) -> tuple:
        self.log.append(("driver sends", method))
        return target, method, args

    def finish(self, started: tuple) -> Any:
        target, method, args = started
        self.log.append(("driver replies", method))
        result = getattr(self.device if target == "device" else self.objects[target], method)(*args)
        if method == "prepare_model":
            self.objects[len(self.objects) + 1] = result
            return PreparedModelProxy(self, len(self.objects), 0)
        return result

    def call(self, generation: int | None, target: Any, method: str, args: tuple, description: Any) -> Any:
        return self.finish(self.begin(generation, target, method, args, description))

    def drop(self, generation: int, number: int) -> None:
        self.objects.pop(number, None)


class _LoggedReference:
    """The reference, logging each call it makes."""

    def __init__(self, target: Any, log: list[tuple[str, str]]) -> None:
        self._target, self._log = target, log

    def prepare_model(self, model: Any) -> Any:
        self._log.append(("reference", "prepare_model"))
        return _LoggedReference(self._target.prepare_model(model), self._log)

    def execute(self, request: Any) -> Any:
        self._log.append(("reference", "execute"))
        return self._target.execute(request)


@settings(max_examples=15, database=None)
@given(scenario=scenarios(CAPABILITIES, allow_insufficient=False))
def test_each_driver_call_is_sent_before_the_reference_makes_it(scenario) -> None:
    log: list[tuple[str, str]] = []
    expected, actual = run_on_both(_LoggedReference(ReferenceDevice(), log), DeviceProxy(_Endpoint(log)), scenario)
    calls = ["prepare_model", "execute"] if expected.stage == "execute" else ["prepare_model"]
    assert log == [entry for method in calls
                   for entry in (("driver sends", method), ("reference", method), ("driver replies", method))]
    alone = run_scenario(ReferenceDevice(), scenario)
    for outcome in (expected, actual):
        assert (outcome.stage, outcome.status, outcome.output_shapes, outcome.outputs, outcome.pools_after) == \
            (alone.stage, alone.status, alone.output_shapes, alone.outputs, alone.pools_after)


@settings(max_examples=10, database=None)
@given(scenario=scenarios(CAPABILITIES, allow_insufficient=False))
def test_executions_side_by_side_match_executions_one_at_a_time(scenario) -> None:
    log: list[tuple[str, str]] = []
    reference, driver = ReferenceDevice(), DeviceProxy(_Endpoint(log))
    prepared = (reference.prepare_model(scenario.build_model()), driver.prepare_model(scenario.build_model()))
    del log[:]
    expected, actual = execute_on_both(*prepared, scenario)
    assert log == [("driver sends", "execute"), ("driver replies", "execute")]
    assert (expected.status, expected.outputs) == (actual.status, actual.outputs)


def test_a_call_to_anything_but_the_service_is_made_when_its_result_is_asked_for() -> None:
    log: list[tuple[str, str]] = []
    device = _LoggedReference(ReferenceDevice(), log)
    finish = begin_call(device, "prepare_model", binary_model())
    assert log == []
    assert isinstance(finish(), _LoggedReference)
    assert log == [("reference", "prepare_model")]
