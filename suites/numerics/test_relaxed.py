"""Relaxed models: a model with relaxComputationFloat32toFloat16 lets a driver compute its
TENSOR_FLOAT32 with the range and precision of float16 (NeuralNetworks.h, HAL 1.3; SPEC CHOICE-8).

Many accelerators take that path, a kernel set of its own beside the float32 one.  The golden
corpus has a few small relaxed examples; here generated models of any declared family run
relaxed, judged with float16's eps in place of float32's (`bounds.float_format`), so a bug of the
relaxed path alone (a staging buffer, a conversion) is far outside while a float16 computation is
inside.  The reference computes them in float64 as it computes every model.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.api.hal import Capabilities, OperandType, OperationType, is_quantized_type
from harness.integration.skips import not_applicable
from harness.judging.builders import ModelBuilder
from harness.judging.oracle import assert_scenario_conforms
from harness.judging.scenario import Scenario
from harness.strategies.domains import request
from harness.strategies.layouts import scenarios
from harness.strategies.models import FAMILIES, buildable_families, family_types
from harness.strategies.values import arrays, integers, sampled

F32 = OperandType.TENSOR_FLOAT32
#: The generated models' tensors hold at most 256 elements, and rarely more than 64; a relaxed
#: path converts whole tensors (often through a staging buffer of its own), so sizes go past both.
MOST_ELEMENTS = 1024


@functools.lru_cache(maxsize=16)
def relaxable(capabilities: Capabilities) -> Capabilities:
    """The declarations with TENSOR_FLOAT32 the only float or quantized tensor type, so that every
    model drawn computes in TENSOR_FLOAT32 (or integers): the type the relaxed flag is about."""
    kept = frozenset(t for t in capabilities.operand_types
                     if t != OperandType.TENSOR_FLOAT16 and not is_quantized_type(t))
    return dataclasses.replace(capabilities, operand_types=kept)


@pytest.mark.requirement("POOL-2")
@given(data=st.data())
def test_relaxed_models_match_the_reference_within_float16(driver, reference, capabilities, data) -> None:
    caps = relaxable(capabilities)
    if OperandType.TENSOR_FLOAT32 not in capabilities.operand_types or not buildable_families(caps):
        not_applicable("operand_types", "the driver declares no operation on TENSOR_FLOAT32 (relaxComputationFloat32toFloat16 "
                                        "is about TENSOR_FLOAT32 alone)")
    scenario = dataclasses.replace(data.draw(scenarios(caps), label="scenario"), relaxed=True)
    event("TENSOR_FLOAT32 in the model" if any(o.type == OperandType.TENSOR_FLOAT32 for o in scenario.subgraph.operands)
          else "integers only")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)


@pytest.mark.requirement("POOL-2")
@pytest.mark.operations(*FAMILIES["elementwise"])
@given(data=st.data())
def test_relaxed_element_wise_operations_at_every_size(driver, reference, capabilities, data) -> None:
    declared = tuple(op for op in FAMILIES["elementwise"] if op in capabilities.operations)
    if not declared or F32 not in family_types("elementwise", capabilities, (F32,)):
        not_applicable("operations" if not declared else "operand_types",
                       "the driver declares no element-wise arithmetic on TENSOR_FLOAT32 (with INT32 for its activation)")
    op = data.draw(sampled(declared), label="operation")
    size = data.draw(integers(1, MOST_ELEMENTS), label="elements")
    rows = data.draw(sampled(tuple(d for d in (1, 2, 4, 8) if size % d == 0)), label="rows")
    shape = (rows, size // rows)
    broadcast = data.draw(st.booleans(), label="second operand broadcast along the rows")
    second = (shape[1],) if broadcast else shape
    a = data.draw(arrays(F32, shape), label="first operand")
    b = data.draw(arrays(F32, second, nonzero=op == OperationType.DIV), label="second operand")
    event(f"{op.name}, {'over' if size > 64 else 'at most'} 64 elements")
    builder = ModelBuilder()
    first, other = builder.input(F32, shape), builder.input(F32, second)
    builder.operation(op, [first, other, builder.scalar(0)], F32, shape)
    model = Scenario(builder.subgraph(), bytes(builder.values), notes=(f"relaxed {op.name} on {shape} and {second}",),
                     relaxed=True)
    assert_scenario_conforms("POOL-2", request(model, [a, b], [a.nbytes]), reference, driver)
