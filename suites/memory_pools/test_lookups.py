"""POOL-2: each lookup operation (EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION) on its own,
compared with the reference.

The families' tests (`test_layouts.test_each_operation_family`) share a run's examples among
every family; here every one of these operations the driver declares gets examples of its own,
so a rule of one operation (a missing key's row of zero bytes, a sparse projection's offsets) is
checked in every run.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.integration.skips import not_applicable
from harness.judging.oracle import assert_scenario_conforms
from harness.strategies import scenarios
from harness.strategies.lookups import FAMILIES, operation_types, single_operation_models

OPERATIONS = [op for ops in FAMILIES.values() for op in ops]


@pytest.mark.requirement("POOL-2")
@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
@given(data=st.data())
def test_each_lookup(driver, reference, capabilities, op, data) -> None:
    if op not in capabilities.operations:
        not_applicable("operations", f"the driver does not declare {op.name}")
    if not operation_types(capabilities, op):
        not_applicable("operand_types", f"the driver declares {op.name} on no type NNAPI gives it (with the types its "
                                        "other operands need besides: TENSOR_INT32, and HASHTABLE_LOOKUP's hits "
                                        "TENSOR_QUANT8_ASYMM, LSH_PROJECTION's INT32 and a float tensor)")
    scenario = data.draw(scenarios(capabilities, models=single_operation_models(capabilities, op)), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)
