"""A difference is charged to the rule it breaks, whatever the test's theme: a wrong value that the
plain layout shows too is the value rule (OPS-1) even in a test of handles; one that only the
test's layout shows stays the test's; a byte outside every output is POOL-2; and the certificate
fails the rule the failure carries, listing the test under it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.api.errors import ConformanceError, DriverCrash
from harness.api.hal import OperandType, OperationType
from harness.api.requirements import OUTPUT_RULE, VALUE_RULE
from harness.drivers.registry import load_registry
from harness.judging.builders import ModelBuilder
from harness.judging.culprit import CANARY, plain_scenario
from harness.judging.oracle import assert_scenario_conforms
from harness.judging.scenario import MemorySpec, Scenario
from harness.report import certificate
from harness.report.attribution import failed_requirements
from harness.strategies.domains import request
from reference_driver import ReferenceDevice

F32 = OperandType.TENSOR_FLOAT32
RELU6 = 3  # NNAPI's FuseCode


def _add_relu6() -> Scenario:
    """x + y with a fused RELU6, over values past 6 (where a wrong clamp shows), the second input
    after the first in one pool (where a driver that ignores offsets reads the first twice)."""
    builder = ModelBuilder()
    x, y = builder.input(F32, (4,)), builder.input(F32, (4,))
    builder.operation(OperationType.ADD, [x, y, builder.scalar(RELU6)], F32, (4,))
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=("ADD",))
    first, second = np.array([1, 2, 3, 6], np.float32), np.array([0.5, 5, -4, 0.25], np.float32)
    return request(model, [first, second], [first.nbytes], label="ADD")


def _verdict(mutant: str, requirement: str, room: int = 0) -> ConformanceError:
    """The failure of seeded bug ``mutant`` in a test of ``requirement`` (``room``: bytes of the
    outputs' pool after their region)."""
    scenario = _add_relu6()
    inputs, outputs = scenario.request_pools
    assert isinstance(outputs, MemorySpec)
    scenario = replace(scenario, request_pools=(inputs, replace(outputs, content=outputs.content + bytes(room))))
    driver = load_registry().resolve(f"mutant-{mutant}").create()
    with pytest.raises(ConformanceError) as raised:
        assert_scenario_conforms(requirement, scenario, ReferenceDevice(), driver)
    return raised.value


def test_a_plain_scenario_puts_each_argument_alone_at_offset_zero() -> None:
    scenario = _add_relu6()
    plain = plain_scenario(scenario)
    assert plain is not None
    assert [a.location.pool_index for a in (*plain.inputs, *plain.outputs)] == [0, 1, 2]
    assert all(a.location.offset == 0 and a.location.padding == 0 for a in (*plain.inputs, *plain.outputs))
    pools = [p for p in plain.request_pools if isinstance(p, MemorySpec)]
    source = scenario.request_pools[0]
    assert isinstance(source, MemorySpec)
    second = scenario.inputs[1].location
    assert pools[1].content == source.content[second.offset : second.offset + second.length]
    assert pools[2].content == bytes([CANARY]) * scenario.outputs[0].location.length


def test_a_wrong_value_in_a_test_of_handles_is_the_value_rule() -> None:
    verdict = _verdict("relu6-clamps-at-6.5", "POOL-5")
    assert verdict.requirement == VALUE_RULE
    assert f"why {VALUE_RULE}: with plain I/O" in str(verdict)


def test_a_wrong_value_only_the_layout_shows_stays_the_tests_requirement() -> None:
    verdict = _verdict("offset-ignored", "POOL-2")
    assert verdict.requirement == "POOL-2"
    assert "every output is right" in str(verdict)


def test_a_layout_fault_seen_by_a_test_of_constants_is_pool_2() -> None:
    assert _verdict("offset-ignored", "POOL-1").requirement == OUTPUT_RULE


def test_a_byte_outside_the_outputs_is_pool_2_in_any_test() -> None:
    assert _verdict("writes-past-output", "POOL-5", room=8).requirement == "POOL-2"


def _record(rule: str, requirements: list[str], test: str = "suites/x.py::test_handles") -> dict:
    return {"id": test, "outcome": "failed", "fault": "driver", "requirements": requirements, "rule": rule,
            "message": f"[{rule}] output 0 differs", "waiver": "", "skip": None, "reproducer": ""}


def test_the_certificate_fails_the_rule_broken_and_lists_the_test_under_it() -> None:
    record = _record(VALUE_RULE, ["POOL-4", "POOL-5"])
    assert failed_requirements(record) == (VALUE_RULE,)
    document = certificate.build([record], {"driver": "d"}, "", "", True)
    table = document["requirements"]
    assert table[VALUE_RULE]["status"] == "fail"
    assert [t["test"] for t in table[VALUE_RULE]["tests"]] == [record["id"]]
    assert table["POOL-5"]["status"] == "not-run"  # stopped at the value failure: POOL-5 itself unchecked


def test_a_crash_fails_the_tests_own_requirements_not_the_services() -> None:
    assert failed_requirements(_record("SVC-1", ["POOL-5"])) == ("POOL-5",)


def test_a_crash_of_a_call_made_to_check_a_rule_fails_that_rule() -> None:
    record = {**_record("SVC-1", ["REQ-1", "REQ-2"]), "checking": "REQ-2"}
    assert failed_requirements(record) == ("REQ-2",)
    assert failed_requirements({**record, "checking": "POOL-5"}) == ("REQ-1", "REQ-2")  # not one the test names


class _Crashing:
    """A driver whose service dies in every call."""

    def prepare_model(self, model):
        raise DriverCrash("the driver service died during Device.prepare_model")


def test_the_judge_says_which_rule_a_crashed_call_was_checking() -> None:
    with pytest.raises(DriverCrash) as raised:
        assert_scenario_conforms("REQ-2", _add_relu6(), ReferenceDevice(), _Crashing())  # type: ignore[arg-type]
    assert raised.value.requirement == "SVC-1" and raised.value.checking == "REQ-2"
