"""DOM-ROLE-1..4: tokens in requests, used within and outside their allocation roles."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from harness.api.hal import BufferDesc, BufferRole, DataLocation
from harness.judging.lockstep import Lockstep
from harness.judging.scenario import MemorySpec, TokenRef
from harness.strategies.domains import TokenUse, domain_flavors, nbytes, request, values_for
from harness.strategies.values import sampled
from harness.integration.skips import refused_allocation

pytestmark = pytest.mark.usefixtures("memory_domains")

DIMS = (2, 2)
USES = {  # which request slots the token fills
    "input 0": (("input", 0),),
    "input 1": (("input", 1),),
    "output 0": (("output", 0),),
    "output 1": (("output", 1),),
    "two inputs": (("input", 0), ("input", 1)),
    "input and output": (("input", 0), ("output", 0)),
    "two outputs": (("output", 0), ("output", 1)),
}
NEVER_ALLOCATED = 2**31 - 7


@pytest.mark.requirement("DOM-ROLE-1", "DOM-ROLE-2", "DOM-ROLE-3", "DOM-ROLE-4")
@given(data=st.data())
def test_token_uses(driver, reference, capabilities, flavor, data) -> None:
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    type = drawn.type
    model = drawn.model(DIMS, outputs=2)
    with Lockstep(driver, reference) as step:
        original = step.prepare(model)
        again = step.prepare(model)  # the same graph prepared again is another model (DOM-ROLE-2)
        input_roles = [BufferRole(0, i) for i in data.draw(st.sets(st.integers(0, 1)), label="input roles")]
        output_roles = [BufferRole(0, i) for i in data.draw(st.sets(st.integers(0, 1), min_size=0 if input_roles else 1), label="output roles")]
        if step.allocate("buffer", BufferDesc(), [original], input_roles, output_roles) is None:
            refused_allocation()
        step.copy_from("buffer", MemorySpec("ashmem", values_for(type, DIMS).tobytes()), ())
        use = data.draw(sampled(tuple(sorted(USES))), label="use")
        target = data.draw(sampled(("allocated model", "same graph prepared again")), label="model")
        token = data.draw(sampled(("live", "live", "zero", "negative", "never allocated", "released")), label="token")
        location = data.draw(sampled(("zero", "zero", "offset", "length", "padding", "slots")), label="token location")
        event(f"use {use}; {target}; token {token}; location {location}")

        slots = USES[use]
        token_use = _token_use(location)
        inputs = [token_use if ("input", i) in slots else values_for(type, DIMS, i) for i in range(2)]
        outputs = [token_use if ("output", i) in slots else nbytes(type, DIMS) for i in range(2)]
        scenario = request(model, inputs, outputs, label=f"token as {use}")
        if token in ("zero", "negative", "never allocated"):
            raw = {"zero": 0, "negative": -1, "never allocated": NEVER_ALLOCATED}[token]
            scenario = replace(scenario, request_pools=tuple(raw if isinstance(p, TokenRef) else p for p in scenario.request_pools))
        if token == "released":
            step.release("buffer")
        requirement = ("DOM-ROLE-1" if token != "live" else "DOM-ROLE-4" if location not in ("zero", "slots")
                       else "DOM-ROLE-3" if len(slots) > 1 and any(d == "output" for d, _ in slots) else "DOM-ROLE-2")
        step.execute(original if target == "allocated model" else again, scenario, requirement)


MISUSES = {
    # name: (requirement, allocated input roles, allocated output roles, slots used, model, token, location)
    "token zero": ("DOM-ROLE-1", [0], [], (("input", 0),), "allocated", "zero", "zero"),
    "negative token": ("DOM-ROLE-1", [0], [], (("input", 0),), "allocated", "negative", "zero"),
    "never-allocated token": ("DOM-ROLE-1", [0], [], (("input", 0),), "allocated", "never allocated", "zero"),
    "released token": ("DOM-ROLE-1", [0], [], (("input", 0),), "allocated", "released", "zero"),
    "other prepared model": ("DOM-ROLE-2", [0], [], (("input", 0),), "again", "live", "zero"),
    "wrong io index": ("DOM-ROLE-2", [0], [], (("input", 1),), "allocated", "live", "zero"),
    "wrong direction": ("DOM-ROLE-2", [0], [], (("output", 0),), "allocated", "live", "zero"),
    "output also input": ("DOM-ROLE-3", [0], [0], (("input", 0), ("output", 0)), "allocated", "live", "zero"),
    "two outputs": ("DOM-ROLE-3", [], [0, 1], (("output", 0), ("output", 1)), "allocated", "live", "zero"),
    "two inputs (allowed)": ("DOM-ROLE-3", [0, 1], [], (("input", 0), ("input", 1)), "allocated", "live", "zero"),
    # the same token listed in a pool slot per argument: still one buffer (DOM-ROLE-3)
    "output also input, two slots": ("DOM-ROLE-3", [0], [0], (("input", 0), ("output", 0)), "allocated", "live", "slots"),
    "two outputs, two slots": ("DOM-ROLE-3", [], [0, 1], (("output", 0), ("output", 1)), "allocated", "live", "slots"),
    "two inputs, two slots (allowed)": ("DOM-ROLE-3", [0, 1], [], (("input", 0), ("input", 1)), "allocated", "live", "slots"),
    "token with offset": ("DOM-ROLE-4", [0], [], (("input", 0),), "allocated", "live", "offset"),
    "token with length": ("DOM-ROLE-4", [0], [], (("input", 0),), "allocated", "live", "length"),
    "token with padding": ("DOM-ROLE-4", [0], [], (("input", 0),), "allocated", "live", "padding"),
    "allowed use": ("DOM-ROLE-2", [0, 1], [1], (("input", 1),), "allocated", "live", "zero"),
    "uninitialized input": ("DOM-STATE-2", [0], [], (("input", 0),), "allocated", "uninitialized", "zero"),
}
_LOCATIONS = {"zero": DataLocation(), "offset": DataLocation(0, 4), "length": DataLocation(0, 0, 4),
              "padding": DataLocation(0, 0, 0, 4), "slots": DataLocation()}
_RAW_TOKENS = {"zero": 0, "negative": -1, "never allocated": NEVER_ALLOCATED}


def _token_use(location: str) -> TokenUse:
    """The buffer's token at ``location``; "slots": a location of zeros, in a pool slot per argument."""
    return TokenUse("buffer", location=_LOCATIONS[location], own_slot=location == "slots")


@pytest.mark.parametrize(
    "misuse", [pytest.param(name, marks=pytest.mark.requirement(spec[0]), id=name) for name, spec in MISUSES.items()]
)
@given(data=st.data())
def test_each_misuse(driver, reference, capabilities, flavor, misuse, data) -> None:
    """Every way of using a token outside its roles, tried in every run for a generated flavour."""
    requirement, in_roles, out_roles, slots, which, token, location = MISUSES[misuse]
    drawn = data.draw(domain_flavors(capabilities), label="flavor")
    type = drawn.type
    model = drawn.model(DIMS, outputs=2)
    with Lockstep(driver, reference) as step:
        original = step.prepare(model)
        # the same graph prepared again, for the misuse that takes a token to another model (a
        # prepare for nothing in every other misuse: a third of their service calls)
        again = step.prepare(model) if which == "again" else original
        allocated = step.allocate("buffer", BufferDesc(), [original], [BufferRole(0, i) for i in in_roles],
                                  [BufferRole(0, i) for i in out_roles])
        if allocated is None:
            refused_allocation()
        if token != "uninitialized":
            step.copy_from("buffer", MemorySpec("ashmem", values_for(type, DIMS, 9).tobytes()), ())
        use = _token_use(location)
        inputs = [use if ("input", i) in slots else values_for(type, DIMS, i) for i in range(2)]
        outputs = [use if ("output", i) in slots else nbytes(type, DIMS) for i in range(2)]
        scenario = request(model, inputs, outputs, label=misuse)
        if token in _RAW_TOKENS:
            scenario = replace(scenario, request_pools=tuple(_RAW_TOKENS[token] if isinstance(p, TokenRef) else p
                                                             for p in scenario.request_pools))
        if token == "released":
            step.release("buffer")
        step.execute(original if which == "allocated" else again, scenario, requirement)
