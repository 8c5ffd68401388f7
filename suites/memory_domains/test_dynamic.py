"""DOM-DYN-1/2: buffers of unknown shape written with outputs of different shapes, and misfits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.hal import BufferDesc, BufferRole, OperandType, OperationType
from harness.lockstep import Lockstep
from harness.strategies.domains import TokenUse, binary_model, nbytes, request, reshape_model
from harness.skips import REFUSED_ALLOCATION_FIX, not_applicable, not_run

pytestmark = pytest.mark.usefixtures("memory_domains")

F32 = OperandType.TENSOR_FLOAT32
DYNAMIC_REFUSAL_FIX = "serve buffers of unknown shape, or declare Capabilities(dynamic_buffers=False)"
shapes_2d = st.tuples(st.integers(1, 4), st.integers(1, 4))


def _producer(capabilities):
    """A model whose output shape is decided at execution: RESHAPE where the driver declares it,
    otherwise ADD on inputs of unknown shape (the request gives the shape)."""
    if OperationType.RESHAPE in capabilities.operations:
        return reshape_model(F32)
    return binary_model(F32, (0, 0))


def _producer_request(producer, shape, output):
    values = np.arange(math.prod(shape), dtype=np.float32)
    if producer.notes[0].startswith("RESHAPE"):
        return request(producer, [values, np.asarray(shape, np.int32)], [output], label=f"RESHAPE to {shape}")
    return request(producer, [values.reshape(shape), np.zeros(shape, np.float32)], [output], label=f"ADD of {shape}")


@pytest.mark.requirement("DOM-DYN-1")
@given(data=st.data())
def test_buffer_follows_the_latest_output_shape(driver, reference, capabilities, data) -> None:
    if not capabilities.dynamic_buffers:
        not_applicable("dynamic_buffers", "the driver declares that it refuses buffers of unknown shape")
    step = Lockstep(driver, reference)
    producer = _producer(capabilities)
    consumer = binary_model(F32, (0, 0))
    pairs = step.prepare(producer), step.prepare(consumer)
    desc = BufferDesc(data.draw(st.sampled_from([(), (0, 0)]), label="descriptor dims"))
    if step.allocate("buffer", desc, list(pairs), [BufferRole(1, 0)], [BufferRole(0, 0)], requirement="DOM-DYN-1") is None:
        not_run("the driver refused a buffer of unknown shape with GENERAL_FAILURE, though it declares dynamic_buffers",
                DYNAMIC_REFUSAL_FIX)
    for shape in data.draw(st.lists(shapes_2d, min_size=1, max_size=4), label="output shapes"):
        step.execute(pairs[0], _producer_request(producer, shape, TokenUse("buffer")), "DOM-DYN-1")
        contents = step.copy_to("buffer", nbytes(F32, shape), requirement="DOM-DYN-1")
        assert contents == np.arange(math.prod(shape), dtype=np.float32).tobytes()
        ones = np.ones(shape, np.float32)
        step.execute(pairs[1], request(consumer, [TokenUse("buffer"), ones], [nbytes(F32, shape)], label=f"ADD {shape}"), "DOM-DYN-1")
    step.close()


@pytest.mark.requirement("DOM-DYN-2", "DOM-STATE-1")
@given(shape=shapes_2d, fixed=shapes_2d)
def test_output_the_buffer_cannot_hold(driver, reference, capabilities, shape, fixed) -> None:
    """A buffer allocated as (r, c) receiving another shape: GENERAL_FAILURE, then uninitialized."""
    step = Lockstep(driver, reference)
    producer = _producer(capabilities)
    pair = step.prepare(producer)
    if step.allocate("buffer", BufferDesc(fixed), [pair], [], [BufferRole(0, 0)], requirement="DOM-DYN-2") is None:
        not_run("the driver refused a valid allocation with GENERAL_FAILURE (DOM-ALLOC-3 allows it, but nothing was checked)",
                REFUSED_ALLOCATION_FIX)
    step.execute(pair, _producer_request(producer, fixed, TokenUse("buffer")), "DOM-DYN-2")
    step.execute(pair, _producer_request(producer, shape, TokenUse("buffer")), "DOM-DYN-2")
    step.copy_to("buffer", nbytes(F32, fixed), requirement="DOM-STATE-1")
    step.close()


@pytest.mark.requirement("DOM-DYN-2")
@given(shape=shapes_2d, missing=st.integers(1, 16))
def test_too_small_memory_output(driver, reference, capabilities, shape, missing) -> None:
    step = Lockstep(driver, reference)
    producer = _producer(capabilities)
    pair = step.prepare(producer)
    capacity = max(nbytes(F32, shape) - 4 * missing, 0)
    step.execute(pair, _producer_request(producer, shape, capacity), "DOM-DYN-2")


@pytest.mark.requirement("DOM-DYN-2")
@given(written=shapes_2d, claimed=shapes_2d)
def test_request_dimensions_conflicting_with_the_buffer(driver, reference, capabilities, written, claimed) -> None:
    if not capabilities.dynamic_buffers:
        not_applicable("dynamic_buffers", "the driver declares that it refuses buffers of unknown shape")
    step = Lockstep(driver, reference)
    producer, consumer = _producer(capabilities), binary_model(F32, (0, 0))
    pairs = step.prepare(producer), step.prepare(consumer)
    if step.allocate("buffer", BufferDesc(), list(pairs), [BufferRole(1, 0)], [BufferRole(0, 0)], requirement="DOM-DYN-2") is None:
        not_run("the driver refused a buffer of unknown shape with GENERAL_FAILURE, though it declares dynamic_buffers",
                DYNAMIC_REFUSAL_FIX)
    step.execute(pairs[0], _producer_request(producer, written, TokenUse("buffer")), "DOM-DYN-1")
    ones = np.ones(claimed, np.float32)
    use = TokenUse("buffer", dimensions=claimed)
    step.execute(pairs[1], request(consumer, [use, ones], [nbytes(F32, claimed)], label=f"ADD claiming {claimed}"), "DOM-DYN-2")
    step.close()
