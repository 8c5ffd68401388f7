"""The guided fuzz loop's parts: its inputs, its choice of the next test, what tells failures apart."""

from __future__ import annotations

import random

import pytest

from harness.integration.guided import Guided, _Target, corpus_key, failure_signature
from harness.integration.mutation import ReplayingProvider, mutated_choices


def _case(seed: int, choices: list | None = None, strategy: object = None) -> tuple[object, tuple]:
    """One test case of a small strategy (a list of (layout flag, shape) pairs, unless another is
    given), replaying ``choices`` where they fit: what it drew, and its choice nodes."""
    from hypothesis import strategies as st
    from hypothesis.control import BuildContext
    from hypothesis.internal.conjecture.data import ConjectureData

    strategy = strategy if strategy is not None else st.lists(st.tuples(st.booleans(), st.lists(st.integers(1, 9), min_size=1, max_size=4)),
                                                            min_size=3, max_size=8)
    data = ConjectureData(random=random.Random(seed), provider=ReplayingProvider,
                          provider_kw={"choices": choices or []})
    with BuildContext(data, wrapped_test=_case):
        value = data.draw(strategy)
    return value, data.nodes


def _drawn(seed: int) -> tuple:
    return _case(seed)[1]


def test_an_input_replays_the_test_case_it_came_from() -> None:
    value, nodes = _case(5)
    assert _case(99, [node.value for node in nodes]) == (value, nodes)


def test_a_changed_draw_keeps_the_others_and_a_draw_that_no_longer_fits_is_drawn_anew() -> None:
    from hypothesis import strategies as st

    pairs = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1000)), min_size=4, max_size=4)
    value, nodes = _case(3, strategy=pairs)
    choices = [node.value for node in nodes]
    first_flag = next(i for i, node in enumerate(nodes) if node.constraints.get("max_value") == 1)
    choices[first_flag] = 1 - choices[first_flag]
    changed, _ = _case(4, choices, pairs)
    assert changed[0][0] == 1 - value[0][0] and changed[1:] == value[1:] and changed[0][1] == value[0][1]
    # a value no draw of the list allows (past every bound): each such draw drawn anew, not
    # given the simplest value, so most are not zero
    anew = [_case(seed, [1000] * len(choices), pairs)[0] for seed in range(20)]
    assert sum(flag for case in anew for flag, _ in case) > 10


def _allowed(choices: list, nodes: tuple) -> bool:
    """Every changed draw is still one its node's constraints allow."""
    from hypothesis.internal.conjecture.choice import choice_permitted

    return all(choice_permitted(value, node.constraints) and type(value) is type(node.value)
               for value, node in zip(choices, nodes))


def test_a_mutated_input_keeps_most_of_its_parents_draws_and_changes_some() -> None:
    rng = random.Random(1)
    parent = _drawn(0)
    values = [node.value for node in parent]
    kept, changed = 0, 0
    for _ in range(300):
        child = mutated_choices(rng, parent, [])
        assert len(child) <= len(values)
        kept += child[:3] == values[:3]
        changed += child != values
    assert kept > 150, "most mutations keep an input's first draws"
    assert changed > 250, "a mutation changes what the input draws"


def test_a_changed_draw_is_one_its_strategy_allows() -> None:
    rng = random.Random(2)
    parent = _drawn(1)
    in_place = [child for child in (mutated_choices(rng, parent, []) for _ in range(300))
                if len(child) == len(parent)]
    assert in_place and all(_allowed(child, parent) for child in in_place)


def test_mutations_are_repeatable_from_a_seed_and_differ_between_seeds() -> None:
    parent, other = _drawn(2), [node.value for node in _drawn(3)]
    assert mutated_choices(random.Random(3), parent, other) == mutated_choices(random.Random(3), parent, other)
    assert len({repr(mutated_choices(random.Random(s), parent, other)) for s in range(30)}) > 15


def test_an_input_that_drew_nothing_gives_a_fresh_one() -> None:
    assert mutated_choices(random.Random(0), (), []) == []


class _Item:
    def __init__(self, name: str) -> None:
        self.nodeid = name


def _loop(blind: bool) -> Guided:
    return Guided(60, blind, 1, "ci", 0, 1, 1, lambda record: None)


def test_time_goes_to_the_test_still_finding_something_when_the_turn_is_by_yield() -> None:
    loop = _loop(blind=False)
    stuck, finding = _Target(_Item("stuck"), True), _Target(_Item("finding"), True)
    stuck.recent, stuck.spent = [(0, 1.0)] * 4, 4.0
    finding.recent, finding.spent = [(3, 1.0)] * 4, 40.0
    loop.explored_s, loop.exploited_s = 11.0, 10.0  # explored past its share: this turn is by yield
    assert loop._choose([stuck, finding]).item.nodeid == "finding" and not loop._exploring


def test_half_the_time_explores_the_test_with_the_least_time() -> None:
    loop = _loop(blind=False)
    starved, busy = _Target(_Item("starved"), True), _Target(_Item("busy"), True)
    starved.spent, busy.spent = 1.0, 50.0
    starved.recent = [(0, 0.25)] * 4
    busy.recent = [(5, 1.0)] * 4
    loop.explored_s, loop.exploited_s = 4.0, 6.0  # less than half explored: this turn explores
    assert loop._choose([starved, busy]).item.nodeid == "starved" and loop._exploring
    loop.explored_s = 7.0
    assert loop._choose([starved, busy]).item.nodeid == "busy" and not loop._exploring


def test_blind_gives_every_test_the_same_time() -> None:
    loop = _loop(blind=True)
    a, b = _Target(_Item("a"), True), _Target(_Item("b"), True)
    a.spent, b.spent = 3.0, 2.0
    a.recent = [(9, 1.0)] * 4
    for exploited in (0.0, 10.0, 100.0):
        loop.exploited_s = exploited
        assert loop._choose([a, b]).item.nodeid == "b"


def test_a_test_with_no_turns_left_is_not_chosen() -> None:
    loop = _loop(blind=False)
    done = _Target(_Item("done"), True, done=True)
    assert loop._choose([done]) is None


class _RuleError(AssertionError):
    rule = "OPS-1"


def test_failures_differing_only_in_their_values_are_one() -> None:
    one = failure_signature(_RuleError("output 0 differs: element 3: driver wrote 1.5, reference 2.0"))
    other = failure_signature(_RuleError("output 0 differs: element 7: driver wrote -4, reference 9"))
    assert one == other and one[1] == "OPS-1"
    assert failure_signature(_RuleError("execute returned GENERAL_FAILURE")) != one
    assert failure_signature(ValueError("output 0 differs: element 3: driver wrote 1.5, reference 2.0")) != one


def test_the_corpus_is_kept_beside_the_tests_examples() -> None:
    assert corpus_key(b"abc") == b"harness-corpus/abc"


@pytest.mark.parametrize("value", ["0/1", "2/1", "a/b", "1"])
def test_a_share_that_is_not_k_of_n_is_refused(value: str) -> None:
    import argparse

    from harness.integration.plugin import _share

    with pytest.raises(argparse.ArgumentTypeError):
        _share(value)
    assert _share("2/3") == (2, 3)
