"""getSupportedOperations: one answer per operation, consistent with preparation (POOL-4, CHOICE-5).

For a model inside the driver's declarations every operation is supported and the model
prepares.  For a model built on an operation the driver does not declare, SPEC lets the driver
report it unsupported or refuse it at preparation; what it may not do is report everything
supported and then refuse to prepare it.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.api.hal import Capabilities, Device, DriverError, Model, OperandType, support_answers
from harness.integration.skips import not_applicable
from harness.strategies import scenarios
from harness.strategies.models import FAMILIES, OUTSIDE_OPERATIONS, model_cases, outside_models, twice_over
from harness.judging.scenario import MemorySpec, Scenario
from harness.strategies.values import sampled
from harness.judging.verdict import violation

#: Every operand type the harness builds models of.
BUILDABLE_TYPES = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_INT32,
                             OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.INT32,
                             OperandType.BOOL,  # the layout flag, which GROUPED_ and TRANSPOSE_CONV_2D require
                             OperandType.TENSOR_BOOL8, OperandType.FLOAT32, OperandType.FLOAT16})


def _answers(driver: Device, model: Model) -> list[bool]:
    supported = driver.get_supported_operations(model)
    count = len(model.main.operations)
    answers = support_answers(supported)
    if answers is None or len(answers) != count:
        raise violation("POOL-4", f"get_supported_operations returned {supported!r}; "
                                  f"SPEC requires one bool per operation ({count})")
    return answers


def _asked(driver: Device, scenario) -> tuple[list[bool], DriverError | None]:
    """The driver's answers for the scenario's model, and the error preparing it gave (if any)."""
    model = scenario.build_model()
    try:
        supported = _answers(driver, model)
        try:
            driver.prepare_model(model)
        except DriverError as error:
            return supported, error
        return supported, None
    finally:
        for pool in model.pools:
            pool.close()


def _declared_model_served(driver: Device, scenario: Scenario) -> None:
    """POOL-4 for a model made only of declared operations and types: every operation reported
    supported, and the model prepares."""
    supported, refused = _asked(driver, scenario)
    if not all(supported):
        raise violation("POOL-4", f"{', '.join(scenario.notes)}: get_supported_operations says {supported} for a "
                                  f"model made only of declared operations and types")
    if refused is not None:
        raise violation("POOL-4", f"{', '.join(scenario.notes)}: every operation is reported supported, but "
                                  f"prepare_model refused the model: {refused}")


@pytest.mark.requirement("POOL-4")
@given(data=st.data())
def test_declared_operations_are_supported_and_prepare(driver, capabilities, models_can_be_built, data) -> None:
    _declared_model_served(driver, data.draw(scenarios(capabilities, allow_insufficient=False), label="scenario"))


@pytest.mark.requirement("POOL-4")
@given(data=st.data())
def test_one_answer_per_operation(driver, capabilities, models_can_be_built, data) -> None:
    """A model beside itself, so that each kind of operation in it appears twice: one answer per
    operation, each True (every operation is declared)."""
    case = twice_over(data.draw(model_cases(capabilities), label="model"))
    _declared_model_served(driver, Scenario(case.subgraph, case.operand_values,
                                            (MemorySpec("ashmem", case.pool_data),) if case.pool_data else (),
                                            notes=(case.label,)))


@pytest.mark.requirement("POOL-4")
@given(data=st.data())
def test_undeclared_operations_are_reported_or_refused(driver, capabilities, data) -> None:
    # the operations the harness can build a model of, and NNAPI operations outside the reference's
    # (nothing judges their results here: only what the driver reports and whether it prepares)
    buildable = [*(op for ops in FAMILIES.values() for op in ops), *OUTSIDE_OPERATIONS]
    undeclared = [op for op in buildable if op not in capabilities.operations]
    if not undeclared:
        not_applicable("operations", "the driver declares every operation the harness can build")
    op = data.draw(sampled(tuple(undeclared)), label="undeclared operation")
    only_it = Capabilities(frozenset({"ashmem"}), False, frozenset({op}), BUILDABLE_TYPES)
    if op in OUTSIDE_OPERATIONS:
        scenario = data.draw(scenarios(only_it, models=outside_models(op), allow_insufficient=False), label="scenario")
    else:
        family = next(name for name, ops in FAMILIES.items() if op in ops)
        scenario = data.draw(scenarios(only_it, family=family, allow_insufficient=False), label="scenario")
    supported, refused = _asked(driver, scenario)
    event(f"{op.name}: {'reported unsupported' if not all(supported) else 'reported supported'}, "
          f"{'refused' if refused else 'prepared'}")
    if all(supported) and refused is not None:
        raise violation("POOL-4", f"{', '.join(scenario.notes)} (not declared): get_supported_operations "
                                  f"reports it supported, but prepare_model refused it: {refused}")
