"""DOM-DYN-1/2: buffers of unknown shape written with outputs of different shapes, and misfits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.api.hal import BufferDesc, BufferRole, OperationType, element_size
from harness.judging.lockstep import Lockstep
from harness.judging.scenario import Scenario
from harness.judging.verdict import require
from harness.strategies.domains import Flavor, TokenUse, dynamic_producer, identity_operand, nbytes, request, values_for
from harness.strategies.values import sampled
from harness.integration.skips import not_applicable, not_run, refused_allocation

pytestmark = pytest.mark.usefixtures("memory_domains")

DYNAMIC_REFUSAL_FIX = "serve buffers of unknown shape, or declare Capabilities(dynamic_buffers=False)"
shapes_2d = st.tuples(st.integers(1, 4), st.integers(1, 4))


def _other_rank(data, shape: tuple[int, ...], label: str) -> tuple[int, ...]:
    """``shape`` as drawn, or with a trailing axis of 1 added or its last axis dropped: the same
    leading extents in another rank, which a check comparing shapes axis by axis with ``zip`` passes."""
    how = data.draw(sampled(("as drawn", "an axis added", "an axis dropped")), label=f"{label}: rank")
    return shape + (1,) if how == "an axis added" else shape[:-1] if how == "an axis dropped" else shape


def _values(flavor: Flavor, shape) -> np.ndarray:
    return values_for(flavor.type, shape, 7)


def _producer_request(producer, flavor: Flavor, shape, output):
    values = _values(flavor, shape)
    if producer.notes[0].startswith("RESHAPE"):
        return request(producer, [values.reshape(-1), np.asarray(shape, np.int32)], [output], label=f"RESHAPE to {shape}")
    return request(producer, [values, identity_operand(flavor, shape)], [output], label=f"{flavor.op.name} of {shape}")


@pytest.mark.requirement("DOM-DYN-1")
@given(data=st.data())
def test_buffer_follows_the_latest_output_shape(driver, reference, capabilities, flavor, data) -> None:
    if not capabilities.dynamic_buffers:
        not_applicable("dynamic_buffers", "the driver declares that it refuses buffers of unknown shape")
    with Lockstep(driver, reference) as step:
        producer = dynamic_producer(capabilities, flavor)
        consumer = flavor.model((0, 0))
        pairs = step.prepare(producer), step.prepare(consumer)
        desc = BufferDesc(data.draw(sampled(((), (0, 0))), label="descriptor dims"))
        if step.allocate("buffer", desc, list(pairs), [BufferRole(1, 0)], [BufferRole(0, 0)], requirement="DOM-DYN-1") is None:
            not_run("the driver refused a buffer of unknown shape with GENERAL_FAILURE, though it declares dynamic_buffers",
                    DYNAMIC_REFUSAL_FIX)
        for shape in data.draw(st.lists(shapes_2d, min_size=1, max_size=4), label="output shapes"):
            step.execute(pairs[0], _producer_request(producer, flavor, shape, TokenUse("buffer")), "DOM-DYN-1")
            contents = step.copy_to("buffer", nbytes(flavor.type, shape), requirement="DOM-DYN-1")
            require(contents == _values(flavor, shape).tobytes(), "DOM-DYN-1",
                    f"after an execution wrote a {shape} output, the buffer does not hold it")
            other = values_for(flavor.type, shape, 3)
            step.execute(pairs[1], request(consumer, [TokenUse("buffer"), other], [nbytes(flavor.type, shape)],
                                           label=f"{flavor.op.name} {shape}"), "DOM-DYN-1")


@pytest.mark.requirement("DOM-DYN-2", "DOM-STATE-1")
@given(shape=shapes_2d, fixed=shapes_2d, data=st.data())
def test_output_the_buffer_cannot_hold(driver, reference, capabilities, flavor, shape, fixed, data) -> None:
    """A buffer allocated with a fixed shape receiving another shape (another rank too, where
    RESHAPE makes outputs of any rank): GENERAL_FAILURE, then uninitialized."""
    with Lockstep(driver, reference) as step:
        producer = dynamic_producer(capabilities, flavor)
        if producer.notes[0].startswith("RESHAPE"):
            fixed, shape = _other_rank(data, fixed, "buffer"), _other_rank(data, shape, "output")
        pair = step.prepare(producer)
        if step.allocate("buffer", BufferDesc(fixed), [pair], [], [BufferRole(0, 0)], requirement="DOM-DYN-2") is None:
            refused_allocation()
        step.execute(pair, _producer_request(producer, flavor, fixed, TokenUse("buffer")), "DOM-DYN-2")
        step.execute(pair, _producer_request(producer, flavor, shape, TokenUse("buffer")), "DOM-DYN-2")
        step.copy_to("buffer", nbytes(flavor.type, fixed), requirement="DOM-STATE-1")


@pytest.mark.requirement("DOM-DYN-2")
@given(shape=shapes_2d, missing=st.integers(1, 16))
def test_too_small_memory_output(driver, reference, capabilities, flavor, shape, missing) -> None:
    with Lockstep(driver, reference) as step:
        producer = dynamic_producer(capabilities, flavor)
        pair = step.prepare(producer)
        capacity = max(nbytes(flavor.type, shape) - element_size(flavor.type) * missing, 0)
        step.execute(pair, _producer_request(producer, flavor, shape, capacity), "DOM-DYN-2")


@pytest.mark.requirement("DOM-DYN-2")
@given(written=shapes_2d, claimed=shapes_2d, data=st.data())
def test_request_dimensions_conflicting_with_the_buffer(driver, reference, capabilities, flavor, written, claimed, data) -> None:
    """An input buffer given request dimensions: the shape it holds (the written one, or, with a
    consumer of unknown rank, another rank) conflicts unless they agree axis for axis."""
    if not capabilities.dynamic_buffers:
        not_applicable("dynamic_buffers", "the driver declares that it refuses buffers of unknown shape")
    with Lockstep(driver, reference) as step:
        # A consumer of unknown rank leaves the rank to the buffer: a claim of another rank conflicts
        # with the buffer alone, not with the model (which REQ-2 checks first).
        consumer_dims = data.draw(sampled(((0, 0), ())), label="consumer input dims")
        claimed = _other_rank(data, data.draw(sampled((claimed, written)), label="claimed"), "claimed")
        producer, consumer = dynamic_producer(capabilities, flavor), flavor.model(consumer_dims)
        pairs = step.prepare(producer), step.prepare(consumer)
        if step.allocate("buffer", BufferDesc(), list(pairs), [BufferRole(1, 0)], [BufferRole(0, 0)], requirement="DOM-DYN-2") is None:
            not_run("the driver refused a buffer of unknown shape with GENERAL_FAILURE, though it declares dynamic_buffers",
                    DYNAMIC_REFUSAL_FIX)
        step.execute(pairs[0], _producer_request(producer, flavor, written, TokenUse("buffer")), "DOM-DYN-1")
        other = values_for(flavor.type, claimed, 3)
        use = TokenUse("buffer", dimensions=claimed)
        step.execute(pairs[1], request(consumer, [use, other], [nbytes(flavor.type, claimed)],
                                       label=f"{flavor.op.name} claiming {claimed}"), "DOM-DYN-2")
