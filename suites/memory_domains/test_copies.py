"""DOM-COPY-1/2 and DOM-STATE-1/2: generated sequences of copies into and out of one buffer."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.api.hal import BufferDesc, BufferRole, element_size
from harness.api.memory import REQUIRED_KINDS
from harness.judging.direct_calls import DirectCalls
from harness.judging.lockstep import Lockstep
from harness.judging.scenario import MemorySpec
from harness.strategies.domains import TokenUse, domain_flavors, nbytes, request, values_for
from harness.strategies.values import BOOLEANS, integers, sampled
from harness.integration.skips import allocated_or_not_run, not_applicable, refused_allocation
from harness.judging.verdict import violation

pytestmark = pytest.mark.usefixtures("memory_domains")

COPY_KINDS = REQUIRED_KINDS  # DOM-COPY-1: required with memory domains
# Negative extents are never dimensions (DOM-COPY-2): numpy's reshape, and drivers built on it,
# read -1 as "whatever the size holds", and an unsigned product can wrap to the buffer's size.
DIMS = ((), (2, 2), (2, 3), (3, 2), (1, 2), (0, 2), (2, 0), (4,), (2, 2, 1), (-2, 2), (2, -2), (-1, -4))
#: An mmap_fd memory's offset in its file, and whether the file is a regular one (else a memfd).
COPY_FILE_REGIONS = ((0, False), (24, False), (4096, False), (0, True), (24, True))
_MIDDLE_ACTIONS = st.lists(sampled(("execute writes", "copy_from", "execute reads", "copy_to")), min_size=1, max_size=6)


@pytest.mark.requirement("DOM-COPY-1", "DOM-COPY-2", "DOM-STATE-1", "DOM-STATE-2")
@given(data=st.data())
def test_copy_sequences(driver, reference, capabilities, flavor, data) -> None:
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    type = drawn.type
    model_dims = data.draw(sampled(((2, 2), (0, 2), (3,), ())), label="model dims")
    with Lockstep(driver, reference) as step:
        prepared = step.prepare(drawn.model(model_dims))
        desc = BufferDesc(data.draw(sampled(((), (2, 2), (3, 2), (0, 2))), label="descriptor dims"))
        if step.allocate("buffer", desc, [prepared], [BufferRole(0, 0)], [], requirement="DOM-ALLOC-2") is None:
            event("allocation rejected")
            return
        item = element_size(type)
        for number in range(data.draw(integers(1, 6), label="copies")):
            kind = data.draw(sampled(COPY_KINDS), label="memory kind")
            dims = data.draw(sampled(DIMS), label="dims")
            # A 0 extent is sized as 1 or as a buffer's extent might be: a driver that takes the buffer's known
            # extent for it (as when combining shapes) then finds the size it expects, where SPEC refuses the 0.
            zero_as = data.draw(sampled((1, 2, 3)), label="a 0 extent sized as") if 0 in dims else 1
            size = max(nbytes(type, tuple(abs(d) or zero_as for d in dims) or (2, 2)) + item * data.draw(sampled((0, 0, 0, -1, 1))), 0)
            if data.draw(integers(0, 9), label="empty memory") == 0:
                size = 0  # a memory of 0 bytes: must be rejected (size mismatch), never hang
            # An mmap_fd memory is a region of a larger file: at an offset, with other bytes around it,
            # in a memfd or a regular file (which no driver can seal against shrinking).
            file_offset, in_file = data.draw(sampled(COPY_FILE_REGIONS), label="file offset, regular file") \
                if kind == "mmap_fd" else (0, False)
            if data.draw(BOOLEANS, label="copy_from"):
                content = np.random.default_rng(number).integers(0, 100, size, dtype=np.uint8).tobytes()
                memory = MemorySpec(kind, content, file_offset, guard=16 if kind == "mmap_fd" else 0, in_file=in_file)
                ok = step.copy_from("buffer", memory, dims, requirement="DOM-COPY-2")
                event(f"copy_from {'accepted' if ok else 'rejected'}")
            else:
                ok = step.copy_to("buffer", size, kind, requirement="DOM-COPY-1", file_offset=file_offset,
                                  in_file=in_file) is not None
                event(f"copy_to {'accepted' if ok else 'rejected'}")


def _open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.requirement("DOM-COPY-1")
def test_copies_do_not_leak_descriptors(driver, flavor, driver_pid) -> None:
    """Thousands of copies in a nightly run must not exhaust the service's descriptors.

    A driver may cache mappings or descriptors as long as the cache is bounded (CHOICE-6): the
    count may grow while the first rounds warm it up, never from one later round to the next."""
    pid = driver_pid
    calls = DirectCalls(driver)
    prepared = calls.prepare(flavor.model((2, 2)))
    buffer, _ = allocated_or_not_run(calls, BufferDesc(), [prepared], [BufferRole(0, 0)], [])
    memory = MemorySpec("ashmem", values_for(flavor.type, (2, 2)).tobytes())
    counts = [_open_descriptors(pid)]
    for _ in range(COPY_ROUNDS):
        for _ in range(COPIES_PER_ROUND):
            calls.copy_from(buffer, memory)
        counts.append(_open_descriptors(pid))
    calls.release(buffer)
    late_growth = counts[-1] - counts[-2]
    if late_growth > 0 and counts[-1] - counts[0] > COPIES_PER_ROUND // 2:
        raise violation("DOM-COPY-1", f"the driver service's descriptors keep growing: {counts} after rounds "
                                      f"of {COPIES_PER_ROUND} copies (a bounded cache levels off; this does not)")


#: Rounds of copies in the descriptor test: the first two may warm a bounded cache.
COPY_ROUNDS = 4
COPIES_PER_ROUND = 64


@pytest.mark.requirement("DOM-STATE-1", "DOM-COPY-2")
@given(data=st.data())
def test_failed_copy_uninitializes(driver, reference, capabilities, flavor, data) -> None:
    """A failed copy_from leaves the buffer uninitialized, whatever it held before: a memory of
    the wrong size, dimensions of the wrong rank, or negative or 0 extents in a memory of the right size."""
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    type = drawn.type
    with Lockstep(driver, reference) as step:
        prepared = step.prepare(drawn.model((2, 2)))
        if step.allocate("buffer", BufferDesc(), [prepared], [BufferRole(0, 0)], []) is None:
            refused_allocation()
        size = nbytes(type, (2, 2))
        step.copy_from("buffer", MemorySpec("ashmem", bytes(range(size))), (), requirement="DOM-COPY-1")
        wrong = data.draw(sampled(("size", "dimensions", "negative dimensions", "a zero dimension")), label="how the copy fails")
        if wrong == "size":
            step.copy_from("buffer", MemorySpec("ashmem", bytes(size + 1)), (), requirement="DOM-COPY-1")
        elif wrong == "dimensions":
            step.copy_from("buffer", MemorySpec("ashmem", bytes(size)), (4,), requirement="DOM-COPY-2")
        elif wrong == "a zero dimension":  # not fully specified, though the buffer knows that axis (and the size fits it)
            zeros = data.draw(sampled(((0, 2), (2, 0), (0, 0))), label="dimensions with a 0")
            step.copy_from("buffer", MemorySpec("ashmem", bytes(size)), zeros, requirement="DOM-COPY-2")
        else:
            negative = data.draw(sampled(((-2, 2), (2, -2), (-1, -4), (-2**31, 2))), label="negative dimensions")
            step.copy_from("buffer", MemorySpec("ashmem", bytes(size)), negative, requirement="DOM-COPY-2")
        step.copy_to("buffer", size, requirement="DOM-STATE-1")


@pytest.mark.requirement("DOM-COPY-1")
@pytest.mark.parametrize("direction", ["copy_from", "copy_to"])
@pytest.mark.parametrize("elements_off", [-1, 1], ids=["one-element-short", "one-element-long"])
@given(data=st.data())
def test_memory_size_must_match(driver, reference, capabilities, flavor, direction, elements_off, data) -> None:
    """A memory one element shorter or longer than the buffer is INVALID_ARGUMENT both ways."""
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    type = drawn.type
    kind = data.draw(sampled(COPY_KINDS), label="memory kind")
    with Lockstep(driver, reference) as step:
        prepared = step.prepare(drawn.model((2, 2)))
        if step.allocate("buffer", BufferDesc(), [prepared], [BufferRole(0, 0)], []) is None:
            refused_allocation()
        size = nbytes(type, (2, 2))
        step.copy_from("buffer", MemorySpec(kind, bytes(range(size))), ())
        wrong = size + elements_off * element_size(type)
        if direction == "copy_from":
            step.copy_from("buffer", MemorySpec(kind, bytes(wrong)), (), requirement="DOM-COPY-1")
        else:
            step.copy_to("buffer", wrong, kind, requirement="DOM-COPY-1")


def _allocated(step: Lockstep, name: str, pair, inputs, outputs, desc=BufferDesc()) -> None:
    if step.allocate(name, desc, [pair], inputs, outputs) is None:
        refused_allocation()


def _written(step: Lockstep, pair, drawn, names: list[str]) -> None:
    """A buffer for the model's first input per name, in order, each written with its own values
    (the i-th name's are ``values_for`` seed i) as soon as it is allocated."""
    for i, name in enumerate(names):
        _allocated(step, name, pair, [BufferRole(0, 0)], [])
        step.copy_from(name, MemorySpec("ashmem", values_for(drawn.type, (2, 2), i).tobytes()), ())


@pytest.mark.requirement("DOM-COPY-1", "DOM-ROLE-1")
@given(data=st.data())
def test_live_buffers_keep_their_own_contents(driver, reference, capabilities, flavor, data) -> None:
    """Several live buffers, some for the very same roles, each holding its own bytes; releasing
    one (the oldest, or any) frees that one only."""
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    with Lockstep(driver, reference) as step:
        pair = step.prepare(drawn.model((2, 2)))
        count = data.draw(integers(2, 4), label="live buffers")
        _written(step, pair, drawn, [f"b{i}" for i in range(count)])
        size = nbytes(drawn.type, (2, 2))
        for i in range(count):  # each holds its own bytes (storage shared between buffers shows here)
            step.copy_to(f"b{i}", size, requirement="DOM-COPY-1")
        released = data.draw(sampled(tuple(range(count))), label="released buffer")
        event(f"{count} live buffers, buffer {released} released")
        step.release(f"b{released}")
        for i in range(count):  # the others are still live and unchanged (a release that frees another shows here)
            if i != released:
                step.copy_to(f"b{i}", size, requirement="DOM-ROLE-1")
        scenario = request(drawn.model((2, 2)), [TokenUse(f"b{released}"), values_for(drawn.type, (2, 2))], [size],
                           label=f"released buffer b{released} as input")
        step.execute(pair, scenario, "DOM-ROLE-1")


#: The roles of the buffers written and released before a new one is allocated, on their model:
#: one input, or several with an output among them.  A driver may keep a pool of storage for the
#: buffers of some roles alone (shared by several, or written by the device), which a buffer of
#: one input role never comes from.
RELEASED_ROLES = {
    "input 0": ((BufferRole(0, 0),), ()),
    "input 1": ((BufferRole(0, 1),), ()),
    "inputs 0 and 1": ((BufferRole(0, 0), BufferRole(0, 1)), ()),
    "input 0 and output 0": ((BufferRole(0, 0),), (BufferRole(0, 0),)),
    "inputs 0 and 1 and output 0": ((BufferRole(0, 0), BufferRole(0, 1)), (BufferRole(0, 0),)),
}
#: How a released buffer with an output role was written: storage the host wrote may be kept apart
#: from storage only the device did (DOM-STATE-1: either write initializes it).
RELEASED_WRITES = ("copy_from", "an execution", "copy_from, then an execution")
#: The released buffers' model dimensions: the new buffer's (2, 2), as many elements in other shapes,
#: or more; a driver may reuse storage of any of them, never what it held.
RELEASED_SHAPES = ((2, 2), (4,), (1, 4), (2, 3))
#: The new buffer's descriptor: dimensions left to its role, or the same given explicitly (an
#: allocation of known dimensions may be served from other storage than one that waits for them).
NEW_DESCRIPTORS = ((), (2, 2))


@pytest.mark.requirement("DOM-STATE-2")
@given(data=st.data())
def test_a_new_buffer_holds_nothing_a_released_one_held(driver, reference, capabilities, flavor, data) -> None:
    """DOM-STATE-2 across buffers' lives: a buffer allocated after others were written and released
    starts uninitialized, and reading it fails.  The released ones are of the new one's type, in its
    dimensions or others, for one input role or several with an output, written by copy_from or
    by an execution.  A driver may reuse a released buffer's storage, never its state.  (The state
    machine meets this only when its runs happen to release and allocate alike: it missed a driver
    that recycles storage in 4 of 31 seeds of the ci profile.)"""
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    with Lockstep(driver, reference) as step:
        pair = step.prepare(drawn.model((2, 2)))
        size = nbytes(drawn.type, (2, 2))
        released = [f"old{i}" for i in range(data.draw(integers(1, 3), label="buffers written and released first"))]
        # drawn once for them all: alike buffers released one after another, as a driver that pools
        # storage by kind of buffer would meet them
        shape = data.draw(sampled(RELEASED_SHAPES), label="released buffers' model dims")
        roles = data.draw(sampled(tuple(RELEASED_ROLES)), label="released buffers' roles")
        inputs, outputs = RELEASED_ROLES[roles]
        how = data.draw(sampled(RELEASED_WRITES), label="how the released buffers were written") if outputs else "copy_from"
        model = drawn.model(shape)
        old_pair = pair if shape == (2, 2) else step.prepare(model)
        for i, name in enumerate(released):
            _allocated(step, name, old_pair, inputs, outputs)
            if how.startswith("copy_from"):
                step.copy_from(name, MemorySpec("ashmem", values_for(drawn.type, shape, i).tobytes()), ())
            if how.endswith("an execution"):
                values = [values_for(drawn.type, shape, 2 * i + 1), values_for(drawn.type, shape, 2 * i + 2)]
                step.execute(old_pair, request(model, values, [TokenUse(name)], label=f"{name} = op(values, values)"),
                             "DOM-STATE-1")
        for name in released:
            step.release(name)
        desc = BufferDesc(data.draw(sampled(NEW_DESCRIPTORS), label="new buffer's descriptor dims"))
        _allocated(step, "new", pair, [BufferRole(0, 0)], [], desc)
        read = data.draw(sampled(("copy_to", "execution input")), label="how the new buffer is read")
        event(f"{len(released)} released ({shape}, {roles}, written by {how}), then a new buffer of descriptor "
              f"{tuple(desc.dimensions)} read by {read}")
        if read == "copy_to":
            step.copy_to("new", size, requirement="DOM-STATE-2")
        else:
            step.execute(pair, request(drawn.model((2, 2)), [TokenUse("new"), values_for(drawn.type, (2, 2))], [size],
                                       label="op(new, values)"), "DOM-STATE-2")


#: Dimensions a copy into a scalar's buffer may be given: a scalar has rank 0, so only () is its
#: shape, and a driver that keeps scalars as one-element tensors takes (1,) or (1, 1) as well.
SCALAR_COPY_DIMS = ((), (), (1,), (1, 1), (0,))


@pytest.mark.requirement("DOM-COPY-2", "DOM-COPY-1")
@given(data=st.data())
def test_scalar_buffers_take_empty_dimensions_only(driver, reference, capabilities, flavor, data) -> None:
    """A buffer for a scalar input (the fused activation, given as a request input): copy_from
    with empty dimensions writes it, any other dimensions are the wrong rank (INVALID_ARGUMENT, and
    the buffer is uninitialized after it); an execution taking it as its activation applies the
    value last written, and copy_to reads that value back."""
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    model = drawn.model((2, 2), scalar_input=True)
    with Lockstep(driver, reference) as step:
        pair = step.prepare(model)
        _allocated(step, "activation", pair, [BufferRole(0, 2)], [])
        size = nbytes(drawn.type, (2, 2))
        for number in range(data.draw(integers(1, 4), label="writes")):
            dims = data.draw(sampled(SCALAR_COPY_DIMS), label="copy dimensions")
            activation = data.draw(integers(0, 3), label="fused activation written")
            event(f"copy_from dims {dims}")
            step.copy_from("activation", MemorySpec("ashmem", np.int32(activation).tobytes()), dims, requirement="DOM-COPY-2")
            inputs = [values_for(drawn.type, (2, 2), 2 * number), values_for(drawn.type, (2, 2), 2 * number + 1)]
            step.execute(pair, request(model, [*inputs, TokenUse("activation")], [size],
                                       label=f"op(values, values, activation buffer written with dims {dims})"),
                         "DOM-COPY-2")
        step.copy_to("activation", 4, requirement="DOM-COPY-1")


#: What may happen to a buffer, or beside it, without a write: DOM-STATE-1 names the only calls that
#: change a buffer's state (a copyFrom, an execution writing it), so after any of these it holds
#: what it held, and so does every other live buffer.
NOT_WRITES = ("copy_to", "failed copy_to", "execution reads it", "failed execution reads it",
              "the buffer allocated before it released", "the buffer allocated after it released")


@pytest.mark.requirement("DOM-STATE-1")
@pytest.mark.parametrize("happening", NOT_WRITES)
@given(data=st.data())
def test_only_writes_change_a_buffer(driver, reference, capabilities, flavor, happening, data) -> None:
    """Three live buffers for the same role, each written with its own values; one of them is read
    (successfully or not), or a neighbour is released; then every live buffer still reads back."""
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    with Lockstep(driver, reference) as step:
        pair = step.prepare(drawn.model((2, 2)))
        size, element = nbytes(drawn.type, (2, 2)), element_size(drawn.type)
        names = ["b0", "b1", "b2"]
        _written(step, pair, drawn, names)
        choices = names[1:] if happening.endswith("before it released") else names[:-1] if happening.endswith("after it released") else names
        target = data.draw(sampled(tuple(choices)), label="buffer")
        second_input = values_for(drawn.type, (2, 2), 7)
        if happening == "copy_to":
            step.copy_to(target, size, requirement="DOM-COPY-1")
        elif happening == "failed copy_to":
            step.copy_to(target, size + element, requirement="DOM-COPY-1")
        elif happening in ("execution reads it", "failed execution reads it"):
            capacity, rule = (size, "DOM-ROLE-2") if happening == "execution reads it" else (size - element, "DOM-DYN-2")
            step.execute(pair, request(drawn.model((2, 2)), [TokenUse(target), second_input], [capacity], label=f"op({target}, values 7)"),
                         rule)
        else:
            position = names.index(target)
            neighbour = names[position - 1] if happening.endswith("before it released") else names[position + 1]
            step.release(neighbour)
            names.remove(neighbour)
        event(f"{happening}, on or beside {target}")
        for name in names:
            step.copy_to(name, size, requirement="DOM-STATE-1")


@pytest.mark.requirement("DOM-COPY-1", "DOM-STATE-1")
@given(data=st.data())
def test_writes_by_execution_and_by_copy_alternate(driver, reference, capabilities, flavor, data) -> None:
    """A buffer written by executions and by copies in any order: every read (by copy or by an
    execution taking it as input) sees the latest write."""
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    with Lockstep(driver, reference) as step:
        pair = step.prepare(drawn.model((2, 2)))
        _allocated(step, "b", pair, [BufferRole(0, 0)], [BufferRole(0, 0)])
        size = nbytes(drawn.type, (2, 2))
        step.copy_from("b", MemorySpec("ashmem", values_for(drawn.type, (2, 2), 0).tobytes()), ())
        middle = data.draw(_MIDDLE_ACTIONS, label="actions")
        # Always read by an execution, write by a copy, and read by an execution again: a device-side
        # copy of the buffer that the copy does not refresh shows on the second read.
        for number, action in enumerate(["execute reads", *middle, "copy_from", "execute reads"]):
            seed = number + 1
            if action == "execute writes":
                scenario = request(drawn.model((2, 2)), [TokenUse("b"), values_for(drawn.type, (2, 2), seed)], [TokenUse("b")],
                                   label=f"b = op(b, values {seed})")
                step.execute(pair, scenario, "DOM-STATE-1")
            elif action == "copy_from":
                step.copy_from("b", MemorySpec("ashmem", values_for(drawn.type, (2, 2), seed).tobytes()), ())
            elif action == "execute reads":
                scenario = request(drawn.model((2, 2)), [TokenUse("b"), values_for(drawn.type, (2, 2), seed)], [size],
                                   label=f"op(b, values {seed})")
                step.execute(pair, scenario, "DOM-COPY-1")
            else:
                step.copy_to("b", size, requirement="DOM-COPY-1")
        step.copy_to("b", size, requirement="DOM-COPY-1")


#: Pairs of shapes of one element count: a buffer of unknown dimensions written in the first is
#: given the second.  A driver may keep its storage when the byte size does not change, never its
#: shape.  Most are of rank 2; one is of rank 3, where a driver's resize may be code of its own.
SAME_SIZE_SHAPES = (((2, 3), (3, 2)), ((1, 4), (4, 1)), ((2, 2), (1, 4)), ((6, 1), (2, 3)), ((1, 6), (3, 2)),
                    ((1, 2), (2, 1)), ((3, 3), (1, 9)), ((2, 3, 1), (3, 2, 1)), ((2, 2), (4, 1)), ((2, 4), (4, 2)),
                    ((1, 8), (2, 4)), ((3, 4), (2, 6)), ((2, 5), (5, 2)), ((4, 4), (2, 8)), ((1, 12), (3, 4)))
#: What happens to the buffer between its two writes: read, it still holds the first shape; a failed
#: copy_from leaves it uninitialized (DOM-STATE-1), and the second write finds it empty.
BETWEEN_WRITES = ("nothing", "copy_to", "copy_from of the wrong size", "copy_from of the wrong rank",
                  "copy_from with a 0 extent", "copy_from with a negative extent")
#: How the buffer gets its second shape: copy_from with it (DOM-COPY-2), or an execution writing the
#: buffer as its output, which the driver resizes (DOM-DYN-1).
SECOND_WRITES = ("copy_from", "an execution")


@pytest.mark.requirement("DOM-COPY-2", "DOM-DYN-1")
@given(data=st.data())
def test_a_new_shape_of_the_same_size_is_taken(driver, reference, capabilities, flavor, data) -> None:
    """copy_from with other dimensions of the same byte size, or an execution writing them, gives
    the buffer those dimensions, whatever it held before (the first, or nothing after a failed
    copy): used as an input, it has the new shape."""
    if not capabilities.dynamic_buffers:
        not_applicable("dynamic_buffers", "the driver declares that it refuses buffers of unknown shape")
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    first, second = data.draw(sampled(SAME_SIZE_SHAPES), label="shapes")
    between = data.draw(sampled(BETWEEN_WRITES), label="between the writes")
    how = data.draw(sampled(SECOND_WRITES), label="how the second shape is written")
    event(f"rank {len(first)}, {between} between the writes, the second by {how}")
    unknown = (0,) * len(first)  # the model's dimensions: every axis unknown, of the shapes' rank
    model = drawn.model(unknown)
    with Lockstep(driver, reference) as step:
        pair = step.prepare(model)
        _allocated(step, "b", pair, [BufferRole(0, 0)], [BufferRole(0, 0)] if how == "an execution" else [])
        step.copy_from("b", MemorySpec("ashmem", values_for(drawn.type, first, 1).tobytes()), first, requirement="DOM-COPY-2")
        if between == "copy_to":
            step.copy_to("b", nbytes(drawn.type, first), requirement="DOM-COPY-1")
        elif between == "copy_from of the wrong size":
            content = values_for(drawn.type, first, 4).tobytes() + bytes(element_size(drawn.type))
            step.copy_from("b", MemorySpec("ashmem", content), first, requirement="DOM-COPY-1")
        elif between != "nothing":
            dims = {"copy_from of the wrong rank": (*first, 1), "copy_from with a 0 extent": (0, *first[1:]),
                    "copy_from with a negative extent": (-first[0], *first[1:])}[between]
            step.copy_from("b", MemorySpec("ashmem", values_for(drawn.type, first, 4).tobytes()), dims,
                           requirement="DOM-COPY-2")
        if how == "copy_from":
            step.copy_from("b", MemorySpec("ashmem", values_for(drawn.type, second, 2).tobytes()), second,
                           requirement="DOM-COPY-2")
        else:
            values = [values_for(drawn.type, second, 2), values_for(drawn.type, second, 5)]
            step.execute(pair, request(model, values, [TokenUse("b")], label=f"b = op(values as {second}, values)"),
                         "DOM-DYN-1")
        scenario = request(model, [TokenUse("b"), values_for(drawn.type, second, 3)], [nbytes(drawn.type, second)],
                           label=f"op(b as {second}, {second})")
        step.execute(pair, scenario, "DOM-COPY-2")


@pytest.mark.requirement("DOM-COPY-1")
@pytest.mark.parametrize("file_offset", [24, 4096], ids=["offset-24", "offset-4096"])
@given(data=st.data())
def test_mmap_fd_regions_inside_larger_files(driver, reference, capabilities, flavor, file_offset, data) -> None:
    """An mmap_fd memory is a region of a file: copies read and write exactly that region, at its
    offset, and not one byte around it."""
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    with Lockstep(driver, reference) as step:
        pair = step.prepare(drawn.model((2, 2)))
        _allocated(step, "b", pair, [BufferRole(0, 0)], [])
        content = values_for(drawn.type, (2, 2), data.draw(integers(0, 99), label="values")).tobytes()
        step.copy_from("b", MemorySpec("mmap_fd", content, file_offset, guard=16), ())
        step.copy_to("b", len(content), "mmap_fd", requirement="DOM-COPY-1", file_offset=file_offset)
