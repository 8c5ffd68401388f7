"""The driver service (SPEC §7): proxies, zero-copy handles, crashes, hangs, several clients, no leaks."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import time
import traceback
import weakref

import numpy as np
import pytest

from harness.judging.builders import binary_model, pack_request
from harness.api.errors import DriverCrash, DriverHang, DriverLoadError
from harness.api.hal import BufferDesc, BufferRole, Buffer, DataLocation, Device, DriverError, ErrorStatus, OperandType, OperationType, PreparedModel, Request, RequestArgument
from harness.api.memory import create_ashmem
from harness.judging.lockstep import Lockstep
from harness.judging.oracle import expect_status
from harness.service import AttachedClient, DriverService, supervisor, wire
from harness.service.client import RemoteError
from harness.service.proxies import begin_call
from harness.strategies.domains import Flavor
from reference_driver import ReferenceDevice


def add_request(dims=(4,)):
    model = binary_model(dims=dims)
    a = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
    request, in_memory, out_memory = pack_request(model, [a, a])
    return model, request, out_memory, a + a


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.requirement("SVC-1")
def test_proxies_present_the_driver_api(service) -> None:
    device = service.device
    assert isinstance(device, Device) and device.name == "reference"
    model, request, out, expected = add_request()
    prepared = device.prepare_model(model)
    assert isinstance(prepared, PreparedModel)
    result = prepared.execute(request)
    assert result.output_shapes[0].dimensions == (4,)
    assert out.read() == expected.tobytes()  # the service wrote into our memfd
    buffer, token = device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    assert isinstance(buffer, Buffer) and token > 0
    with expect_status(ErrorStatus.GENERAL_FAILURE, rule="DOM-STATE-2"):
        buffer.copy_to(create_ashmem(16))
    assert service.pid != os.getpid() and alive(service.pid)


@pytest.mark.requirement("SVC-3")
def test_memories_cross_as_descriptors_not_bytes(service) -> None:
    elements = (64 << 20) // 4
    model, request, out, _ = add_request((elements,))
    prepared = service.device.prepare_model(model)
    before = service.connection.bytes_sent
    prepared.execute(request)
    sent = service.connection.bytes_sent - before
    assert sent < 4096, f"an execute over 192 MiB of pools sent {sent} bytes"
    assert np.frombuffer(out.read(), np.float32)[-1] == 2 * (elements - 1)


@pytest.mark.requirement("SVC-1")
@pytest.mark.parametrize("behaviour, reported", [("segfault", "killed by signal SIGSEGV"), ("exit", "exited with code 7")])
def test_crash_is_reported_and_the_next_call_gets_a_fresh_service(broken_driver, monkeypatch, behaviour, reported) -> None:
    monkeypatch.setenv("BROKEN_BEHAVIOUR", behaviour)
    service = DriverService(broken_driver, timeout=10)
    try:
        model, request, _, _ = add_request()
        prepared = service.device.prepare_model(model)
        first_pid, generation = service.pid, service.generation
        with pytest.raises(DriverCrash) as info:
            prepared.execute(request)
        message = str(info.value)
        assert "[SVC-1]" in message and "PreparedModel.execute(request of 2 inputs" in message and reported in message
        if behaviour == "segfault":
            # the tail of the service's stderr: the crashing thread's stack, down to the driver's own file
            assert "broken_driver.py" in message, message
        with pytest.raises(DriverCrash, match="belongs to a driver service that was replaced"):
            prepared.execute(request)
        assert service.device.capabilities().memory_domains  # a fresh service answers
        assert service.generation == generation + 1 and service.pid != first_pid and not alive(first_pid)
    finally:
        service.close()


HANGING_START = textwrap.dedent(
    '''
    import time

    from reference_driver import ReferenceDevice


    def _wait_forever():
        while True:
            time.sleep(0.05)


    class _Hanging(ReferenceDevice):
        def capabilities(self):
            _wait_forever()


    def hangs_in_capabilities():
        return _Hanging()


    def hangs_in_factory():
        _wait_forever()
    '''
)


@pytest.mark.requirement("SVC-2")
@pytest.mark.parametrize(("factory", "frame"), [("hangs_in_capabilities", "capabilities"), ("hangs_in_factory", "hangs_in_factory")])
def test_a_driver_whose_start_up_hangs_is_named_with_where_it_hung(tmp_path, monkeypatch, factory, frame) -> None:
    path = tmp_path / "hanging_start.py"
    path.write_text(HANGING_START)
    monkeypatch.setattr(supervisor, "_START_TIMEOUT_S", 1.5)
    with pytest.raises(DriverLoadError) as info:
        DriverService(f"{path}:{factory}", timeout=1)
    first, _, stacks = str(info.value).partition("\n")
    assert "did not start" in first and "capabilities() did not return within 1.5 s" in first
    assert "hanging_start.py" in stacks and f"in {frame}" in stacks  # where the driver was
    assert f'File "{wire.__file__}"' not in stacks  # the idle call threads are counted, not listed


WRONG_RETURNS = textwrap.dedent(
    '''
    from reference_driver import ReferenceDevice


    class _PreparedNotHandedBack(ReferenceDevice):
        def prepare_model(self, model):
            super().prepare_model(model)


    class _TokenLeftOut(ReferenceDevice):
        def allocate(self, desc, prepared_models, input_roles, output_roles):
            return super().allocate(desc, prepared_models, input_roles, output_roles)[0]


    def prepared_not_handed_back():
        return _PreparedNotHandedBack()


    def token_left_out():
        return _TokenLeftOut()
    '''
)


@pytest.mark.requirement("SVC-1")
def test_a_driver_method_returning_the_wrong_thing_is_named_at_that_call(tmp_path) -> None:
    path = tmp_path / "wrong_returns.py"
    path.write_text(WRONG_RETURNS)
    model = binary_model(dims=(4,))
    service = DriverService(f"{path}:prepared_not_handed_back", timeout=10)
    try:
        with pytest.raises(RemoteError) as info:
            service.device.prepare_model(model)
        assert "Device.prepare_model" in str(info.value) and "prepare_model returned None" in str(info.value)
    finally:
        service.close()
    service = DriverService(f"{path}:token_left_out", timeout=10)
    try:
        prepared = service.device.prepare_model(model)
        with pytest.raises(RemoteError) as info:
            service.device.allocate(BufferDesc(()), [prepared], [BufferRole(0, 0)], [])
        assert "allocate returned ReferenceBuffer" in str(info.value) and "(buffer, token)" in str(info.value)
    finally:
        service.close()


@pytest.mark.requirement("SVC-2")
def test_hang_is_reported_with_stacks(broken_driver, monkeypatch) -> None:
    monkeypatch.setenv("BROKEN_BEHAVIOUR", "hang")
    service = DriverService(broken_driver, timeout=1.5)
    try:
        model, request, _, _ = add_request()
        prepared = service.device.prepare_model(model)
        hung_pid = service.pid
        started = time.monotonic()
        with pytest.raises(DriverHang) as info:
            prepared.execute(request)
        assert time.monotonic() - started < 1.5 + 3
        message = str(info.value)
        assert "[SVC-2] PreparedModel.execute" in message and "did not return within 1.5 s" in message
        assert "in execute" in message and "broken_driver.py" in message  # the hung thread's stack
        # The call threads that were only waiting for a call are counted, not listed: listed, they
        # pushed the hung thread's stack out of the breaker's shortened copy of this report.
        assert "more call threads were idle" in message
        assert f'File "{wire.__file__}"' not in message
        assert not alive(hung_pid)
        assert service.device.get_supported_operations(model) == [True]
    finally:
        service.close()


def test_unexpected_driver_exceptions_are_reported_not_swallowed(broken_driver, monkeypatch) -> None:
    monkeypatch.setenv("BROKEN_BEHAVIOUR", "raise")
    service = DriverService(broken_driver, timeout=10)
    try:
        model, request, _, _ = add_request()
        with pytest.raises(RemoteError, match="KeyError inside the driver service: 'driver bug'"):
            service.device.prepare_model(model).execute(request)
        assert service.generation == 1  # the service survived
    finally:
        service.close()


@pytest.mark.requirement("SVC-1")
def test_calls_from_many_threads_share_one_connection(service) -> None:
    from concurrent.futures import ThreadPoolExecutor

    model, request, out, expected = add_request((256,))
    prepared = service.device.prepare_model(model)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: prepared.execute(request).output_shapes, range(64)))
    assert all(r[0].dimensions == (256,) for r in results) and out.read() == expected.tobytes()


@pytest.mark.requirement("SVC-1")
def test_calls_sent_early_are_answered_in_any_order(service) -> None:
    small, large = add_request((4,)), add_request((64,))
    finishes = [begin_call(service.device, "prepare_model", model) for model, *_ in (small, large)]
    prepared = [finish() for finish in reversed(finishes)][::-1]  # the later call's reply is read first
    executions = [begin_call(p, "execute", request) for p, (_, request, _, _) in zip(prepared, (small, large))]
    shapes = [finish().output_shapes[0].dimensions for finish in reversed(executions)]
    assert shapes == [(64,), (4,)]
    assert [out.read() for _, _, out, _ in (small, large)] == [expected.tobytes() for *_, expected in (small, large)]


@pytest.fixture
def segfaulting_service(broken_driver, monkeypatch):
    monkeypatch.setenv("BROKEN_BEHAVIOUR", "segfault")
    service = DriverService(broken_driver, timeout=10)
    yield service
    service.close()


@pytest.mark.requirement("SVC-1")
def test_a_crash_during_a_call_sent_early_is_the_same_failure_as_during_a_plain_call(segfaulting_service) -> None:
    model, request, _, _ = add_request()
    raised = []
    for make in (lambda p: p.execute(request), lambda p: begin_call(p, "execute", request)()):
        with pytest.raises(DriverCrash) as info:
            make(segfaulting_service.device.prepare_model(model))
        raised.append(info.value)
    assert "[SVC-1]" in str(raised[1]) and "killed by signal SIGSEGV" in str(raised[1])
    # hypothesis tells failures apart by where they are raised: both from the same line
    assert [traceback.extract_tb(error.__traceback__)[-1][:2] for error in raised] == \
        [traceback.extract_tb(raised[0].__traceback__)[-1][:2]] * 2
    for memory in request.pools:  # the tracebacks kept above hold them: closed now, not at a collection
        memory.close()


OTHER_CLIENT = textwrap.dedent(
    '''
    import json, sys
    import numpy as np
    from harness.judging.builders import binary_model, pack_request
    from harness.api.hal import DataLocation, DriverError, Request, RequestArgument
    from harness.service import AttachedClient

    address, token = sys.argv[1], int(sys.argv[2])
    client = AttachedClient(address)
    model = binary_model(dims=(4,))
    prepared = client.device.prepare_model(model)      # the same graph, prepared by this client
    plain, in_memory, out_memory = pack_request(model, [np.ones(4, np.float32)] * 2)
    using_token = Request((RequestArgument(False, DataLocation(2, 0, 0)), plain.inputs[1]), plain.outputs,
                          (in_memory, out_memory, token))
    try:
        prepared.execute(using_token)
        outcome = "success"
    except DriverError as error:
        outcome = error.status.name
    print(json.dumps({"outcome": outcome, "own_request": prepared.execute(plain).output_shapes[0].dimensions}))
    '''
)


@pytest.mark.requirement("DOM-ROLE-2", "SVC-1")
def test_token_of_one_client_is_invalid_for_another_clients_model(service, tmp_path) -> None:
    model, request, _, _ = add_request()
    prepared = service.device.prepare_model(model)
    buffer, token = service.device.allocate(BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    source = create_ashmem(16)
    source.write(np.ones(4, np.float32).tobytes())
    buffer.copy_from(source, ())
    script = tmp_path / "other_client.py"
    script.write_text(OTHER_CLIENT)
    completed = subprocess.run([sys.executable, str(script), service.address, str(token)], capture_output=True,
                               text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report == {"outcome": "INVALID_ARGUMENT", "own_request": [4]}
    # Client A's own use of the token still works.
    uses_token = Request((RequestArgument(False, DataLocation(2, 0, 0)), request.inputs[1]), request.outputs,
                         (*request.pools, token))
    assert prepared.execute(uses_token).output_sufficient_size


def test_second_client_in_this_process_sees_its_own_objects_only(service) -> None:
    other = AttachedClient(service.address)
    try:
        model, request, _, _ = add_request()
        mine = service.device.prepare_model(model)
        _, token = service.device.allocate(BufferDesc(), [mine], [BufferRole(0, 0)], [])
        with expect_status(ErrorStatus.INVALID_ARGUMENT, rule="DOM-ALLOC-1"):
            other.device.allocate(BufferDesc(), [mine], [BufferRole(0, 0)], [])  # not its prepared model
    finally:
        other.close()


@pytest.mark.requirement("SVC-1")
def test_closing_leaves_no_process_or_descriptor(broken_driver, monkeypatch) -> None:
    monkeypatch.setenv("BROKEN_BEHAVIOUR", "segfault")
    gc.collect()  # memories earlier tests left to the collector must not count as this test's
    before = open_fds()
    service = DriverService(broken_driver, timeout=10)
    pids = []
    model, request, out, _ = add_request()
    for _ in range(3):
        pids.append(service.pid)
        with pytest.raises(DriverCrash):
            service.device.prepare_model(model).execute(request)
    zygote = service._zygote.process.pid
    service.close()
    for memory in request.pools:
        memory.close()
    assert open_fds() == before
    assert not any(alive(pid) for pid in [*pids, zygote])


def test_an_object_let_go_of_is_dropped_with_the_next_call(service, monkeypatch) -> None:
    """What the client lets go of rides on its next call, dropped before that call runs: the model
    stays held (its pools open in the service) until then, and is gone after.  In the call's own
    record, not one of its own that another of the service's threads could handle before or after
    the call's descriptors took their numbers: a driver's descriptor numbers follow the calls."""
    model, request, _, _ = add_request()
    prepared = service.device.prepare_model(model)
    number, generation = prepared._id, prepared._generation
    service.call(generation, number, "execute", (request,), "held: it runs")
    del prepared
    gc.collect()
    assert service.connection._drops  # let go of, not yet sent
    sent = []
    send = wire.send
    monkeypatch.setattr(wire, "send", lambda sock, data, fds: sent.append(data) or send(sock, data, fds))
    service.device.ping()
    assert len(sent) == 1 and not service.connection._drops  # the ping carried the drop
    with pytest.raises(RemoteError, match=f"object {number} is not held"):
        service.call(generation, number, "execute", (request,), "dropped with the ping")


@pytest.mark.parametrize("made", ["called", "begun", "begun with a fault on record", "refused by the breaker, called",
                                  "refused by the breaker, begun"])
def test_a_refused_call_leaves_the_model_to_go_when_let_go_of(service, made) -> None:
    """A refusal raised out of a call closes no reference cycle: the prepared model goes when the
    caller lets go of it (and its pools in the service with the next call), not whenever the cyclic
    garbage collector runs.  So the driver's descriptor numbers follow the calls from run to run,
    and a failure that depends on them replays (mappings-cached-by-descriptor's did not, with some
    seeds).  The driver's refusal, and the circuit breaker's (a fault the harness raises for a call
    it did not make); with a fault on record the breaker makes a begun call at once."""
    model, request, _, _ = add_request()
    prepared = service.device.prepare_model(model)
    one_input_short = Request(request.inputs[:1], request.outputs, request.pools)
    sent, expected = one_input_short, ErrorStatus.INVALID_ARGUMENT
    if made == "begun with a fault on record":
        service.breaker.failed("Buffer.copy_from", DriverCrash("[SVC-1] another method's crash"))
        assert service.breaker.watching
    if made.startswith("refused by the breaker"):  # three crashes of execute, in two tests: it opens
        for context in ("an earlier test", "an earlier test", "this test"):
            service.breaker.context = context
            service.breaker.failed("PreparedModel.execute", DriverCrash("[SVC-1] a crash"))
        sent, expected = request, "SVC-1"
    gc.disable()
    try:
        try:
            if made.endswith("called"):
                prepared.execute(sent)
            else:
                begin_call(prepared, "execute", sent)()
        except DriverError as error:  # not kept: a name bound to it would hold its frames
            refused = error.status
        except DriverCrash as fault:
            refused = fault.requirement if getattr(fault, "by_breaker", False) else "not the breaker's"
        held = weakref.ref(prepared)
        del prepared
        assert (refused, held()) == (expected, None)
    finally:
        gc.enable()


def test_a_closed_lockstep_sequence_lets_go_of_its_prepared_models(service) -> None:
    """A call sequence's prepared models go when it closes, even while their proxies are still
    referenced (hypothesis keeps a state machine's steps until a cyclic garbage collection): the
    service drops them with the next call, at the same point of every run."""
    step = Lockstep(service.device, ReferenceDevice())
    pair = step.prepare(Flavor(OperationType.ADD, OperandType.TENSOR_FLOAT32).model((2, 2)))
    number = pair.driver._id
    step.close()
    service.device.ping()  # carries the drop
    with pytest.raises(RemoteError, match=f"object {number} is not held"):
        service.call(pair.driver._generation, number, "execute", (add_request()[1],), "let go of with the sequence")
