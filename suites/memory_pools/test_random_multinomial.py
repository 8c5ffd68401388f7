"""POOL-2: RANDOM_MULTINOMIAL on its own, its samples judged by their distribution.

Its samples differ between correct drivers (NNAPI fixes their distribution, not the random
stream), so it is no family of the models other tests draw; here its samples' shares are judged
against the probabilities of their logits (`harness.judging.distributions`), everything else as
for any operation (the request's rules, the bytes around the outputs, the output shape).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.hal import OperationType
from harness.integration.skips import not_applicable
from harness.judging.oracle import assert_scenario_conforms
from harness.strategies import scenarios
from harness.strategies.sampling import logit_types, random_multinomial_models


@pytest.mark.requirement("POOL-2")
@pytest.mark.operations(OperationType.RANDOM_MULTINOMIAL)
@given(data=st.data())
def test_random_multinomial_samples_follow_their_distribution(driver, reference, capabilities, data) -> None:
    if OperationType.RANDOM_MULTINOMIAL not in capabilities.operations:
        not_applicable("operations", "the driver does not declare RANDOM_MULTINOMIAL")
    if not logit_types(capabilities):
        not_applicable("operand_types", "the driver declares RANDOM_MULTINOMIAL without a float tensor type for its "
                                        "logits, or without TENSOR_INT32 and INT32 for its seeds, output and count")
    scenario = data.draw(scenarios(capabilities, models=random_multinomial_models(capabilities)), label="scenario")
    assert_scenario_conforms("POOL-2", scenario, reference, driver)
