"""DOM-ALLOC-1..3: generated role sets, valid and invalid, judged as the reference judges them."""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.errors import ConformanceError
from harness.hal import BufferDesc, BufferRole, DriverError, OperandType
from harness.lockstep import Lockstep
from harness.strategies.domains import binary_model, role_models, role_sets

pytestmark = pytest.mark.usefixtures("memory_domains")


@pytest.mark.requirement("DOM-ALLOC-1", "DOM-ALLOC-2")
@given(data=st.data())
def test_generated_role_sets(driver, reference, capabilities, data) -> None:
    models = data.draw(role_models(capabilities), label="models")
    step = Lockstep(driver, reference)
    prepared = [step.prepare(model) for model in models]
    io_counts = [(len(m.subgraph.input_indexes), len(m.subgraph.output_indexes)) for m in models]
    desc, listed, inputs, outputs = data.draw(role_sets(len(models), io_counts), label="role set")
    buffer = step.allocate("buffer", desc, [prepared[i] for i in listed], inputs, outputs, requirement="DOM-ALLOC-1")
    event("allocation accepted" if buffer else "allocation rejected")
    step.close()


@pytest.mark.requirement("DOM-ALLOC-3")
def test_simple_fully_specified_buffer_is_served(driver, capabilities) -> None:
    """A driver that declares memory domains must serve at least a plain, fully specified buffer,
    with positive tokens that are unique among live buffers."""
    type = next(t for t in (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_QUANT8_ASYMM)
                if t in capabilities.operand_types)
    quant = (0.5, 3) if type == OperandType.TENSOR_QUANT8_ASYMM else (0.0, 0)
    prepared = driver.prepare_model(binary_model(type, (2, 2), quant).build_model())
    buffers = []
    try:
        for io_index in (0, 1, 0, 1):
            buffers.append(driver.allocate(BufferDesc(), [prepared], [BufferRole(0, io_index)], []))
    except DriverError as error:
        raise ConformanceError(
            f"[DOM-ALLOC-3] the driver declares memory-domain support but refused a fully specified "
            f"{type.name} (2, 2) buffer for one input role: {error}"
        ) from None
    tokens = [token for _, token in buffers]
    if not all(isinstance(t, int) and t > 0 for t in tokens) or len(set(tokens)) != len(tokens):
        raise ConformanceError(f"[DOM-ALLOC-3] tokens must be positive and unique among live buffers, got {tokens}")
    for buffer, _ in buffers:
        buffer.release()
