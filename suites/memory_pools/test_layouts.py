"""POOL-2, POOL-3: generated models and request layouts, compared with the reference."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, event, given, note
from hypothesis import strategies as st

from harness.api.hal import OperandType, OperationType, element_size, is_fully_specified, operand_byte_size
from harness.api.memory import MEMORY_KINDS, REQUIRED_KINDS
from harness.judging.oracle import assert_conforms, assert_scenario_conforms, execute_scenario, run_scenario
from harness.strategies import request_layouts, scenarios
from harness.strategies.values import integers, sampled
from harness.strategies.models import (FAMILIES, elementwise_models, same_padding_models, elementwise_operations, parameter_input_families,
                                      parameter_input_models, several_output_cases)
from harness.integration.skips import models_buildable, not_applicable

#: every test here runs generated models (none applies to a driver whose declarations build none)
pytestmark = pytest.mark.usefixtures("models_can_be_built")


@pytest.mark.requirement("POOL-2", "REQ-2", "DOM-DYN-2")
@given(data=st.data())
def test_generated_scenarios_match_the_reference(driver, reference, capabilities, data) -> None:
    """Random models, inputs spread over several pools with gaps, offsets and padding,
    canary bytes everywhere else; outputs (and too-small dynamic outputs) as the reference."""
    scenario = data.draw(scenarios(capabilities), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)


@pytest.mark.requirement("POOL-2")
@given(data=st.data())
def test_a_parameter_given_as_an_input_is_read_at_every_execution(driver, reference, capabilities, data) -> None:
    """RESHAPE's shape and a fused activation given as request inputs are each execution's values,
    not the prepared model's: one prepared model runs with one value, then with another (a
    driver that settles them at its first execution computes the second with the first's)."""
    if not parameter_input_families(capabilities):
        not_applicable("operations", "the driver declares neither RESHAPE nor element-wise arithmetic on a type that takes "
                                     "a fused activation (NNAPI: TENSOR_INT32 takes NONE alone)")
    case = data.draw(parameter_input_models(capabilities), label="model")
    first = data.draw(request_layouts(case, capabilities, allow_insufficient=False), label="first request")
    second = data.draw(request_layouts(case.alternative(), capabilities, allow_insufficient=False), label="second request")
    model = first.build_model()
    try:
        prepared = driver.prepare_model(model)
        for number, scenario in enumerate((first, second), 1):
            note(f"execution {number} of one prepared model: inputs {[a.dimensions for a in scenario.inputs]}")
            assert_conforms("POOL-2", scenario, run_scenario(reference, scenario), execute_scenario(prepared, scenario),
                            devices=(reference, driver) if number == 1 else None)
    finally:
        for pool in model.pools:
            pool.close()


@pytest.mark.requirement("POOL-3")
@pytest.mark.parametrize("kind", MEMORY_KINDS)
@given(data=st.data())
def test_every_memory_kind_serves_execution(driver, reference, capabilities, kind, data) -> None:
    """ashmem, mmap_fd and BLOB hardware buffers are required; non-BLOB hardware buffers
    only when declared, and then only for execution I/O."""
    if kind not in REQUIRED_KINDS and kind not in capabilities.memory_kinds:
        not_applicable("memory_kinds", f"{kind} is optional (SPEC POOL-3) and the driver does not declare it")
    only_this_kind = replace(capabilities, memory_kinds=frozenset({kind}))
    scenario = data.draw(scenarios(only_this_kind, allow_insufficient=False), label="scenario")
    assert_scenario_conforms("POOL-3", scenario, reference, driver)


@pytest.mark.requirement("POOL-2")
@pytest.mark.parametrize("family", list(FAMILIES))
@given(data=st.data())
def test_each_operation_family(driver, reference, capabilities, family, data) -> None:
    """Every operation family the driver declares gets its own examples in every run."""
    if not any(op in capabilities.operations for op in FAMILIES[family]):
        not_applicable("operations", f"the driver declares no {family} operation")
    models_buildable(capabilities, family)
    scenario = data.draw(scenarios(capabilities, family=family), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)


@pytest.mark.requirement("POOL-2")
@pytest.mark.parametrize("dilated", [False, True], ids=["every-signature", "dilated"])
@pytest.mark.operations(OperationType.CONV_2D)
@given(data=st.data())
def test_conv_2d_same_padding(driver, reference, capabilities, dilated, data) -> None:
    """CONV_2D with SAME padding alone and strides above 1: its padding on each axis then follows
    that axis's size (NNAPI: ceil(size / stride) outputs, the odd pixel at the end), for inputs of
    every height and width, not square ones alone, in every run; and under dilated filters alone,
    a path of its own in engines whose SAME auto-padding refuses dilation."""
    if OperationType.CONV_2D not in capabilities.operations:
        not_applicable("operations", "the driver declares no CONV_2D")
    models_buildable(capabilities, "conv_2d")
    if dilated and OperandType.BOOL not in capabilities.operand_types:
        not_applicable("operand_types", "CONV_2D's dilation factors follow its layout flag, a BOOL operand, which the "
                                        "driver does not declare")
    models = same_padding_models(capabilities, dilated=dilated)
    scenario = data.draw(scenarios(capabilities, models=models), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)


@pytest.mark.requirement("POOL-2")
@pytest.mark.parametrize("activation", [0, 1, 2, 3], ids=["NONE", "RELU", "RELU1", "RELU6"])
@given(data=st.data())
def test_each_fused_activation(driver, reference, capabilities, activation, data) -> None:
    if not any(op in capabilities.operations for op in FAMILIES["elementwise"]):
        not_applicable("operations", "the driver declares no element-wise arithmetic")
    if not elementwise_operations(capabilities, activation=activation):
        not_applicable("operand_types", "the driver declares element-wise arithmetic on no type that takes a fused "
                                        "activation (NNAPI: on TENSOR_INT32 only NONE, DIV has no quantized form)")
    models = elementwise_models(capabilities, activation=activation)
    scenario = data.draw(scenarios(capabilities, models=models), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)


RANK_PAIRS = [(2, 1), (3, 1), (4, 2), (1, 3)]


@pytest.mark.requirement("POOL-2")
@pytest.mark.parametrize("ranks", RANK_PAIRS, ids=[f"rank{a}-rank{b}" for a, b in RANK_PAIRS])
@pytest.mark.parametrize("op", [OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.DIV], ids=lambda o: o.name)
@given(data=st.data())
def test_broadcasting(driver, reference, capabilities, op, ranks, data) -> None:
    """numpy broadcasting between operands of different ranks, for each arithmetic operation."""
    if op not in capabilities.operations:
        not_applicable("operations", f"the driver does not declare {op.name}")
    if not elementwise_operations(capabilities, op=op):
        not_applicable("operand_types", f"the driver declares {op.name} on no type it takes (NNAPI: DIV has no quantized form)")
    models = elementwise_models(capabilities, op=op, ranks=ranks)
    scenario = data.draw(scenarios(capabilities, models=models), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)


@pytest.mark.requirement("POOL-2")
@given(data=st.data())
def test_several_outputs_of_different_shapes(driver, reference, capabilities, data) -> None:
    """Two models side by side in one: every output written whole at its own region, and each
    output's shape reported in its own place."""
    scenario = data.draw(scenarios(capabilities, models=several_output_cases(capabilities), allow_insufficient=False),
                         label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)


@pytest.mark.requirement("DOM-DYN-2")
@given(data=st.data())
def test_only_the_output_too_small_is_insufficient(driver, reference, capabilities, data) -> None:
    """Two outputs, one of unknown shape in a region too small for what it produces: the execution
    is OUTPUT_INSUFFICIENT_SIZE, that output reports isSufficient=false with the dimensions it
    needs, and the other, whose region holds it, reports isSufficient=true.  (Generated layouts
    make such a pair only now and then; a driver with one flag for every output showed there.)"""
    scenario = data.draw(scenarios(capabilities, models=several_output_cases(capabilities), allow_insufficient=False),
                         label="scenario")
    outputs = [scenario.subgraph.operands[index] for index in scenario.subgraph.output_indexes]
    dynamic = tuple(i for i, operand in enumerate(outputs) if not is_fully_specified(operand.type, operand.dimensions))
    assume(dynamic)  # an output of known shape in a short region is a malformed request (REQ-2), not this
    produced = run_scenario(reference, scenario)
    assume(produced.ok and len(produced.output_shapes) == len(outputs))
    which = data.draw(sampled(dynamic), label="output made too small")
    step = element_size(outputs[which].type)
    needed = operand_byte_size(outputs[which].type, tuple(produced.output_shapes[which].dimensions))
    short = needed - step * data.draw(integers(1, max(1, needed // step)), label="elements short")
    event(f"output {which} of {len(outputs)} too small")
    arguments = list(scenario.outputs)
    location = arguments[which].location
    # CHOICE-3: padding is no room for data; half the time it alone would hold what the length lacks
    # (the region still ends where it did)
    pads_the_rest = data.draw(sampled((False, True)), label="padding holds what the length lacks")
    padding = location.padding + needed - max(short, 0) if pads_the_rest else location.padding
    arguments[which] = replace(arguments[which], location=replace(location, length=max(short, 0), padding=padding))
    assert_scenario_conforms("DOM-DYN-2", replace(scenario, outputs=tuple(arguments)), reference, driver)
