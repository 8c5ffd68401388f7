"""DOM-ALLOC-1..3: generated role sets, valid and invalid, judged as the reference judges them."""

from __future__ import annotations

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.api.hal import BufferDesc, BufferRole, DriverError, ErrorStatus, OperandType, OperationType, is_token
from harness.judging.direct_calls import DirectCalls
from harness.judging.lockstep import Lockstep
from harness.judging.scenario import MemorySpec
from harness.strategies.domains import (
    FIXED_QUANT,
    Flavor,
    TokenUse,
    domain_flavors,
    domain_types,
    nbytes,
    request,
    role_models,
    role_sets,
    values_for,
)
from harness.strategies.values import QUANT_TYPES
from harness.integration.skips import not_applicable, not_run, refused_allocation
from harness.judging.verdict import violation

pytestmark = pytest.mark.usefixtures("memory_domains")


@pytest.mark.requirement("DOM-ALLOC-1", "DOM-ALLOC-2")
@given(data=st.data())
def test_generated_role_sets(driver, reference, capabilities, flavor, data) -> None:
    models = data.draw(role_models(capabilities), label="models")
    with Lockstep(driver, reference) as step:
        prepared = [step.prepare(model) for model in models]
        io_counts = [(len(m.subgraph.input_indexes), len(m.subgraph.output_indexes)) for m in models]
        desc, listed, inputs, outputs = data.draw(role_sets(len(models), io_counts), label="role set")
        buffer = step.allocate("buffer", desc, [prepared[i] for i in listed], inputs, outputs, requirement="DOM-ALLOC-1")
        event("allocation accepted" if buffer else "allocation rejected")


@pytest.mark.requirement("DOM-ALLOC-3", "DOM-ROLE-1")
def test_the_first_buffers_after_start_up_are_served(fresh_driver, reference, flavor) -> None:
    """What a driver makes on first use (a token table, a buffer pool) is met once in a process, by
    whichever test allocates first, and that test may never use its buffer.  So: the driver as new,
    its first two buffers written by copy, then named by their tokens in a request."""
    shape = (2, 2)
    model = flavor.model(shape)
    with Lockstep(fresh_driver, reference) as step:
        pair = step.prepare(model)
        for io_index, name in enumerate(("first", "second")):
            if step.allocate(name, BufferDesc(), [pair], [BufferRole(0, io_index)], [], requirement="DOM-ALLOC-3") is None:
                if io_index == 0:
                    raise violation("DOM-ALLOC-3", f"the driver declares memory-domain support but refused its first "
                                                   f"buffer after start-up, a fully specified {flavor.type.name} "
                                                   f"{shape} one for one input role")
                refused_allocation()  # past the first, a refusal is a memory limit (DOM-ALLOC-3 allows it)
            step.copy_from(name, MemorySpec("ashmem", values_for(flavor.type, shape, io_index).tobytes()), ())
        step.execute(pair, request(model, [TokenUse("first"), TokenUse("second")],
                                   [nbytes(flavor.type, shape)], label="op(first, second)"), "DOM-ROLE-1")


@pytest.mark.requirement("DOM-ALLOC-3")
def test_simple_fully_specified_buffer_is_served(driver, flavor) -> None:
    """A driver that declares memory domains must serve at least a plain, fully specified buffer,
    with positive tokens that are unique among live buffers."""
    type = flavor.type
    calls = DirectCalls(driver)
    prepared = calls.prepare(flavor.model((2, 2)))
    buffers = []
    try:
        for io_index in (0, 1, 0, 1):
            try:
                buffers.append(calls.allocate(BufferDesc(), [prepared], [BufferRole(0, io_index)], []))
            except DriverError as error:
                if not buffers or error.status != ErrorStatus.GENERAL_FAILURE:
                    raise violation("DOM-ALLOC-3",
                        f"the driver declares memory-domain support but refused a fully specified "
                        f"{type.name} (2, 2) buffer for one input role"
                        f"{f' with {len(buffers)} live' if buffers else ''}: {error}"
                    ) from None
                # Past the first, a refusal is a memory limit (DOM-ALLOC-3 allows it with GENERAL_FAILURE).
                not_run(f"the driver holds {len(buffers)} plain {type.name} (2, 2) buffers at once, and this test "
                        f"compares the tokens of 4", "serve 4 small buffers at once")
        tokens = [token for _, token in buffers]
        if not all(is_token(t) for t in tokens) or len(set(tokens)) != len(tokens):
            raise violation("DOM-ALLOC-3", f"tokens must be positive and unique among live buffers, got {tokens}")
    finally:
        for buffer, _ in buffers:
            calls.release(buffer)


def _mistakes(flavor: Flavor, other_type: OperandType | None = OperandType.TENSOR_INT32):
    """name -> (requirement, models to prepare, listed model indexes, desc dims, input roles, output roles).
    ``other_type``: a second declared type for the type conflict (None: the driver has none)."""
    type, quant = flavor.type, flavor.quant

    def binary_model(type, dims, quant=(0.0, 0), *, scalar_input=False):
        return flavor.model(dims, type=type, quant=quant, scalar_input=scalar_input)

    same = binary_model(type, (2, 2), quant)
    scalar = binary_model(type, (2, 2), quant, scalar_input=True)
    quantized = quant[0] != 0
    cases = {
        "empty roles": ("DOM-ALLOC-1", [same], [0], (), [], []),
        "no prepared models": ("DOM-ALLOC-1", [same], [], (), [BufferRole(0, 0)], []),
        "model index out of range": ("DOM-ALLOC-1", [same], [0], (), [BufferRole(1, 0)], []),
        "input io index out of range": ("DOM-ALLOC-1", [same], [0], (), [BufferRole(0, 2)], []),
        "output io index out of range": ("DOM-ALLOC-1", [same], [0], (), [], [BufferRole(0, 1)]),
        # -1 is out of range too: a driver indexing a list with it gets the last model or operand
        "negative model index": ("DOM-ALLOC-1", [same, same], [0, 1], (), [BufferRole(-1, 0)], []),
        "negative input io index": ("DOM-ALLOC-1", [same], [0], (), [BufferRole(0, -1)], []),
        "negative output io index": ("DOM-ALLOC-1", [same], [0], (), [], [BufferRole(0, -1)]),
        "probability 0": ("DOM-ALLOC-1", [same], [0], (), [BufferRole(0, 0, 0.0)], []),
        "negative probability": ("DOM-ALLOC-1", [same], [0], (), [BufferRole(0, 0, -0.5)], []),
        "probability 10": ("DOM-ALLOC-1", [same], [0], (), [BufferRole(0, 0, 10.0)], []),
        # NaN is neither <= 0 nor > 1: a check written as the negation of the range lets it through
        "probability NaN": ("DOM-ALLOC-1", [same], [0], (), [BufferRole(0, 0, float("nan"))], []),
        "same role twice": ("DOM-ALLOC-1", [same], [0], (), [BufferRole(0, 0), BufferRole(0, 0)], []),
        "same model listed twice": ("DOM-ALLOC-1", [same], [0, 0], (), [BufferRole(0, 0), BufferRole(1, 0)], []),
        "rank conflict between roles": ("DOM-ALLOC-2", [same, binary_model(type, (2, 2, 1), quant)], [0, 1], (), [BufferRole(0, 0), BufferRole(1, 0)], []),
        "dimension conflict between roles": ("DOM-ALLOC-2", [same, binary_model(type, (2, 3), quant)], [0, 1], (), [BufferRole(0, 0), BufferRole(1, 0)], []),
        "rank conflict with descriptor": ("DOM-ALLOC-2", [same], [0], (2, 2, 1), [BufferRole(0, 0)], []),
        "dimension conflict with descriptor": ("DOM-ALLOC-2", [same], [0], (3, 2), [BufferRole(0, 0)], []),
        # on an axis the role leaves unknown: only the sign makes it wrong (0 is unknown, -1 is nothing)
        "negative descriptor dimension": ("DOM-ALLOC-2", [binary_model(type, (0, 2), quant)], [0], (-1, 2), [BufferRole(0, 0)], []),
        "scalar role with dimensions": ("DOM-ALLOC-2", [scalar], [0], (1,), [BufferRole(0, 2)], []),
        "valid roles": ("DOM-ALLOC-1", [same, binary_model(type, (0, 2), quant)], [0, 1], (), [BufferRole(0, 0), BufferRole(1, 1)], [BufferRole(0, 0)]),
    }
    if other_type is not None:
        other_quant = FIXED_QUANT if other_type in QUANT_TYPES else (0.0, 0)
        cases["type conflict"] = ("DOM-ALLOC-2", [same, binary_model(other_type, (2, 2), other_quant)], [0, 1], (),
                                  [BufferRole(0, 0), BufferRole(1, 0)], [])
    if quantized:
        cases["scale conflict"] = ("DOM-ALLOC-2", [same, binary_model(type, (2, 2), (quant[0] / 2, quant[1]))], [0, 1], (),
                                   [BufferRole(0, 0), BufferRole(1, 0)], [])
        cases["zero point conflict"] = ("DOM-ALLOC-2", [same, binary_model(type, (2, 2), (quant[0], (quant[1] + 1) % 100))],
                                        [0, 1], (), [BufferRole(0, 0), BufferRole(1, 0)], [])
    return cases


_EVERY_MISTAKE = _mistakes(Flavor(OperationType.ADD, OperandType.TENSOR_QUANT8_ASYMM, (0.5, 3)))
MISTAKES = list(_EVERY_MISTAKE)
_REQUIREMENTS = {name: spec[0] for name, spec in _EVERY_MISTAKE.items()}


@pytest.mark.parametrize("mistake", [pytest.param(m, marks=pytest.mark.requirement(_REQUIREMENTS[m]), id=m) for m in MISTAKES])
@given(data=st.data())
def test_each_allocation_mistake(driver, reference, capabilities, flavor, mistake, data) -> None:
    """Every DOM-ALLOC-1/2 mistake of the vendor test suite, tried in every run."""
    needs_quantized = mistake in ("scale conflict", "zero point conflict")
    if needs_quantized and OperandType.TENSOR_QUANT8_ASYMM not in capabilities.operand_types:
        not_applicable("operand_types", f"{mistake} needs quantized role operands (TENSOR_QUANT8_ASYMM), which the driver does not declare")
    drawn = data.draw(domain_flavors(capabilities, quantized=needs_quantized), label="flavor")
    others = [t for t in dict.fromkeys((*domain_types(capabilities), OperandType.TENSOR_INT32))
              if t != drawn.type and t in capabilities.operand_types]
    if mistake == "type conflict" and not others:
        not_applicable("operand_types", "a type conflict between roles needs two declared operand types")
    cases = _mistakes(drawn, others[0] if others else None)
    requirement, models, listed, desc, inputs, outputs = cases[mistake]
    with Lockstep(driver, reference) as step:
        prepared = [step.prepare(model) for model in models]
        if any(p is None for p in prepared):
            not_run("the reference refused a model this case needs (a harness defect)", "report it to the harness's maintainers")
        step.allocate("buffer", BufferDesc(desc), [prepared[i] for i in listed], inputs, outputs, requirement=requirement)


@pytest.mark.requirement("DOM-ALLOC-3", "DOM-ALLOC-1")
@pytest.mark.parametrize("live", [1, 3], ids=["one-at-a-time", "three-live"])
def test_released_buffers_free_what_they_held(driver, flavor, live) -> None:
    """A driver that served an allocation serves it again after any number of allocate/release
    cycles: a refusal that grows with history is a leak (DOM-ALLOC-3).  The buffers live form a
    sliding window (each new one releases the oldest beyond ``live``), so an allocation comes
    after releases of buffers older than some still live, and its token must differ from theirs.
    Before each allocation the driver refuses an invalid one (a role of probability 0): what a
    refusal takes while it validates must be given back too."""
    calls = DirectCalls(driver)
    prepared = calls.prepare(flavor.model((2, 2)))
    allocations = 24
    held: list[tuple[object, int]] = []
    served_with = -1  # the most buffers live beside a new one that the driver served
    try:
        for number in range(1, allocations + 1):
            if len(held) == live:
                oldest, _ = held.pop(0)
                calls.release(oldest)
            try:
                invalid = calls.allocate(BufferDesc(), [prepared], [BufferRole(0, 0, 0.0)], [])
            except DriverError:
                pass  # refused, as DOM-ALLOC-1 requires: this test looks at what comes after
            else:
                calls.release(invalid[0])
                raise violation("DOM-ALLOC-1", f"allocation {number} of {allocations}: the driver served a buffer "
                                               f"for a role of probability 0")
            try:
                buffer, token = calls.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
            except DriverError as error:
                where = f"allocation {number} of {allocations} ({live} live at most, the oldest released first)"
                if served_with < 0:  # the plain buffer every memory-domain driver serves (the test above)
                    raise violation("DOM-ALLOC-3", f"{where}: the driver refused a plain fully specified buffer with "
                                                   f"none live: {error}") from None
                if len(held) <= served_with:  # a refusal that grew with history
                    raise violation("DOM-ALLOC-3", f"{where}: the driver refused a plain fully specified buffer with "
                                                   f"{len(held)} live, where it served one with {served_with} live "
                                                   f"before: {error}") from None
                if error.status != ErrorStatus.GENERAL_FAILURE:
                    raise violation("DOM-ALLOC-3", f"{where}: the driver refused a valid allocation with "
                                                   f"{error.status.name}; a memory limit is GENERAL_FAILURE") from None
                # Never asked with this many live before: a memory limit, which DOM-ALLOC-3 allows.
                not_run(f"the driver holds {len(held)} plain buffers at once, and this test keeps {live} live",
                        f"serve {live} small buffers at once")
            served_with = max(served_with, len(held))
            live_tokens = [t for _, t in held]
            held.append((buffer, token))
            if token in live_tokens:
                raise violation("DOM-ALLOC-3",
                    f"allocation {number} of {allocations} ({live} live at most, the oldest released "
                    f"first): token {token} is already held by a live buffer (live tokens {live_tokens}); tokens must be "
                    f"unique among live buffers")
    finally:
        for buffer, _ in held:
            calls.release(buffer)
