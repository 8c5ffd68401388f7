"""POOL-2: each normalization, reduction, ARGMAX/ARGMIN, CHANNEL_SHUFFLE, FILL and RANK on its own,
compared with the reference.

The families' tests (`test_layouts.test_each_operation_family`) share a run's examples among
every family; here every one of these operations the driver declares gets examples of its own,
so a rule of one operation (ARGMAX's first index among ties, a reduction's negative axes) is
checked in every run.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.integration.skips import not_applicable
from harness.judging.oracle import assert_scenario_conforms
from harness.strategies import scenarios
from harness.strategies.reductions import FAMILIES, operation_types, single_operation_models

OPERATIONS = [op for ops in FAMILIES.values() for op in ops]


@pytest.mark.requirement("POOL-2")
@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
@given(data=st.data())
def test_each_reduction_or_normalization(driver, reference, capabilities, op, data) -> None:
    if op not in capabilities.operations:
        not_applicable("operations", f"the driver does not declare {op.name}")
    if not operation_types(capabilities, op):
        not_applicable("operand_types", f"the driver declares {op.name} on no type NNAPI gives it (with the types its "
                                        "parameters need besides: INT32, TENSOR_INT32, BOOL, a float scalar)")
    scenario = data.draw(scenarios(capabilities, models=single_operation_models(capabilities, op)), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)
