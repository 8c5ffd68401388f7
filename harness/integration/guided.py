"""Coverage-guided fuzzing inside one pytest session (``--harness-guided-for SECONDS``).

``harness fuzz`` runs this loop in each of its worker processes.  Each generative test is a
*target*: its hypothesis test is run one input at a time, an input being a prefix of choices
that hypothesis' generator completes (`harness.integration.mutation`), and each input that made
the driver reach code it had not reached before (`harness.service.coverage`: the edges its
service's replies carried) is kept in the target's corpus and mutated later, draw by draw.  Time
goes to the targets still finding something: each gets a short look in turn at first; then half
the time goes to the target with the best recent yield (new coverage or failures per second), in
turns that last while it keeps reaching new code, and half to the target with the least time so
far, a blind turn's length each, so none is starved.  Blind (``--harness-blind``, or a driver
that sends no coverage): fresh inputs only, and the same time for every target.

What stays hypothesis': a failing input is saved in the example database under its test's key
the moment it fails, then the test runs as usual on it (reuse and shrink phases only), so the
failure is shrunk, recorded and given a reproducer as in any run, and ``harness replay`` finds
it.  A failure already met in this target (the same exception type, rule and message once its
values are left out: `harness.report.findings.normalised_message`) is not run again: the loop
goes on looking for others.

The corpus lives in the example database beside the failures (`corpus_key`): a directory, or
Redis shared by every machine fuzzing the same driver; each target reads what others added
every `SHARE_EVERY_S` seconds and runs it once, to learn the coverage it reaches.

A test that builds its hypothesis test inside itself (the memory-domain state machine) hands it
to the loop through the ``run_built_test`` fixture, and is fuzzed the same way, each input one
run of the machine.  Tests that cannot be driven one input at a time (tests run in a forked
child) are run as they are, with more examples each time their turn comes, as
``--harness-rounds-for`` would.  Fixed tests run once, first.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import inspect
import random
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["CORPUS_PREFIX", "Guided", "corpus_key"]

CORPUS_PREFIX = b"harness-corpus/"
SLICE_S = 1.0  # a blind turn, and a guided exploring one: fresh looks at the least-fuzzed test
FIRST_TURN_S = 0.3  # a guided target's first turn: a quick look at every test, then time by yield
# A guided target's turn chosen by its yield lasts while it keeps finding something: at least
# QUIET_S, then until QUIET_S have passed with nothing new, LONGEST_TURN_S at most.  A target whose
# inputs have stopped reaching new code hands its time on within a fraction of a second, and one
# passing a driver's conditions one after another keeps its turn.
QUIET_S = 0.3
LONGEST_TURN_S = 5.0
# A guided run's time is shared between turns by yield and exploring turns, a blind run's length
# each, on the test with the least time so far: a yield is a noisy estimate, a bug found by plain
# generation in a test whose coverage saturated early is still found, and no test is starved.
EXPLORE_SHARE = 0.5
SHARE_EVERY_S = 30.0  # how often a target reads the corpus other processes added
# Fresh inputs among a guided target's: each target weighs fresh inputs against mutations by how
# often each reached something new there (a mutation can land far from its parent, and a target
# whose kept inputs are exhausted does better on hypothesis' own draws), within these bounds.
FRESH_SHARE = (0.2, 0.8)
RECENT_TURNS = 4  # a target's yield is taken over its last this many turns
COVERAGE_RECORD_EVERY_S = 5.0
MAX_CORPUS = 2000  # inputs kept per target (the oldest unproductive go first beyond it)


def corpus_key(test_key: bytes) -> bytes:
    """Where a test's corpus is kept in the example database, beside its failing examples."""
    return CORPUS_PREFIX + test_key


@dataclasses.dataclass
class _Entry:
    nodes: tuple[Any, ...]  # what its run drew: hypothesis' choice nodes (value, type, constraints)
    reached: int = 1  # edges it reached first
    chosen: int = 0
    productive: int = 0  # inputs mutated from it that reached something new

    def nodes_values(self) -> list[Any]:
        return [node.value for node in self.nodes]


@dataclasses.dataclass
class _Target:
    item: pytest.Item
    fuzzable: bool
    spent: float = 0.0
    turns: int = 0
    inputs: int = 0
    valid: int = 0
    found: int = 0  # inputs that reached new coverage or a new failure
    # (inputs, how many reached new coverage) of fresh inputs and of mutations: a prior of one in four
    fresh_hits: list[int] = dataclasses.field(default_factory=lambda: [4, 1])
    mutation_hits: list[int] = dataclasses.field(default_factory=lambda: [4, 1])
    examples: int = 0  # for a target run as it is: examples of its next turn
    corpus: list[_Entry] = dataclasses.field(default_factory=list)
    known_corpus: set[bytes] = dataclasses.field(default_factory=set)  # kept inputs, as the database holds them
    failures: set[tuple[str, str, str]] = dataclasses.field(default_factory=set)
    recent: list[tuple[int, float]] = dataclasses.field(default_factory=list)  # (found, seconds) per turn
    shared_at: float = -SHARE_EVERY_S
    done: bool = False  # not applicable, or not run: no more turns
    built: bool = False  # a test that builds its hypothesis test and hands it to the loop (`Guided.run_built`)
    replayed: bool = False  # the failures stored under its key were met
    runner: Any = None  # the fuzz target: `_FuzzRunner`

    def fresh_share(self) -> float:
        fresh = self.fresh_hits[1] / self.fresh_hits[0]
        mutated = self.mutation_hits[1] / self.mutation_hits[0]
        return min(max(fresh / (fresh + mutated), FRESH_SHARE[0]), FRESH_SHARE[1])

    def yield_rate(self) -> float:
        turns = self.recent[-RECENT_TURNS:]
        seconds = sum(s for _, s in turns)
        return (sum(f for f, _ in turns) + 0.1) / max(seconds, 1e-3)


def _bound_fixtures(item: pytest.Function) -> dict[str, Any]:
    return {name: item.funcargs[name] for name in item._fixtureinfo.argnames if name in item.funcargs}


def _fuzzable(item: pytest.Item) -> bool:
    function = getattr(item, "obj", None)
    handle = getattr(function, "hypothesis", None)
    return (handle is not None and bool(getattr(handle, "_given_kwargs", None))
            and item.get_closest_marker("in_forked_child") is None)


class _FuzzRunner:
    """One test's hypothesis function, bound to its fixtures, run on one input (a prefix of
    choices: `harness.integration.mutation`) at a time.

    It runs the test as hypothesis' ``fuzz_one_input`` does (hypothesis' own per-test state, one
    test case at a time, no engine around it) but from choices rather than bytes: hypothesis'
    generator draws what a prefix leaves open, so an input is the distribution the engine draws
    from, and a kept one is changed draw by draw."""

    def __init__(self, wrapped: Any, fixtures: Callable[[], dict[str, Any]]) -> None:
        """``wrapped``: a hypothesis test (a @given test function, or one a test built);
        ``fixtures``: the arguments it takes besides what it draws."""
        from hypothesis import given, settings
        from hypothesis.core import StateForActualGivenExecution, process_arguments_to_given
        from hypothesis.internal.reflection import function_digest

        handle = wrapped.hypothesis
        self._fixtures = fixtures
        self.wrapped = wrapped
        self.settings = wrapped._hypothesis_internal_use_settings
        self.database = self.settings.database
        self.key: bytes = getattr(wrapped, "_hypothesis_internal_database_key", None) or function_digest(handle.inner_test)
        bound_fixtures = fixtures()
        inner = handle.inner_test  # the recorder's wrapper: each input is counted as an example
        given_kwargs = dict(handle._given_kwargs)

        def bound(**drawn: Any) -> Any:
            return inner(**bound_fixtures, **drawn)

        bound.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in given_kwargs])
        bound.__name__ = getattr(wrapped, "__name__", "test")
        bound.__qualname__ = getattr(wrapped, "__qualname__", bound.__name__)
        fuzzed: Any = settings(self.settings, database=None, deadline=None)(given(**given_kwargs)(bound))
        _, _, stuff = process_arguments_to_given(fuzzed, (), {}, given_kwargs, dict(inspect.signature(fuzzed).parameters))
        self._state = StateForActualGivenExecution(
            stuff, fuzzed.hypothesis.inner_test, fuzzed._hypothesis_internal_use_settings, random.Random(0), fuzzed)
        self.last: Any = None  # the last run's ConjectureData: what a failing input drew

    def run(self, prefix: list[Any], rng: random.Random) -> Any:
        """Run the test once on the choices ``prefix`` (`ReplayingProvider`), hypothesis' generator
        (seeded from ``rng``) drawing what they leave open.  Returns the run's ConjectureData (its
        ``nodes``: what was drawn) when the test passed, None when the input made no test case (an
        assumption or a filter refused it, or it drew too much); raises what the test raised."""
        from hypothesis.errors import StopTest, UnsatisfiedAssumption
        from hypothesis.internal.conjecture.data import ConjectureData, Status
        from hypothesis.internal.conjecture.engine import BUFFER_SIZE

        from harness.integration.mutation import ReplayingProvider

        data = ConjectureData(random=random.Random(rng.getrandbits(64)), provider=ReplayingProvider,
                              provider_kw={"choices": prefix}, max_choices=BUFFER_SIZE)
        self.last = data
        try:
            self._state.execute_once(data)
        except (StopTest, UnsatisfiedAssumption):
            return None
        return data if data.status == Status.VALID else None

    def replay_stored(self) -> None:
        """Run the test on the failing examples stored under its key, if any (reuse and shrink
        phases only): raises what still fails."""
        from hypothesis import Phase, settings

        if self.database is None or next(iter(self.database.fetch(self.key)), None) is None:
            return
        previous = self.wrapped._hypothesis_internal_use_settings
        self.wrapped._hypothesis_internal_use_settings = settings(previous, phases=(Phase.reuse, Phase.shrink))
        try:
            self.wrapped(**self._fixtures())
        finally:
            self.wrapped._hypothesis_internal_use_settings = previous

    def failing_choices(self) -> list[bytes]:
        """What the last (failing) run drew, as the example database keeps a test's choices."""
        from hypothesis.database import choices_to_bytes

        return [choices_to_bytes(self.last.choices)] if self.last is not None else []

    def shrink(self, choices: list[bytes], signature: tuple[str, str, str]) -> None:
        """Run the test as usual on a failing input: reuse it from the database, shrink it, and raise
        what hypothesis reports (the recorder records it, as any failure).  Kept under the test's
        own key afterwards, where a later run and ``harness replay`` find it."""
        from hypothesis import Phase, settings

        if self.database is None:
            return
        # under a key of its own while it is shrunk: the failures found before are stored under
        # the test's key, and would be replayed (and reported) first
        digest = hashlib.sha256(repr(signature).encode()).hexdigest()[:16].encode()
        key = self.key + b".finding." + digest
        for value in choices:
            self.database.save(key, value)
        self.database.save(self.key, choices[0])  # kept at once: nothing found is lost if shrinking dies
        previous_key = getattr(self.wrapped, "_hypothesis_internal_database_key", None)
        previous_settings = self.wrapped._hypothesis_internal_use_settings
        self.wrapped._hypothesis_internal_database_key = key
        self.wrapped._hypothesis_internal_use_settings = settings(
            previous_settings, phases=(Phase.reuse, Phase.shrink), max_examples=max(len(choices), 1))
        try:
            self.wrapped(**self._fixtures())
        finally:
            self.wrapped._hypothesis_internal_use_settings = previous_settings
            if previous_key is None:
                del self.wrapped._hypothesis_internal_database_key
            else:
                self.wrapped._hypothesis_internal_database_key = previous_key
            for value in list(self.database.fetch(key)):
                self.database.save(self.key, value)
                self.database.delete(key, value)


def failure_signature(error: BaseException) -> tuple[str, str, str]:
    """What tells one failure of a target from another: the exception's type, the rule it
    names, and its message once the values in it are left out."""
    from harness.report.findings import normalised_message

    return (type(error).__name__, str(getattr(error, "rule", "") or ""), normalised_message(str(error)))


class Guided:
    """The session's test loop when ``--harness-guided-for`` is given."""

    def __init__(self, seconds: float, blind: bool, first_examples: int, profile: str, seed: int | None,
                 worker: int, workers: int, write: Callable[[dict], None],
                 canonical_id: Callable[[pytest.Item], str] = lambda item: item.nodeid) -> None:
        """``write``: appends a record to the run's record file (`Recorder.write_fuzzing`)."""
        from harness.integration.rounds import _profile_examples

        self.seconds = seconds
        self.blind = blind
        self.first_examples = first_examples
        self.most_examples = _profile_examples(profile)
        self.random = random.Random(seed)
        self.worker, self.workers = worker, workers
        self._write = write
        from hypothesis import settings

        default = settings.default  # the run's profile, loaded before this plugin is made
        assert default is not None
        self._default = default
        self._canonical_id = canonical_id
        self.edges: set[int] = set()
        self.inputs = 0
        self.shared_loaded = 0  # corpus entries other processes kept, run here
        self.started = 0.0
        self._recorded_at = -COVERAGE_RECORD_EVERY_S
        self._turn: _Target | None = None
        self._exploring = blind  # whether this turn explores (`_choose`)
        self.explored_s = self.exploited_s = 0.0  # time in turns after the first, by kind
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # as in rounds: the deadline's interrupt must stop it
            signal.signal(signal.SIGINT, signal.default_int_handler)

    # ----------------------------------------------------------------- the loop

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from harness.integration.recording import is_generative
        from harness.integration.rounds import has_tests_to_run

        if not has_tests_to_run(session):
            return True

        self.started = time.monotonic()
        ends = self.started + self.seconds
        generative = [item for item in session.items if is_generative(item)]
        fixed = [item for item in session.items if not is_generative(item)]
        mine = generative[self.worker - 1::self.workers] or generative  # workers split the targets
        targets = [_Target(item, _fuzzable(item), examples=self.first_examples) for item in mine]
        queue = fixed + [t.item for t in targets]
        by_item = {id(t.item): t for t in targets}
        gc.collect()
        gc.freeze()
        try:
            self._loop(session, queue, targets, by_item, ends)
        finally:  # the deadline's interrupt included: the run's last figures are kept
            self._record_coverage(targets, final=True)
        return True

    def _loop(self, session: pytest.Session, queue: list[pytest.Item], targets: list[_Target],
              by_item: dict[int, _Target], ends: float) -> None:
        index = 0
        # first every test once, in order (fixed ones included); then the scheduler's choice
        while index < len(queue) or (targets and time.monotonic() < ends):
            if index < len(queue):
                item = queue[index]
                index += 1
                target = by_item.get(id(item))
                self._exploring = self.blind
            else:
                target = self._choose(targets)
                if target is None:
                    break
                item = target.item
            nextitem = queue[index] if index < len(queue) else None
            self._run(item, target, nextitem, ends)
            self._record_coverage(targets)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
            if time.monotonic() >= ends:
                break

    def _choose(self, targets: list[_Target]) -> _Target | None:
        """The next turn's target; sets whether the turn explores (`_exploring`)."""
        live = [t for t in targets if not t.done]
        if not live:
            return None
        self._exploring = self.blind or self.explored_s <= EXPLORE_SHARE * (self.explored_s + self.exploited_s)
        if self._exploring:
            return min(live, key=lambda t: (t.spent, t.turns))
        return max(live, key=lambda t: (t.yield_rate(), -t.spent))

    def _run(self, item: pytest.Item, target: _Target | None, nextitem: pytest.Item | None, ends: float) -> None:
        began = time.monotonic()
        found_before = target.found if target is not None else 0
        if target is not None and not (target.fuzzable or target.built):
            self._set_examples(item, target.examples)
            target.examples = min(target.examples * 2, max(self.most_examples, self.first_examples))
        self._turn = target
        self._ends = ends
        try:
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        finally:
            self._turn = None
        if target is not None:
            seconds = time.monotonic() - began
            if target.turns:  # a first turn is neither: every target has one
                if self._exploring:
                    self.explored_s += seconds
                else:
                    self.exploited_s += seconds
            target.spent += seconds
            target.turns += 1
            target.recent.append((target.found - found_before, seconds))
            del target.recent[:-RECENT_TURNS]
            if item.stash.get(_NOT_AGAIN, False):
                target.done = True

    def _set_examples(self, item: pytest.Item, examples: int) -> None:
        from hypothesis import settings

        # the run's own profile as parent, every turn: the default of the turn before would make
        # each turn's settings a level deeper, and a night's turns a chain too deep to read
        settings.register_profile("harness-guided-turn", self._default, max_examples=examples)
        settings.load_profile("harness-guided-turn")
        function: Any = getattr(item, "obj", None)
        if getattr(function, "is_hypothesis_test", False):
            given = item.stash.setdefault(_GIVEN_SETTINGS, function._hypothesis_internal_use_settings)
            function._hypothesis_internal_use_settings = settings(given, max_examples=examples)

    # ----------------------------------------------------------------- one target's turn

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A test skipped (not applicable to what the driver declares) or failing before it runs (a
        fixture's not-run, its setup's error) would do the same on every turn: it gets no more.
        Such a turn takes a millisecond, so the turns that explore would otherwise keep choosing
        it, the target with the least time."""
        target = self._turn
        if target is None or report.nodeid != target.item.nodeid:
            return
        if report.skipped or (report.when == "setup" and report.failed):
            target.item.stash[_NOT_AGAIN] = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        target = self._turn
        if target is None or target.item is not pyfuncitem or not target.fuzzable:
            return None
        if target.runner is None:
            target.runner = _FuzzRunner(pyfuncitem.obj, lambda: _bound_fixtures(pyfuncitem))
        self._fuzz_turn(target)
        return True

    def run_built(self, item: pytest.Item, test: Any) -> None:
        """Run a hypothesis test that ``item`` built (a state machine's: the ``run_built_test``
        fixture) for this turn, one input at a time as a @given test's; outside a turn of
        ``item``'s, as hypothesis runs it.  The test is built anew on each of its turns, around the
        same draws: the target's corpus carries over."""
        target = self._turn
        if target is None or target.item is not item:
            test()
            return
        target.built = True
        target.runner = _FuzzRunner(test, dict)
        self._fuzz_turn(target)

    def _fuzz_turn(self, target: _Target) -> None:
        try:
            self._fuzz(target)
        except BaseException as error:
            if _stops_the_target(error):
                target.item.stash[_NOT_AGAIN] = True
            elif isinstance(error, Exception):  # the failure as shrunk: known from now on too
                target.failures.add(failure_signature(error))
            raise

    def _fuzz(self, target: _Target) -> None:
        from harness.integration.mutation import mutated_choices
        from harness.service.coverage import RECEIVED

        runner: _FuzzRunner = target.runner
        if not target.replayed:
            target.replayed = True
            # Failures stored under the test's key (another process's, or an earlier run's) are met
            # first, as in any hypothesis run: each is reported by this process too, said to come
            # from the database, and once known the loop looks for others.
            try:
                runner.replay_stored()
            except Exception:
                self._write({"replayed_failure": self._canonical_id(target.item)})
                raise
        began = time.monotonic()
        by_yield = not (self.blind or self._exploring or not target.turns)  # lasts while it finds something
        if by_yield:
            longest, quiet_until = began + LONGEST_TURN_S, began + QUIET_S
        else:  # a turn of a fixed length: a guided target's first look, or a blind-length one
            longest = quiet_until = began + (SLICE_S if self.blind or target.turns else FIRST_TURN_S)
        longest = min(longest, self._ends)
        pending = self._shared_inputs(target)
        RECEIVED.take()  # what came before this turn is not this input's
        while (now := time.monotonic()) < longest and (now < quiet_until or pending):
            shared = bool(pending)
            if pending:
                prefix, parent = pending.pop(), None
            elif self.blind or not target.corpus or self.random.random() < target.fresh_share():
                prefix, parent = [], None
            else:
                parent = self._pick(target)
                prefix = mutated_choices(self.random, parent.nodes, self.random.choice(target.corpus).nodes_values())
            target.inputs += 1
            self.inputs += 1
            try:
                data = runner.run(prefix, self.random)
            except Exception as error:
                signature = failure_signature(error)
                if signature in target.failures:
                    continue
                target.failures.add(signature)
                target.found += 1
                choices = runner.failing_choices()
                if choices:
                    runner.shrink(choices, signature)  # raises the shrunk failure: the turn ends with it
                continue
            if data is None:
                continue
            target.valid += 1
            new = [edge for edge in RECEIVED.take() if edge not in self.edges]
            if self.blind:
                continue
            if not shared:
                tally = target.fresh_hits if parent is None else target.mutation_hits
                tally[0] += 1
                tally[1] += bool(new)
            if new:
                self.edges.update(new)
                target.found += 1
                if by_yield:
                    quiet_until = time.monotonic() + QUIET_S
                if parent is not None:
                    parent.productive += 1
            if new or shared:  # another process kept it: what it reached is worth mutating here too
                self._keep(target, data.nodes, len(new), save=not shared)

    def _pick(self, target: _Target) -> _Entry:
        """A corpus entry to mutate, by its weight: the edges it reached first and the new ones its
        mutations reached, less the more often it was chosen (an entry mutated many times without
        result has had its chance), and the newest more often (what they reached is least
        explored)."""
        corpus = target.corpus
        if self.random.random() < 0.25:
            entry = corpus[-1 - min(int(self.random.expovariate(0.5)), len(corpus) - 1)]
        else:
            weights = [(e.reached + 4 * e.productive) / (1 + e.chosen) ** 0.5 for e in corpus]
            entry = self.random.choices(corpus, weights)[0]
        entry.chosen += 1
        return entry

    def _keep(self, target: _Target, nodes: tuple[Any, ...], reached: int, save: bool = True) -> None:
        from hypothesis.database import choices_to_bytes

        encoded = choices_to_bytes([node.value for node in nodes])
        if save and encoded in target.known_corpus:
            return
        target.known_corpus.add(encoded)
        target.corpus.append(_Entry(nodes, reached))
        runner: _FuzzRunner = target.runner
        if save and runner.database is not None:
            runner.database.save(corpus_key(runner.key), encoded)
        if len(target.corpus) > MAX_CORPUS:
            dropped = min(range(len(target.corpus) // 2), key=lambda i: target.corpus[i].productive)
            target.corpus.pop(dropped)

    def _shared_inputs(self, target: _Target) -> list[list[Any]]:
        """Corpus entries other processes kept since this target last looked (all, the first time),
        as choices: run once each, to learn what they reach, and kept."""
        from hypothesis.database import choices_from_bytes

        runner: _FuzzRunner = target.runner
        now = time.monotonic()
        if self.blind or runner.database is None or now - target.shared_at < SHARE_EVERY_S:
            return []
        target.shared_at = now
        new = [value for value in runner.database.fetch(corpus_key(runner.key)) if value not in target.known_corpus]
        target.known_corpus.update(new)
        decoded = [choices_from_bytes(value) for value in new]
        inputs = [list(choices) for choices in decoded if choices is not None]  # another version's: not choices
        self.shared_loaded += len(inputs)
        return inputs

    # ----------------------------------------------------------------- what the run reached

    def _record_coverage(self, targets: list[_Target], final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._recorded_at < COVERAGE_RECORD_EVERY_S:
            return
        self._recorded_at = now
        self._write({"coverage": {
            "t": round(now - self.started, 2), "edges": len(self.edges), "inputs": self.inputs,
            "valid": sum(t.valid for t in targets),
            "corpus": sum(len(t.corpus) for t in targets), "guided": not self.blind,
            "shared_loaded": self.shared_loaded, "targets": sum(1 for t in targets if t.fuzzable or t.built), "final": final,
            **({"tests": self._time_spent(targets)} if final else {})}})

    def _time_spent(self, targets: list[_Target]) -> list[dict]:
        """Where the run's time went: each test's seconds, turns, inputs and finds (new coverage or
        failures), most time first."""
        return [{"test": self._canonical_id(t.item), "seconds": round(t.spent, 2), "turns": t.turns,
                 "inputs": t.inputs, "found": t.found, "corpus": len(t.corpus)}
                for t in sorted(targets, key=lambda t: -t.spent) if t.turns]


def _stops_the_target(error: BaseException) -> bool:
    """A skip (not applicable) or a not-run: the target gets no more turns."""
    from harness.integration.skips import NotApplicable, NotRun

    return isinstance(error, (NotApplicable, NotRun, pytest.skip.Exception))


_NOT_AGAIN = pytest.StashKey[bool]()
_GIVEN_SETTINGS = pytest.StashKey[Any]()
