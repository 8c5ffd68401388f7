"""Request mutations: every way SPEC §4 says a request can be wrong, applied to a valid one."""

from __future__ import annotations

import functools
from dataclasses import replace

from hypothesis import assume, event
from hypothesis import strategies as st

from harness.api.hal import OPTIONAL_INPUTS, DataLocation, Operand, RequestArgument, dimensions_at_execution, element_size, is_fully_specified
from harness.judging.scenario import Scenario
from .values import BOOLEANS, integers, sampled

#: mutation name -> the requirement it breaks
MUTATIONS = {
    "remove-input": "REQ-1",
    "remove-output": "REQ-1",
    "extra-input": "REQ-1",
    "extra-output": "REQ-1",
    "input-without-value": "REQ-1",
    "pool-index-out-of-range": "REQ-2",
    "offset-past-end": "REQ-2",
    "length-past-end": "REQ-2",
    "padding-past-end": "REQ-2",
    "region-field-negative": "REQ-2",
    "length-not-matching-dimensions": "REQ-2",
    "dimensions-conflict-with-model": "REQ-2",
    "dimensions-reshaped-same-size": "REQ-2",
    "rank-conflicts-with-model": "REQ-2",
    "no-value-with-location": "REQ-2",
    "no-value-with-dimensions": "REQ-2",
    "input-without-full-dimensions": "REQ-2",
    "input-with-negative-dimension": "REQ-2",
}


def _arguments(scenario: Scenario) -> list[tuple[str, int]]:
    return [("inputs", i) for i in range(len(scenario.inputs))] + [("outputs", i) for i in range(len(scenario.outputs))]


def _operand(scenario: Scenario, field: str, index: int) -> Operand:
    indexes = scenario.subgraph.input_indexes if field == "inputs" else scenario.subgraph.output_indexes
    return scenario.subgraph.operands[indexes[index]]


def _optional_input(scenario: Scenario, index: int) -> bool:
    """Whether request input ``index`` feeds only inputs NeuralNetworks.h marks optional (LSH_PROJECTION's
    weights, say): a request may omit it, so leaving it without a value breaks nothing."""
    operand_index = scenario.subgraph.input_indexes[index]
    readers = [(operation.type, at) for operation in scenario.subgraph.operations
               for at, read in enumerate(operation.inputs) if read == operand_index]
    return bool(readers) and all(at in OPTIONAL_INPUTS.get(kind, ()) for kind, at in readers)


def _reshapable_axes(operand: Operand) -> tuple[int, ...]:
    """The axes where the model knows an extent above 1, on an operand of rank 2 or more: that
    extent moved to another axis keeps the element count and conflicts with the model."""
    if len(operand.dimensions) < 2:
        return ()
    return tuple(axis for axis, extent in enumerate(operand.dimensions) if extent > 1)


def _known_axes(operand: Operand) -> tuple[int, ...]:
    return tuple(axis for axis, extent in enumerate(operand.dimensions) if extent > 0)


def _breaks_its_rule(name: str, scenario: Scenario, field: str, index: int) -> bool:
    """Whether mutation ``name`` of this argument breaks the rule MUTATIONS names for it, and only
    that rule (tests/unit/test_request_mutations.py holds the reference to it).

    - An input must have full dimensions, an output need not: the two input mutations are of
      inputs only (how a produced shape fails to fit an output's negative extent is an execution's
      outcome, not a request check),
      and leaving an input's dimensions open fails only where its model leaves them open too.
    - An input NeuralNetworks.h marks optional may be given no value: only a needed one is missing.
    - Dimensions conflict with the model's known extents: an extent the model leaves unknown may
      be given any value, and one that happens to be the produced extent is right.
    - A length is checked against dimensions known at the request: an output of unknown shape
      whose region is short is OUTPUT_INSUFFICIENT_SIZE, not a malformed request.
    - A rank conflicts only with a known one: an input of unknown rank given one axis more agrees
      with its model, and only its operation's own limit (FULLY_CONNECTED's rank 4, say) can refuse
      it, which no REQ rule asks (a driver may accept what NNAPI forbids; none is sent, CHOICE-8);
      an output of unknown rank given a rank may be given the very one it produces."""
    operand = _operand(scenario, field, index)
    if name == "input-with-negative-dimension":
        return field == "inputs"
    if name == "input-without-value":
        return field == "inputs" and not _optional_input(scenario, index)
    if name == "input-without-full-dimensions":
        return field == "inputs" and not is_fully_specified(operand.type, operand.dimensions)
    if name == "dimensions-conflict-with-model":
        return bool(_known_axes(operand))
    if name == "length-not-matching-dimensions":
        given = getattr(scenario, field)[index].dimensions  # a valid scenario's agree with the model's
        return is_fully_specified(operand.type, dimensions_at_execution(operand.dimensions, given))
    if name in ("rank-conflicts-with-model", "dimensions-reshaped-same-size"):
        return bool(operand.dimensions)
    return True


def _with(scenario: Scenario, field: str, index: int, argument: RequestArgument) -> Scenario:
    arguments = list(getattr(scenario, field))
    arguments[index] = argument
    return replace(scenario, **{field: tuple(arguments)})  # type: ignore[arg-type]  # field is inputs or outputs


@functools.lru_cache(maxsize=256)
def mutated_requests(scenarios: st.SearchStrategy[Scenario], names: tuple[str, ...] = ()) -> st.SearchStrategy[tuple[Scenario, tuple[str, str, Scenario]]]:
    """(valid scenario, (mutation name, requirement, mutated scenario)): a scenario from
    ``scenarios``, then one mutation of it; ``names`` limits the mutations tried.

    One strategy object per arguments, the scenario drawn inside it: a strategy made of each
    example's scenario would be a new object per example, and hypothesis validates every new
    strategy before its first draw (a few per cent of the requests suite's time, in a profile)."""
    return _mutated(scenarios, names)


@st.composite
def _mutated(draw, scenarios: st.SearchStrategy[Scenario], names: tuple[str, ...]) -> tuple[Scenario, tuple[str, str, Scenario]]:
    scenario = draw(scenarios, label="valid scenario")
    return scenario, _mutate(draw, scenario, names)


def _mutate(draw, scenario: Scenario, names: tuple[str, ...]) -> tuple[str, str, Scenario]:
    name = draw(sampled(tuple(sorted(names or MUTATIONS))), label="mutation")
    event(f"mutation: {name}")
    candidates = [a for a in _arguments(scenario) if _breaks_its_rule(name, scenario, *a)]
    if name == "dimensions-reshaped-same-size":
        # arguments whose shape can be changed within its rank, if any (else any of known rank, given an axis more)
        candidates = [a for a in candidates if _reshapable_axes(_operand(scenario, *a))] or candidates
    if name.startswith("remove-") or name.startswith("extra-"):
        # of the list it changes: a model whose inputs are all constants (FILL's) has no input to repeat
        wanted = "inputs" if name.endswith("input") else "outputs"
        candidates = [a for a in candidates if a[0] == wanted]
    assume(candidates)
    field, index = draw(sampled(tuple(candidates)), label="argument")
    if name.startswith("remove-") or name.startswith("extra-"):
        field = "inputs" if name.endswith("input") else "outputs"
        arguments = list(getattr(scenario, field))
        if name.startswith("remove-"):
            del arguments[draw(integers(0, len(arguments) - 1), label="removed")]
        else:
            arguments.append(arguments[draw(integers(0, len(arguments) - 1), label="duplicated")])
        return name, MUTATIONS[name], replace(scenario, **{field: tuple(arguments)})  # type: ignore[arg-type]
    argument = getattr(scenario, field)[index]
    loc = argument.location
    operand = _operand(scenario, field, index)
    pool_size = scenario.request_pools[loc.pool_index].size
    past = draw(integers(1, 32), label="bytes past")
    match name:
        case "pool-index-out-of-range":
            count = len(scenario.request_pools)
            # Past the end, or negative: a driver that indexes with the number as given counts from the end.
            # (the same pool counted from the end: a driver that indexes with it as given finds the right data)
            bad = draw(sampled((count, count + 3, loc.pool_index - count, loc.pool_index - count, -2**31)),
                       label="pool index")
            argument = replace(argument, location=replace(loc, pool_index=bad))
        case "offset-past-end":
            argument = replace(argument, location=replace(loc, offset=pool_size - loc.length - loc.padding + past))
        case "length-past-end":
            argument = replace(argument, location=replace(loc, length=pool_size - loc.offset - loc.padding + past))
        case "padding-past-end":
            argument = replace(argument, location=replace(loc, padding=pool_size - loc.offset - loc.length + past))
        case "region-field-negative":
            # The region's end stays inside the pool, so only the sign makes it malformed: a driver
            # that slices pool[offset:offset + length] with a negative offset counts from the end.
            part = draw(sampled(("offset", "length", "padding")), label="negative field")
            argument = replace(argument, location=replace(loc, **{part: -draw(integers(1, 32), label="below zero")}))
        case "length-not-matching-dimensions":
            step = element_size(operand.type) * draw(sampled((-1, 1)), label="direction")
            argument = replace(argument, location=replace(loc, length=max(0, loc.length + step)))
        case "dimensions-conflict-with-model":
            dims = list(argument.dimensions or operand.dimensions)
            axis = draw(sampled(_known_axes(operand)), label="axis")
            dims[axis] = operand.dimensions[axis] + draw(integers(1, 3))
            argument = replace(argument, dimensions=tuple(dims))
        case "dimensions-reshaped-same-size":
            # The same elements in another shape: the length still matches, so only the rule that
            # request dimensions agree with the model's known ones refuses it (a driver that takes
            # the request's dimensions in place of the model's runs a (2, 3) operand as (1, 6)).
            # An operand of rank 1, or of extents 1 only, has no other shape of its rank: it gets
            # an axis of 1 more (a scenario of such operands alone is not rejected, which would
            # cost its whole generation).
            axes = _reshapable_axes(operand)
            if axes:
                dims = list(dimensions_at_execution(operand.dimensions, argument.dimensions))
                axis = draw(sampled(axes), label="axis")
                other = draw(sampled(tuple(a for a in range(len(dims)) if a != axis)), label="other axis")
                dims[other], dims[axis] = dims[other] * dims[axis], 1
            else:  # a valid argument's dimensions are of the model's rank
                dims = [*(argument.dimensions or operand.dimensions), 1]
            argument = replace(argument, dimensions=tuple(dims))
        case "rank-conflicts-with-model":
            given = tuple(argument.dimensions or operand.dimensions or (1,))
            argument = replace(argument, dimensions=given + (1,) if draw(BOOLEANS) else given[:-1] or (1, 1))
        case "input-without-value":
            # hasNoValue in its proper form (no location, no dimensions) marks an omitted operand, and
            # the input chosen is one its operation needs, so the argument is missing
            argument = RequestArgument(True, DataLocation(), ())
        case "no-value-with-location":
            argument = RequestArgument(True, loc if loc != DataLocation() else DataLocation(0, 4, 4), ())
        case "no-value-with-dimensions":
            argument = RequestArgument(True, DataLocation(), tuple(argument.dimensions) or (1,))
        case "input-without-full-dimensions":
            # none given, or every extent left unknown: either way the model's own gaps stay open
            open_extents = tuple(0 for _ in argument.dimensions or operand.dimensions or (1,))
            argument = replace(argument, dimensions=draw(sampled(((), open_extents)), label="dimensions given"))
        case "input-with-negative-dimension":
            # numpy's reshape reads -1 as "whatever the length holds": a driver that passes the
            # request's dimensions to it runs with a shape the request never gave
            dims = list(argument.dimensions or operand.dimensions or (1,))
            unknown = [axis for axis, d in enumerate(operand.dimensions) if d == 0] or list(range(len(dims)))
            axis = draw(sampled(tuple(unknown)), label="axis")
            dims[axis] = draw(sampled((-1, -(dims[axis] or 1), -2**31)), label="negative dimension")
            argument = replace(argument, dimensions=tuple(dims))
    mutated = _with(scenario, field, index, argument)
    # A longer region may now reach into another output (or its padding, which a driver may write,
    # CHOICE-3): such a request asks two outputs to share bytes, and no answer about them is right.
    assume(not _outputs_overlap(mutated))
    return name, MUTATIONS[name], mutated


def _outputs_overlap(scenario: Scenario) -> bool:
    regions = sorted((a.location.pool_index, a.location.offset, a.location.offset + a.location.length + a.location.padding)
                     for a in scenario.outputs if not a.has_no_value)
    return any(p == q and start < end for (p, _, end), (q, start, _) in zip(regions, regions[1:]))
