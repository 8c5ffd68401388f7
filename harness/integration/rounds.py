"""Fuzzing rounds inside one pytest session (``--harness-rounds-for SECONDS``).

``harness fuzz`` runs the generative tests over and over, each time with more examples per
test.  Doing that as a new pytest process per round paid, every round, for the interpreter,
the imports (jax for the custom-call suite), collection, the driver service's start and
everything the process had cached (compiled XLA calls): 1-3 s a round, a third of a short
run.  Here one session runs the collected tests round after round instead: round ``r`` gives
each test ``--harness-examples`` x 2**(r-1) examples, up to the profile's own count, and starts
one suite later than the round before, so a short budget still reaches every suite early.
The session stops SECONDS after its first test began, at the end of the test then running: no
new round starts, and the round under way ends there.  ``harness fuzz`` also
interrupts its workers at its deadline; the session's own deadline bounds a worker that did not
hear that (started with SIGINT ignored, as a shell starts a background job).  The session's
driver service and fixtures stay up between rounds (pytest tears down only what the next item
does not share).  Tests that generate
no examples (fixed cases, the concurrency and descriptor checks) run in the first round only:
run again they check the same thing, but a fuzz run that never ran them would miss the bugs only
they catch.

Each round writes a ``{"round": r, ...}`` record before its first test (with the seed it
generates from), so the fuzz controller can tell rounds apart in one record file.
"""

from __future__ import annotations

import gc
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hypothesis import settings as Settings


def _profile_examples(profile: str) -> int:
    """A round's examples per test at most: the profile's own count (nightly: 1000), whatever
    --harness-examples started at."""
    from hypothesis import settings

    return settings.get_profile(f"harness-{profile}").max_examples


def has_tests_to_run(session: pytest.Session) -> bool:
    """What pytest's own test loop checks first: collection errors stop the run (unless told to go
    on), and a collect-only run or one that collected nothing runs nothing."""
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} errors during collection")
    return not session.config.option.collectonly and bool(session.items)


def round_examples(number: int, first: int, most: int) -> int:
    """Examples per test in round ``number`` (from 1): ``first``, doubling, at most ``most``."""
    return min(first * 2 ** (number - 1), max(most, first))


def _suite_rotation(items: list[pytest.Item], suite_of: Callable[[pytest.Item], str], turn: int) -> list[pytest.Item]:
    """``items`` with their suites (in order of first appearance) rotated by ``turn``."""
    suites: dict[str, list[pytest.Item]] = {}
    for item in items:
        suites.setdefault(suite_of(item), []).append(item)
    groups = list(suites.values())
    turn %= max(len(groups), 1)
    return [item for group in groups[turn:] + groups[:turn] for item in group]


def _freeze_what_lives_on() -> None:
    """Take everything alive now out of the cyclic garbage collector's view for the rest of the run.

    What is alive between rounds (the imports, the collected tests, the driver service's client,
    compiled XLA calls, hypothesis' strategy caches) lives until the session ends, yet each full
    collection walked all of it again: about 90 ms a time, one every second or two.  Measured over
    the whole nightly run, 2 x 60 s, freezing gave 5 % more examples/s with one worker and 11 % with
    two.  The garbage is collected first, and this runs once per round, so what the last round
    left cached is frozen too.  Reference counting still frees frozen objects; only a cycle among
    them that dies later stays, and nothing a test builds is alive between rounds."""
    gc.collect()
    gc.freeze()


class Rounds:
    """The session's test loop when ``--harness-rounds-for`` is given."""

    def __init__(self, seconds: float, first_examples: int, profile: str, suite_of: Callable[[pytest.Item], str],
                 begin_round: Callable[[int, int], int | None]) -> None:
        """``begin_round(number, examples)``: told as each round begins; the seed it generates
        from (None: unseeded)."""
        self.seconds = seconds
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            # Started with SIGINT ignored (harness fuzz run as a shell's background job): the
            # controller's interrupt at its deadline must still stop this session.
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self.first_examples = first_examples
        self.most_examples = _profile_examples(profile)
        self._suite_of = suite_of
        self._begin_round = begin_round
        # each hypothesis test's settings as collected, by function id
        self._given: dict[int, Settings] = {}
        from hypothesis import settings

        default = settings.default  # the run's profile, loaded before this plugin is made
        assert default is not None
        self._default: Settings = default

    def _set_round(self, items: list[pytest.Item], examples: int, seed: int | None) -> None:
        from hypothesis import settings

        # a state machine run inside a test (marked generative) takes the default settings when it runs
        settings.register_profile("harness-round", self._default, max_examples=examples)
        settings.load_profile("harness-round")

        for item in items:
            function: Any = getattr(item, "obj", None)
            if not getattr(function, "is_hypothesis_test", False):
                continue
            # @given took the settings in force when the module was imported; a round replaces
            # them with the same settings and its own example count
            given = self._given.setdefault(id(function), function._hypothesis_internal_use_settings)
            function._hypothesis_internal_use_settings = settings(given, max_examples=examples)
            if seed is not None:  # a seeded run (harness fuzz's workers) stays repeatable, with new examples each round
                function._hypothesis_internal_use_seed = seed

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if not has_tests_to_run(session):
            return True
        from harness.integration.recording import is_generative

        ends = time.monotonic() + self.seconds
        number = 0
        order = list(session.items)  # the first round runs every test, fixed ones included
        generative = [item for item in session.items if is_generative(item)]
        while number == 0 or (generative and time.monotonic() < ends):
            number += 1
            examples = round_examples(number, self.first_examples, self.most_examples)
            self._set_round(order, examples, self._begin_round(number, examples))
            _freeze_what_lives_on()
            upcoming = _suite_rotation(generative or session.items, self._suite_of, number)
            for index, item in enumerate(order):
                # The next round's first test follows this round's last: what the two share
                # (the session's driver service above all) stays up between rounds.  (A test
                # that follows itself, in a session of one, is torn down whole: pytest sets up
                # only what is not still up, and a test's own fixtures must be made again.)
                following = order[index + 1] if index + 1 < len(order) else upcoming[0]
                nextitem = following if following is not item else None
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                if session.shouldfail:
                    raise session.Failed(session.shouldfail)
                if session.shouldstop:
                    raise session.Interrupted(session.shouldstop)
                if time.monotonic() >= ends:  # pytest's session end tears down what is still up
                    return True
            order = upcoming
        return True
