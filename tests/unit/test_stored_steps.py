"""A call sequence stored in an example database (`harness.judging.stored_steps`) comes back as
the same steps, and replays the same way; a stored value is read as untrusted data: anything
outside the format's closed set of types and calls is refused with what was found."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from harness.api.errors import ConformanceError
from harness.api.hal import BufferDesc, BufferRole, OperandType, OperationType
from harness.judging.lockstep import NEXT_RUN, Lockstep, Step, replay
from harness.judging.scenario import MemorySpec
from harness.judging.stored_steps import FORMAT, StoredStepsError, decode_steps, encode_steps
from harness.strategies.domains import Flavor, TokenUse, nbytes, request, values_for
from reference_driver import ReferenceDevice

FLAVOR = Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32)


def _sequence(driver, reference) -> Lockstep:
    """A run of every kind of call the memory-domain state machine makes."""
    step = Lockstep(driver, reference)
    model = FLAVOR.model((2, 2))
    pair = step.prepare(model)
    step.allocate("buffer1", BufferDesc((2, 2)), [pair], [BufferRole(0, 0)], [])
    step.copy_from("buffer1", MemorySpec("ashmem", values_for(FLAVOR.type, (2, 2), 3).tobytes()), (2, 2))
    step.allocate("buffer2", BufferDesc(), [pair], [], [BufferRole(0, 0)])
    inputs = [TokenUse("buffer1"), values_for(FLAVOR.type, (2, 2), 4)]
    step.execute(pair, request(model, inputs, [TokenUse("buffer2")], label="write buffer2"), "DOM-ROLE-1")
    step.execute(pair, request(model, inputs, [nbytes(FLAVOR.type, (2, 2))], label="read buffer1"), "DOM-ROLE-1")
    step.copy_to("buffer2", nbytes(FLAVOR.type, (2, 2)), "mmap_fd", file_offset=8)
    step.close()
    return step


def test_a_stored_sequence_comes_back_as_the_same_steps_and_replays() -> None:
    steps = (*_sequence(ReferenceDevice(), ReferenceDevice()).steps, Step(NEXT_RUN, ()))
    assert {s.method for s in steps} >= {"prepare", "allocate", "copy_from", "execute", "copy_to", "release", NEXT_RUN}
    stored = encode_steps(steps)
    assert decode_steps(stored) == steps
    replay(decode_steps(stored), ReferenceDevice(), ReferenceDevice()).close()


def test_a_buffer_refused_on_replay_that_the_recorded_run_used_is_a_leak(leaky) -> None:
    # Recorded on a fresh driver, which served the buffer; replayed on the same driver, which has
    # leaked since: its refusal is judged (DOM-ALLOC-3), not a missing name in the harness.
    driver = leaky(1)
    recorded = Lockstep(driver, ReferenceDevice())
    pair = recorded.prepare(FLAVOR.model((2, 2)))
    recorded.allocate("buffer1", BufferDesc((2, 2)), [pair], [BufferRole(0, 0)], [])
    recorded.copy_from("buffer1", MemorySpec("ashmem", values_for(FLAVOR.type, (2, 2), 3).tobytes()), (2, 2))
    recorded.close()
    steps = recorded.steps
    with pytest.raises(ConformanceError) as again:
        replay(decode_steps(encode_steps(steps)), driver, ReferenceDevice())
    assert again.value.requirement == "DOM-ALLOC-3"


def _stored(document) -> bytes:
    return zlib.compress(json.dumps(document).encode())


@pytest.mark.parametrize("document, found", [
    ([FORMAT, [["system", {"tuple": []}]]], "step 1 is not one of the lockstep's calls"),
    ([FORMAT, [["release", {"tuple": [{"record": "os.system", "fields": {}}]}]]], "'os.system' is not one of the types"),
    ([FORMAT, [["release", {"tuple": [{"record": "harness.api.hal.BufferDesc", "fields": {"__class__": 1}}]}]]],
     "fields of harness.api.hal.BufferDesc must be among ['dimensions']"),
    ([FORMAT, [["release", {"tuple": [{"enum": "harness.api.hal.ErrorStatus", "value": 999}]}]]], "step 1:"),
    ([FORMAT, [["release", ["buffer1"]]]], "unexpected value"),
    (["driver-harness/steps/0", []], "not a driver-harness/steps/1 document"),
])
def test_a_stored_value_outside_the_format_is_refused_with_what_was_found(document, found) -> None:
    with pytest.raises(StoredStepsError) as refused:
        decode_steps(_stored(document))
    assert found in str(refused.value)


def test_a_stored_value_that_is_not_compressed_json_is_refused() -> None:
    with pytest.raises(StoredStepsError, match="not compressed JSON"):
        decode_steps(base64.b64encode(b"\x80\x04pickle"))


def test_a_step_holding_something_else_cannot_be_stored() -> None:
    with pytest.raises(TypeError, match="cannot be stored"):
        encode_steps([Step("release", (object(),))])
