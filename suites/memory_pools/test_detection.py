"""POOL-2: each detection and region operation (AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT,
GENERATE_PROPOSALS, DETECTION_POSTPROCESSING, ROI_ALIGN, ROI_POOLING, HEATMAP_MAX_KEYPOINT) on its
own, compared with the reference.

The families' tests share a run's examples among every family; here every one of these operations
the driver declares gets examples of its own, so a rule of one operation (NMS's IoU threshold, an
adaptive sampling grid, a box coder's scales) is checked in every run.  BOX_WITH_NMS_LIMIT's and
GENERATE_PROPOSALS' outputs are declared with their rows unknown, and the scenarios give them
regions exact, larger or too small: a region too small must be OUTPUT_INSUFFICIENT_SIZE naming the
rows the data makes (zero, when every score is under the threshold).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.integration.skips import not_applicable
from harness.judging.oracle import assert_scenario_conforms
from harness.strategies import scenarios
from harness.strategies.detection import FAMILIES, operation_types, single_operation_models

OPERATIONS = [op for ops in FAMILIES.values() for op in ops]


@pytest.mark.requirement("POOL-2")
@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
@given(data=st.data())
def test_each_detection_operation(driver, reference, capabilities, op, data) -> None:
    if op not in capabilities.operations:
        not_applicable("operations", f"the driver does not declare {op.name}")
    if not operation_types(capabilities, op):
        not_applicable("operand_types", f"the driver declares {op.name} on none of the types drawn for it (NNAPI's "
                                        "float forms; for BOX_WITH_NMS_LIMIT and ROI_POOLING its quantized ones too) "
                                        "with the types its other operands need besides: TENSOR_INT32, INT32, BOOL, "
                                        "the float scalar of its type and, on quantized data, TENSOR_QUANT16_ASYMM "
                                        "boxes, as its signature has them")
    scenario = data.draw(scenarios(capabilities, models=single_operation_models(capabilities, op)), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)
