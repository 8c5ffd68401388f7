"""pytest plugin (``pytest11`` entry point): ``--driver``, profiles, expectations, fixtures.

With the package installed, ``pytest --driver=NAME`` works from any directory; the
suites themselves are the ``suites`` package (``pytest --pyargs harness.suites --driver=NAME``).
"""

from __future__ import annotations

import argparse

import contextlib
import os

import random
import shlex
import time
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any, cast

import pytest

import harness
from harness.api.errors import ConformanceError, DriverFault, HarnessError, UsageError
from harness.api.expectations import Expectation, load_expectations
from harness.api.hal import Capabilities, Device
from harness.api.requirements import VALUE_RULE
from harness.integration.inputs import Number, directory_problem, file_problem, one_of
from harness.integration.recording import EXPECTATION, RefusedByBreaker, is_generative, suite_of
from harness.integration import forked
from harness.integration.generation import pin_local_constants
from harness.drivers.catalog import DriverEntry, load_catalog, native_entry
from harness.drivers.declarations import Declarations
from harness.drivers.registry import check_capabilities
from harness.integration.tracebacks import from_the_test
from harness.integration.skips import models_buildable, not_applicable, not_run, refused_allocation
from harness.service import DEFAULT_CALL_DEADLINE_S, DriverService

PROFILES = ("dev", "ci", "certify", "nightly")
CERTIFY_SEED = 0


#: The driver service's default address-space limit: far above what a conforming driver needs on
#: the suites' small tensors, far below what a leak may take from the machine.
DEFAULT_MEMORY_LIMIT_MIB = 8192

#: What the numeric options allow (`harness.integration.inputs`: always finite).  A call deadline
#: past a day is no deadline; a limit in MiB past 2**43 - 1 is more bytes than the kernel's limit holds.
SEED = Number(int, low=None)
EXAMPLES = Number(int, 0, unit="examples per test")
ROUNDS_FOR = Number(float, 0, above=False, high=366 * 24 * 3600, unit="seconds", note="0: one round")
TIMEOUT = Number(float, 0, high=24 * 3600, unit="seconds")
MEMORY_LIMIT = Number(int, 0, above=False, high=2**43 - 1, unit="MiB", note="0: no limit")


def _prepare_coverage(config: pytest.Config) -> None:
    """A guided fuzz loop whose driver's service reports coverage gets the compiled line tracer,
    built here (a service cannot: it may not write outside its sandbox) before the service starts."""
    from harness.service.coverage import COVERAGE_ENVIRONMENT, LINE_TRACER_ENVIRONMENT, build_line_tracer

    if (config.getoption("harness_guided_for") is None or config.getoption("harness_blind")
            or os.environ.get(COVERAGE_ENVIRONMENT) != "1" or os.environ.get(LINE_TRACER_ENVIRONMENT)):
        return
    tracer = build_line_tracer()
    if tracer is not None:
        os.environ[LINE_TRACER_ENVIRONMENT] = tracer


def _share(text: str) -> tuple[int, int]:
    """``K/N``: the K-th of N shares (1 <= K <= N)."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N (two whole numbers, such as 1/2)") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: K must be between 1 and N")
    return k, n


@dataclass
class HarnessState:
    """What the plugin resolved at start-up; kept in the config stash."""

    driver_name: str
    profile: str
    seed: int
    isolation: str = "process"
    timeout: float = DEFAULT_CALL_DEADLINE_S
    memory_limit_mib: int = DEFAULT_MEMORY_LIMIT_MIB
    # A fixed seed makes a run repeatable, and hypothesis then neither reads nor writes its example
    # database; profiles with a database (dev, nightly) stay unseeded unless asked.  A seeded run
    # given --harness-db keeps it (harness fuzz: its workers are seeded, so a failure's rerun can
    # come to the examples the run had, and what fails is still kept).
    seeded: bool = True
    round: int = 1  # harness fuzz's rounds (--harness-rounds-for): each generates from a seed of its own
    spec: DriverEntry | None = None
    device: Device | None = None
    service: DriverService | None = None
    declarations: Declarations | None = None
    expectations: list[Expectation] = field(default_factory=list)
    used_expectations: set[int] = field(default_factory=set)

    def generation_seed(self) -> int | None:
        """The seed this run's tests now generate from: the run's, one more each fuzzing round;
        None when unseeded."""
        return self.seed + self.round - 1 if self.seeded else None

    def resolve(self) -> DriverEntry:
        """The driver as its plugin describes it, learned without loading the plugin here
        (`harness.drivers.catalog`)."""
        if self.spec is None:
            name = self.driver_name
            self.spec = native_entry(name) if name.startswith("native:") else load_catalog(name).resolve(name)
        return self.spec

    def _in_process_spec(self):
        """The driver's plugin loaded in this process: for --driver-isolation=inline only, which
        is for debugging and never certifies."""
        from harness.drivers.registry import load_registry

        return load_registry().resolve(self.driver_name)

    def create(self) -> Device:
        """The driver under test: in its own service process (default) or in this process."""
        if self.device is None:
            spec = self.resolve()
            if self.isolation == "inline":
                from harness.drivers.inline import InlineDevice

                self.device = cast(Device, InlineDevice(self._in_process_spec().create()))  # its calls mark what the driver raises
            else:
                self.service = DriverService(self.driver_name, timeout=self.timeout,
                                             memory_limit=self.memory_limit_mib * 1024 * 1024,
                                             plugins=tuple(dict.fromkeys(filter(None, [spec.plugin, *spec.declared_by]))))
                self.device = cast(Device, self.service.device)  # a proxy presenting the Driver API
        return self.device

    def fresh_device(self) -> Device:
        """The driver as new, for a sequence that must start from nothing: its service's process
        replaced (process isolation), or a new instance of it (inline)."""
        device = self.create()
        if self.service is not None:
            self.service.restart()
            return device
        from harness.drivers.inline import InlineDevice

        return cast(Device, InlineDevice(self._in_process_spec().create()))

    def capabilities(self) -> Capabilities:
        device = self.create()
        if self.spec is not None and self.spec.capabilities is not None:
            return self.spec.capabilities
        if self.service is not None and self.service.capabilities is not None:
            return self.service.capabilities
        return device.capabilities()

    def declared(self) -> Declarations:
        """The driver's plugin's declarations process, started at the first question."""
        if self.declarations is None:
            from harness.tooling.sandbox import plan

            spec = self.resolve()
            reference = ":" in spec.name and not spec.name.startswith("native:")
            self.declarations = Declarations(spec.name, [] if reference else [spec.plugin, *spec.declared_by],
                                             spec.plugin or spec.name, plan)
        return self.declarations

    def close(self) -> None:
        if self.service is not None:
            self.service.close()
            self.service = None
        if self.declarations is not None:
            self.declarations.close()
            self.declarations = None


STATE_KEY = pytest.StashKey[HarnessState]()


def state_of(config: pytest.Config) -> HarnessState:
    return config.stash[STATE_KEY]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("driver-harness")
    group.addoption("--driver", default="reference", metavar="NAME",
                    help="driver under test: a registered name, package.module:factory or path/file.py:factory (default: reference)")
    group.addoption("--harness-profile", default="dev", type=one_of("--harness-profile", PROFILES),
                    help="hypothesis settings: dev (default), ci, certify (derandomized, fixed seed) or nightly")
    group.addoption("--harness-seed", type=SEED.for_pytest("--harness-seed"), default=None, metavar="N",
                    help="seed for every generated scenario (default: random, printed; certify: 0)")
    group.addoption("--expectations", default=None, metavar="FILE", help="TOML file of per-driver skips and xfails with reasons")
    group.addoption("--harness-record", default=None, metavar="FILE",
                    help="append one JSON record per test (outcome, requirements, examples) to FILE")
    group.addoption("--harness-stop-on", default="", metavar="REQUIREMENT",
                    help="stop at the first failing test that names REQUIREMENT (used to score seeded bugs)")
    group.addoption("--harness-first-operations", default="", metavar="OPERATION,...",
                    help="run the tests of these operations first (used to score seeded bugs in some operations' "
                         "results)")
    group.addoption("--harness-reproducers", default="", metavar="DIR",
                    help="write each failing scenario as a standalone reproducer script into DIR")
    group.addoption("--harness-db", default=None, metavar="PATH|redis://HOST:PORT/N",
                    help="hypothesis example database: a directory, or Redis shared with other machines (plus a local copy)")
    group.addoption("--harness-examples", type=EXAMPLES.for_pytest("--harness-examples"), default=None, metavar="N",
                    help="examples per test (overrides the profile)")
    group.addoption("--harness-rounds-for", type=ROUNDS_FOR.for_pytest("--harness-rounds-for"), default=None,
                    metavar="SECONDS",
                    help="harness fuzz: run the collected tests round after round (--harness-examples per test in "
                         "the first, doubling up to the profile's count) until SECONDS have passed; tests that "
                         "generate no examples run in the first round only")
    group.addoption("--harness-guided-for", type=ROUNDS_FOR.for_pytest("--harness-guided-for"), default=None,
                    metavar="SECONDS",
                    help="harness fuzz: a coverage-guided fuzz loop over the collected tests for SECONDS (the driver's "
                         "coverage comes from its service when DRIVER_HARNESS_COVERAGE=1 is set)")
    group.addoption("--harness-blind", action="store_true",
                    help="with --harness-guided-for: no coverage feedback and no corpus (fresh random inputs, the "
                         "same time for every test)")
    group.addoption("--harness-targets-share", type=_share, default=(1, 1), metavar="K/N",
                    help="with --harness-guided-for: fuzz the K-th of N shares of the generative tests (harness "
                         "fuzz's workers split them)")
    group.addoption("--harness-replay", action="store_true",
                    help="only re-run the examples stored in the database (no new generation)")
    group.addoption("--harness-db-read-only", action="store_true",
                    help="read the example database but change nothing in it (a reproducer's rerun: hypothesis "
                         "would delete a stored example that passes, and an earlier test's may pass there)")
    group.addoption("--harness-examples-of", default="", metavar="DRIVER",
                    help="read the examples the database holds for DRIVER instead of the driver under test's, "
                         "changing none (replay the failures found on another build of a driver, or on a driver "
                         "holding several seeded bugs)")
    group.addoption("--harness-no-shrink", action="store_true",
                    help="report the first failing example as found, without shrinking it")
    group.addoption("--harness-generative-only", action="store_true",
                    help="run only the tests that generate examples (harness fuzz: the fixed tests find nothing new "
                         "when run again), and keep a progress file beside --harness-record")
    group.addoption("--cts-specs", action="append", default=[], metavar="PATH",
                    help="NNAPI spec files (*.mod.py) or directories of them for the golden suite (repeatable; "
                         "default: the harness's own corpus)")
    group.addoption("--driver-isolation", default="process",
                    type=one_of("--driver-isolation", ("process", "inline")),
                    help="run the driver in its own service process (default; crashes and hangs are reported) or inline")
    group.addoption("--driver-timeout", type=TIMEOUT.for_pytest("--driver-timeout"), default=DEFAULT_CALL_DEADLINE_S,
                    metavar="SECONDS",
                    help=f"deadline of every driver call in process isolation (default {DEFAULT_CALL_DEADLINE_S:g})")
    group.addoption("--driver-memory-limit", type=MEMORY_LIMIT.for_pytest("--driver-memory-limit"),
                    default=DEFAULT_MEMORY_LIMIT_MIB, metavar="MIB",
                    help=f"address-space limit of the driver service (RLIMIT_AS, default {DEFAULT_MEMORY_LIMIT_MIB}); "
                         "a call that runs past it fails as RESOURCE (SVC-1); 0: no limit")


def _register_profiles() -> None:
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    from harness.integration.database import LOCAL_DIRECTORY

    # No explain phase: it re-runs the shrunk example many times to report which lines only
    # failing runs reach, and against a driver that crashes or hangs each re-run costs a service
    # restart or a whole deadline (minutes per test with hypothesis >= 6.1xx), for a report about
    # the harness's own lines that a vendor cannot use.
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]
    common = settings(deadline=None, phases=phases,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
    settings.register_profile("harness-dev", common, max_examples=20, database=DirectoryBasedExampleDatabase(LOCAL_DIRECTORY))
    settings.register_profile("harness-ci", common, max_examples=12, database=None, print_blob=True)
    settings.register_profile("harness-certify", common, max_examples=50, database=None, print_blob=True)
    settings.register_profile("harness-nightly", common, max_examples=1000, database=DirectoryBasedExampleDatabase(LOCAL_DIRECTORY),
                              print_blob=True)


def _example_options(config: pytest.Config, state: HarnessState, examples: int | None = None) -> list[str]:
    """The options that make one generative test of this run come to the example it failed on
    again: the same profile, example count (``examples``: a fuzzing round's) and shrinking, and
    the seed it generated from; its example database too when it had one (absolute: the rerun may
    start elsewhere), read only: its reuse phase replays what the run's did, the failing example
    first, and a rerun must not delete what an earlier test's stored example was.  Unseeded, the
    database replayed is all there is."""
    options = [f"--harness-profile={state.profile}"]
    examples = examples or config.getoption("harness_examples")
    if examples:
        options.append(f"--harness-examples={examples}")
    if config.getoption("harness_no_shrink"):  # the example as the run failed on it, not a shrunk one
        options.append("--harness-no-shrink")
    from harness.integration.database import LOCAL_DIRECTORY

    location = config.getoption("harness_db") or (None if state.seeded else LOCAL_DIRECTORY)
    if location is not None and not location.startswith("redis://"):
        location = os.path.join(str(config.invocation_params.dir), location)
    database = [f"--harness-db={location}", "--harness-db-read-only"] if location is not None else []
    if state.seeded:
        return [*options, f"--harness-seed={state.generation_seed()}", *database]
    return [*options, *database, "--harness-replay"]


def _apply_run_settings(config: pytest.Config, profile: str, seeded: bool) -> None:
    """Options that adjust the profile: database, example count, phases.  A seeded run keeps no
    database unless given one (hypothesis' own ``@seed`` turns it off; a seeded fuzz run keeps
    what fails in the one it names)."""
    from hypothesis import Phase, settings
    from hypothesis.database import ReadOnlyDatabase

    from harness.integration.database import DriverExamples, open_database

    changes: dict = {}
    database = settings.get_profile(f"harness-{profile}").database
    if config.getoption("harness_db"):
        try:
            database = open_database(config.getoption("harness_db"))
        except HarnessError as error:
            raise pytest.UsageError(str(error)) from None
    elif seeded and database is not None:
        database = changes["database"] = None
    if database is not None:
        driver, examples_of = config.getoption("driver"), config.getoption("harness_examples_of")
        # another driver's examples are read, never changed: hypothesis deletes a stored example
        # that passes, and that driver's own runs still need it
        if config.getoption("harness_db_read_only") or (examples_of and examples_of != driver):
            database = ReadOnlyDatabase(database)
        changes["database"] = DriverExamples(database, examples_of or driver)
    if config.getoption("harness_examples"):
        changes["max_examples"] = config.getoption("harness_examples")
    if config.getoption("harness_replay"):
        changes["phases"] = [Phase.explicit, Phase.reuse]
    elif config.getoption("harness_no_shrink"):
        changes["phases"] = [Phase.explicit, Phase.reuse, Phase.generate]
    if changes:
        settings.register_profile(f"harness-{profile}-adjusted", settings.get_profile(f"harness-{profile}"), **changes)
        settings.load_profile(f"harness-{profile}-adjusted")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requirement(*ids): the SPEC requirement IDs a test checks")
    config.addinivalue_line("markers", "golden(spec, case, kind, coverage): a golden example (recorded for coverage)")
    config.addinivalue_line("markers", "operations(*ops): the operations (OperationType) a test draws, when no "
                                       "parameter of it names them (--harness-first-operations takes it first)")
    config.addinivalue_line("markers", "generative: a test that generates examples without @given (a state machine run); "
                                       "it counts each run through the example_counter fixture")
    config.addinivalue_line("markers", f"{forked.MARKER}: the test calls the driver's code in this process (packed "
                                       "functions); it makes its call in a forked child, so a crash is reported")
    from harness.integration import custom_calls as custom_call_fixtures
    from harness.integration import histories

    if not config.pluginmanager.is_registered(custom_call_fixtures):
        config.pluginmanager.register(custom_call_fixtures, "harness-custom-calls")
    if not config.pluginmanager.is_registered(histories):
        config.pluginmanager.register(histories, "harness-histories")
    if not config.pluginmanager.is_registered(forked):
        config.pluginmanager.register(forked, "harness-forked")
    from hypothesis import settings

    # numbers are checked as they are parsed (their addoption types); the rest here, before anything heavy
    for path in config.getoption("cts_specs"):
        if not os.path.exists(path):
            raise pytest.UsageError(f"--cts-specs={path}: no such file or directory (give *.mod.py files or folders of them)")
        from harness.cts.corpus import spec_files

        if not spec_files([path]):  # a corpus of nothing would certify nothing, as PASS
            raise pytest.UsageError(f"--cts-specs={path}: holds no *.mod.py file (give *.mod.py files or folders of them)")
    _check_outputs(config)
    _prepare_coverage(config)
    _check_stop_on(config.getoption("harness_stop_on"))
    _check_first_operations(config.getoption("harness_first_operations"))
    expectations: list[Expectation] = []
    if config.getoption("expectations"):
        try:
            expectations = load_expectations(config.getoption("expectations"))
        except HarnessError as error:
            raise pytest.UsageError(str(error)) from None
    _register_profiles()
    pin_local_constants()  # a seed means the same examples in a run and in its reproducer
    profile = config.getoption("harness_profile")
    settings.load_profile(f"harness-{profile}")
    seed = config.getoption("harness_seed")
    if seed is None:
        worker_seed = getattr(config, "workerinput", {}).get("harness_seed")
        seed = worker_seed if worker_seed is not None else CERTIFY_SEED if profile == "certify" else random.randrange(2**32)
    state = HarnessState(config.getoption("driver"), profile, seed, config.getoption("driver_isolation"),
                         config.getoption("driver_timeout"), config.getoption("driver_memory_limit"))
    state.seeded = config.getoption("harness_seed") is not None or profile in ("ci", "certify")
    if config.getoption("harness_db") or config.getoption("harness_replay"):
        state.seeded = config.getoption("harness_seed") is not None and not config.getoption("harness_replay")
    _apply_run_settings(config, profile, state.seeded)
    config.stash[STATE_KEY] = state
    try:
        spec = state.resolve()  # an unknown driver or broken plugin stops the run here, with a usage error
        if spec.declaration_error:  # and so does an invalid declaration, in one line
            raise UsageError(spec.declaration_error)
        if state.driver_name != "reference":  # the reference starts lazily: it is trusted, and often unused
            state.create()  # a factory that raises stops the run here too
            if spec.declares and state.isolation != "inline":
                state.declared()  # and so does a declarations process that dies or lies
            check_capabilities(state.capabilities(), spec.plugin or "?", f"driver {spec.name!r}")
        state.expectations = expectations + _plugin_expectations(state)
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from None
    if config.getoption("harness_record"):  # after the checks: a refused run leaves no records file behind
        from harness.integration.recording import Recorder
        from harness.report.reproducer import DriverSetup

        # harness fuzz's rounds: a live progress file, and tests left out by the rounds' own choice
        fuzzing = (config.getoption("harness_generative_only") or config.getoption("harness_rounds_for") is not None
                   or config.getoption("harness_guided_for") is not None)
        record = config.getoption("harness_record")
        try:  # checked (_check_outputs): only a change since then fails here
            os.makedirs(os.path.dirname(os.path.abspath(record)), exist_ok=True)
            recording = Recorder(record, config.getoption("harness_stop_on"), canonical_id,
                                 config.getoption("driver"), config.getoption("harness_reproducers"),
                                 service=lambda: state.service,
                                 progress=fuzzing,
                                 replaying=_replaying_on_a_fresh_driver(state), example_options=_example_options(config, state),
                                 setup=DriverSetup(state.isolation, state.timeout, state.memory_limit_mib),
                                 deselected_not_run=not fuzzing)
        except OSError as error:
            raise pytest.UsageError(f"--harness-record={record}: cannot open it: {error.strerror}") from None
        config.pluginmanager.register(recording, "harness-recorder")
    if config.getoption("harness_rounds_for") is not None:
        from harness.integration.rounds import Rounds

        recorder = config.pluginmanager.get_plugin("harness-recorder")

        def begin_round(number: int, examples: int) -> int | None:
            """A fuzzing round begins: its seed (None unseeded), recorded with it, and what a rerun
            of one of its failures needs to come to the same examples."""
            state.round = number
            if recorder is not None:
                recorder.begin_round({"round": number, "examples_per_test": examples, "seed": state.generation_seed()},
                                     _example_options(config, state, examples))
            return state.generation_seed()

        config.pluginmanager.register(
            Rounds(config.getoption("harness_rounds_for"), config.getoption("harness_examples") or 1, profile,
                   lambda item: suite_of(canonical_id(item)), begin_round),
            "harness-rounds")
    if config.getoption("harness_guided_for") is not None:
        from harness.integration.guided import Guided

        recorder = config.pluginmanager.get_plugin("harness-recorder")
        if recorder is not None:
            recorder.begin_round({"round": 1, "examples_per_test": config.getoption("harness_examples") or 1,
                                  "seed": state.generation_seed(), "guided": not config.getoption("harness_blind")},
                                 _example_options(config, state))
        share, shares = config.getoption("harness_targets_share")
        config.pluginmanager.register(
            Guided(config.getoption("harness_guided_for"), config.getoption("harness_blind"),
                   config.getoption("harness_examples") or 1, profile, state.generation_seed(), share, shares,
                   recorder.write_fuzzing if recorder is not None else (lambda record: None), canonical_id),
            "harness-guided")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistSeedSharing(seed), "harness-xdist-seed")


def _check_outputs(config: pytest.Config) -> None:
    """Where the run writes: checked before it starts (an unwritable place found at the first
    failure, an hour in, was a traceback and a lost run)."""
    from harness.integration.database import database_problem

    checks = [("--harness-record", config.getoption("harness_record"), file_problem),
              ("--harness-reproducers", config.getoption("harness_reproducers"), directory_problem)]
    for option, path, problem_of in checks:
        problem = problem_of(path) if path else None
        if problem:
            raise pytest.UsageError(f"{option}={path}: {problem}")
    location = config.getoption("harness_db")
    problem = database_problem(location, writable=not config.getoption("harness_db_read_only")) if location else None
    if problem:
        raise pytest.UsageError(problem)
    cache = os.environ.get("DRIVER_HARNESS_CACHE")  # where native targets are built (harness.tooling.build)
    problem = directory_problem(cache) if cache else None
    if problem:
        raise pytest.UsageError(f"DRIVER_HARNESS_CACHE={cache} (environment): {problem}")


def _check_stop_on(requirement: str) -> None:
    """``--harness-stop-on`` names a requirement: one no test names would never stop the run."""
    from harness.api.requirements import REQUIREMENTS

    if requirement and requirement not in REQUIREMENTS:
        import difflib

        guess = difflib.get_close_matches(requirement.upper(), REQUIREMENTS, n=1)
        hint = f"did you mean {guess[0]}? " if guess else ""
        raise pytest.UsageError(f"--harness-stop-on={requirement}: no such requirement; {hint}"
                                f"the requirements are {', '.join(REQUIREMENTS)}")


def _operation_names(option: str) -> frozenset[str]:
    return frozenset(name.strip().upper() for name in option.split(",") if name.strip())


def _check_first_operations(option: str) -> None:
    """``--harness-first-operations`` names operations (of `OperationType`)."""
    from harness.api.hal import OperationType

    unknown = sorted(_operation_names(option) - set(OperationType.__members__))
    if unknown:
        raise pytest.UsageError(f"--harness-first-operations={option}: {', '.join(unknown)} "
                                f"{'is not an operation' if len(unknown) == 1 else 'are not operations'} "
                                f"(NNAPI's names, as OperationType spells them: ADD, CONV_2D, ...)")


def _concerns(item: pytest.Item, operations: frozenset[str]) -> bool:
    """Whether ``item`` draws one of ``operations`` (`concerned_operations`)."""
    return bool(operations) and bool(concerned_operations(item) & operations)


def concerned_operations(item: pytest.Item) -> frozenset[str]:
    """The operations ``item`` draws, by name: those its ``operations`` marker names, or the one it is
    parametrized by, or those of a family of models it is parametrized by (`models.FAMILIES`:
    ``conversion`` draws CAST and DEQUANTIZE)."""
    from harness.api.hal import OperationType
    from harness.strategies.models import FAMILIES

    names = {op.name for marker in item.iter_markers("operations") for op in marker.args}
    callspec = getattr(item, "callspec", None)
    for value in (callspec.params.values() if callspec is not None else ()):
        names.add(getattr(value, "name", "").upper())
        if isinstance(value, str):
            names.add(value.upper())
            names.update(op.name for op in FAMILIES.get(value, ()))
    return frozenset(names & OperationType.__members__.keys())


class _XdistSeedSharing:
    """Every xdist worker generates with the controller's seed."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def pytest_configure_node(self, node) -> None:
        node.workerinput["harness_seed"] = self.seed


def _plugin_expectations(state: HarnessState) -> list[Expectation]:
    return list(state.resolve().expectations)


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = config.pluginmanager.get_plugin("harness-recorder")
    state = config.stash.get(STATE_KEY, None)
    try:  # the service stops and the record closes even when its last write fails (a full disk)
        if recorder is not None:
            try:
                if state is not None and state.service is not None:
                    recorder.write_service(state.service.summary())
            finally:
                recorder.close()
    finally:
        if state is not None:
            state.close()


def declared_for_driver(config: pytest.Config, what: str) -> list:
    """What the driver's plugins declare (``custom_call_targets``, ``packed_function_libraries``),
    once per run: served by the plugin's own declarations process (`harness.drivers.declarations`),
    or, inline only, by the plugin loaded here."""
    cache = config.stash.setdefault(_DECLARED, {})
    if what not in cache:
        state = state_of(config)
        spec = state.resolve()  # checked at start-up (pytest_configure): this does not fail
        if what not in spec.declares:
            cache[what] = []
        elif state.isolation == "inline":
            cache[what] = getattr(_declaring_registry(state), what)(spec.name)
        else:
            declared = state.declared()
            cache[what] = list(declared.targets if what == "custom_call_targets" else declared.libraries)
    return cache[what]


_DECLARED = pytest.StashKey[dict]()


def _declaring_registry(state: HarnessState):
    """The plugin of a driver that declares custom-call targets or packed-function libraries,
    loaded here: for --driver-isolation=inline only, which never certifies."""
    from harness.drivers.registry import load_plugins, load_registry

    spec = state.resolve()
    if ":" in spec.name and not spec.name.startswith("native:"):
        registry = load_registry(entry_points=False, repo_plugins=False)
        registry.resolve(spec.name)
        return registry
    return load_plugins([spec.plugin, *spec.declared_by])


def parametrize_declared(metafunc: pytest.Metafunc, argname: str, declared: list, ids: list[str]) -> None:
    """One test per declared item, through the fixture ``argname`` (indirect).  With nothing
    declared the test runs once as "none-declared" and its fixture says it is not applicable,
    instead of pytest's silent skip of an empty parameter set."""
    if declared:
        metafunc.parametrize(argname, declared, ids=ids, indirect=True)
    else:
        metafunc.parametrize(argname, [None], ids=["none-declared"], indirect=True)


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = state_of(config)
    seed = (f"hypothesis seed {state.seed} (rerun with --harness-seed={state.seed})" if state.seeded
             else "unseeded: failing examples are kept in the example database")
    lines = [f"driver-harness {harness.__version__}: driver {state.driver_name!r}, profile {state.profile}, {seed}"]
    try:
        spec = state.resolve()
        device = state.create()
        caps = state.capabilities()
    except HarnessError as error:
        return lines + [f"driver could not be loaded: {error}"]
    where = f"isolated in a service process, call deadline {state.timeout:g} s" if state.service else "inline"
    lines.append(f"driver {device.name} version {device.version} ({spec.description}; plugin {spec.plugin}; {where})")
    lines.append(describe_capabilities(caps))
    return lines


def session_info(state: HarnessState) -> dict:
    """Who was tested how: the head of a run's record, and of its certificate."""
    spec, device, caps = state.resolve(), state.create(), state.capabilities()
    return {
        "driver": state.driver_name, "device_name": device.name, "device_version": device.version,
        "plugin": spec.plugin, "description": spec.description, "profile": state.profile, "seed": state.seed,
        "isolation": state.isolation, "driver_timeout_s": state.timeout, "driver_memory_limit_mib": state.memory_limit_mib,
        "sandbox": (state.service.sandbox.describe() if state.service is not None else
                    {"mechanism": "none", "enforced": False, "why": "the driver ran in the harness's own process "
                                                                   "(--driver-isolation=inline)"}),
        "harness_version": harness.__version__,
        "capabilities": {"memory_kinds": sorted(caps.memory_kinds), "memory_domains": caps.memory_domains,
                         "operations": sorted(op.name for op in caps.operations),
                         "operand_types": sorted(t.name for t in caps.operand_types),
                         "operation_types": {op.name: sorted(t.name for t in types) for op, types in caps.operation_types}},
    }


def pytest_collection_finish(session: pytest.Session) -> None:
    from harness.integration.golden import corpus_summary

    recorder = session.config.pluginmanager.get_plugin("harness-recorder")
    if recorder is not None and not hasattr(session.config, "workerinput"):
        try:
            info = session_info(state_of(session.config))
            golden = corpus_summary(session.config)
            if golden is not None:
                info["golden_corpus"] = golden
            # what the command line kept out of collection: a certificate of such a run is no PASS
            info["files_left_out"] = [*(session.config.getoption("ignore") or ()),
                                      *(session.config.getoption("ignore_glob") or ())]
            recorder.write_session(info)
        except HarnessError as error:
            recorder.write_session({"driver": state_of(session.config).driver_name, "error": str(error)})


def describe_capabilities(caps: Capabilities) -> str:
    operations = ", ".join(sorted(op.name for op in caps.operations))
    kinds = ", ".join(sorted(str(kind) for kind in caps.memory_kinds))  # a MemoryKind's str is its name in SPEC
    return (f"capabilities: memory kinds [{kinds}], memory domains "
            f"{'yes' if caps.memory_domains else 'no'}, operations [{operations}]")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """The driver service's circuit breaker counts faults per test (harness.service.breaker)."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is not None and state.service is not None:
        state.service.breaker.context = item.nodeid


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failure in Python's format starts at the test: innermost of the wrappers, so the run's
    record, the console and junit.xml all take it so (`harness.integration.tracebacks`)."""
    report = yield
    if report.failed and call.excinfo is not None and item.config.getoption("tbstyle") == "native":
        report.longrepr = from_the_test(call.excinfo.value, getattr(getattr(item, "obj", None), "__code__", None))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A test that a circuit breaker's refusal ended (`RefusedByBreaker`) fails with that refusal."""
    try:
        with _examples_of_its_own(item):
            return (yield from _counting_allocations(item))
    except RefusedByBreaker as stopped:
        raise stopped.refusal from None  # its traceback, from the test down, kept


@contextlib.contextmanager
def _examples_of_its_own(item: pytest.Item):
    """A parametrized hypothesis test keeps its examples under a key of its own while it runs.

    Hypothesis keys a test's examples by its function, which every parameter of a parametrized
    test shares; and a stored example that passes when replayed is deleted.  So the failure one
    parameter found (a custom-call target's) was deleted by the next parameter's replay, where it
    passed, and neither ``harness replay`` nor the failure's reproducer found it."""
    function: Any = getattr(item, "obj", None)
    callspec = getattr(item, "callspec", None)
    if callspec is None or not getattr(function, "is_hypothesis_test", False):
        yield
        return
    from hypothesis.internal.reflection import function_digest

    had = "_hypothesis_internal_database_key" in vars(function)
    previous = getattr(function, "_hypothesis_internal_database_key", None)
    function._hypothesis_internal_database_key = (
        function_digest(function.hypothesis.inner_test) + b"[" + callspec.id.encode("utf-8", "replace") + b"]")
    try:
        yield
    finally:
        if had:
            function._hypothesis_internal_database_key = previous
        else:
            del function._hypothesis_internal_database_key


def _counting_allocations(item: pytest.Item):
    """A suite test in which the driver refused every valid allocation it was asked for (all its
    examples together) checked nothing it is for: not run, never a silent pass (DOM-ALLOC-3)."""
    if not canonical_id(item).startswith("suites/"):
        return (yield)
    from harness.judging.lockstep import counting_allocations  # here: `harness list` and the like never need it

    with counting_allocations() as tally:
        result = yield
    if tally.refused and not tally.served:
        refused_allocation(f"all {tally.refused} valid allocations of this test")
    if tally.declared and not tally.served:
        not_applicable("dynamic_buffers", f"the driver declares that it refuses buffers of unknown shape, and every valid "
                                          f"allocation of this test ({tally.declared}) was one")
    return result


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = state_of(config)
    if config.getoption("harness_generative_only"):
        fixed = [item for item in items if not is_generative(item)]
        if fixed:
            config.hook.pytest_deselected(items=fixed)
            items[:] = [item for item in items if item not in fixed]
    # The harness's own guarantees (SPEC §7, canary drivers) are proved first: a run whose
    # service cannot report a crash or a hang has nothing trustworthy to say after them.  A run
    # that stops at the value rule takes the generated tests next: every test that judges an
    # output can fail that rule, whatever it names, and generated ones reach the shapes, types and
    # layouts no fixed example tried.
    stop_on = config.getoption("harness_stop_on")
    items.sort(key=lambda item: (not canonical_id(item).startswith("suites/service/"),
                                 stop_on == VALUE_RULE and not is_generative(item)))
    if stop_on and stop_on != VALUE_RULE:  # tests naming that requirement first: a run that stops there need not run the rest
        items.sort(key=lambda item: not any(stop_on in m.args for m in item.iter_markers("requirement")))
    first = _operation_names(config.getoption("harness_first_operations"))
    if first:  # before them, the tests of the operations a bug is in, whichever rule they name
        items.sort(key=lambda item: not _concerns(item, first))
    for item in items:
        function = getattr(item, "obj", None)
        if function is not None and state.seeded and getattr(function, "is_hypothesis_test", False):
            # what hypothesis' @seed sets, without its turning the database off: the run's settings
            # already keep none unless --harness-db named one (`_apply_run_settings`), which a fuzz
            # run's failures must still go to
            function._hypothesis_internal_use_seed = state.seed
        names = (item.nodeid, canonical_id(item))
        for number, expectation in enumerate(state.expectations):
            if expectation.applies_to(state.driver_name) and any(expectation.matches(n) for n in names):
                state.used_expectations.add(number)
                item.stash[EXPECTATION] = expectation
                reason = f"{expectation.reason} [expectation {expectation.source}]"
                if expectation.action == "skip":
                    item.add_marker(pytest.mark.skip(reason=reason))
                else:
                    item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
                break


def canonical_id(item: pytest.Item) -> str:
    """``suites/area/test_x.py::test_name[param]`` whatever the rootdir and invocation."""
    module = getattr(item, "module", None)
    if module is None or "::" not in item.nodeid:
        return item.nodeid
    # Installed, the suites are harness.suites; from a checkout pytest may name them suites.
    name = module.__name__.removeprefix("harness.")
    return f"{name.replace('.', '/')}.py::{item.nodeid.split('::', 1)[1]}"


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or hasattr(config, "workerinput"):
        return
    if state.service is not None:
        _summarize_service(terminalreporter, state.service.summary(), state.timeout)
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and not terminalreporter.stats.get("deselected") \
            and any(arg.startswith("--driver") for arg in config.invocation_params.args):
        terminalreporter.write_line(nothing_collected_hint(config.getoption("driver")), yellow=True)
    stale = [e for i, e in enumerate(state.expectations) if i not in state.used_expectations and e.applies_to(state.driver_name)]
    if stale:
        terminalreporter.section("stale expectations")
        for expectation in stale:
            terminalreporter.write_line(f"{expectation.source}: {expectation.action} {expectation.test!r} matches no collected test")


def nothing_collected_hint(driver: str) -> str:
    """What to run instead, when a ``--driver`` run collected no test: the suites are installed
    with the harness, not in the folder (a vendor's own) that pytest was started from."""
    name = shlex.quote(driver)
    return (f"driver-harness: no tests here; the suites are installed with the harness: run "
            f"`harness certify --driver {name}` (a certificate) or `pytest --pyargs harness.suites --driver={name}`")


def _summarize_service(terminalreporter, summary: dict, timeout: float) -> None:
    lines = []
    if summary["breaker_opened"]:
        lines.append(f"circuit breaker opened for {', '.join(summary['breaker_opened'])}: every call of it crashed, hung or "
                     f"raised, so later calls failed at once (the failures above name the first fault)")
    if summary["slow_calls"]:
        slowest = summary["slowest_call"]
        lines.append(f"{summary['slow_calls']} of {summary['calls']} driver calls took longer than the "
                     f"{summary['slow_call_budget_s']:g} s per-call budget (slowest: {slowest['seconds']:g} s, "
                     f"{slowest['call']}); a slow driver makes a long run: lower --harness-examples, or raise "
                     f"--driver-timeout (now {timeout:g} s) if calls are cut off")
    if lines:
        terminalreporter.section("driver service")
        for line in lines:
            terminalreporter.write_line(line)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def driver_spec(pytestconfig: pytest.Config) -> DriverEntry:
    return state_of(pytestconfig).resolve()


@pytest.fixture(scope="session")
def driver(pytestconfig: pytest.Config) -> Device:
    """The driver under test."""
    try:
        return state_of(pytestconfig).create()
    except HarnessError as error:
        pytest.exit(str(error), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def reference() -> Device:
    """An in-process reference driver: the oracle."""
    from reference_driver import ReferenceDevice

    return ReferenceDevice()


@pytest.fixture
def fresh_driver(driver: Device, pytestconfig: pytest.Config) -> Device:
    """The driver as new, for a test of what it does first after start-up (state a driver makes on
    first use is met once per process, by whichever test comes first): its service's process
    replaced, or a new instance of it inline."""
    return state_of(pytestconfig).fresh_device()


@pytest.fixture(scope="session")
def capabilities(driver: Device, pytestconfig: pytest.Config) -> Capabilities:
    return state_of(pytestconfig).capabilities()


@pytest.fixture(scope="session")
def models_can_be_built(capabilities: Capabilities) -> None:
    """For a test that runs generated models: not applicable when the driver's declarations build
    none (no declared operation on a declared type it takes)."""
    models_buildable(capabilities)


@pytest.fixture(scope="session")
def driver_service(driver: Device, pytestconfig: pytest.Config) -> DriverService:
    """The service hosting the driver; tests of process isolation skip when running inline."""
    service = state_of(pytestconfig).service
    if service is None:
        not_run("the driver runs inline (--driver-isolation=inline)", "run without --driver-isolation=inline")
    return service


@pytest.fixture
def driver_pid(driver: Device, pytestconfig: pytest.Config) -> int:
    """The process the driver runs in now: its service's, or this one's when it runs inline."""
    service = state_of(pytestconfig).service
    if service is None:
        return os.getpid()
    return service.running_pid()


@pytest.fixture(scope="session")
def example_counter(pytestconfig: pytest.Config) -> Callable[[], None]:
    """Call it once per generated example of a test marked ``generative`` (a @given test's
    examples are counted without it): the record's example count and harness fuzz's progress."""
    recorder = pytestconfig.pluginmanager.get_plugin("harness-recorder")
    return recorder.count_example if recorder is not None else lambda: None


@pytest.fixture
def run_built_test(request: pytest.FixtureRequest) -> Callable[[Any], None]:
    """How a test that builds its own hypothesis test (a state machine) runs it: as hypothesis
    runs it, or, in harness fuzz's loop, one input at a time as the loop runs a @given test
    (`Guided.run_built`), so that what the loop learns from coverage reaches state machines too."""
    guided = request.config.pluginmanager.get_plugin("harness-guided")
    if guided is None:
        return lambda test: test()
    return lambda test: guided.run_built(request.node, test)


@dataclass(frozen=True)
class FailureWatch:
    """What a test that runs hypothesis inside itself (a state machine) or judges across examples
    (a leak) tells the run's recorder, so that a run stopped while it shrinks still records the
    failure it had found (`Recorder.pytest_keyboard_interrupt`)."""

    watch: Callable[[object], None]  # a hypothesis test the test builds: its first failing example is kept
    failed: Callable[[Exception], None]  # a failure the test found itself, before it shrinks it


def _replaying_on_a_fresh_driver(state: HarnessState) -> Callable[[ConformanceError], tuple | bool | None]:
    """replaying(verdict), for the recorder: a failing call sequence checked on a fresh driver
    (`harness.integration.histories.replaying_steps`, cut down for at most SHRINK_SECONDS), or
    whether a failing scenario fails there too (`scenario_fails_on_a_fresh_driver`).  The tests
    after it then start on a fresh driver too, not on what the last replay left.  The service's
    circuit breaker is suspended meanwhile: the check is of what the driver does, and a breaker
    that refused its calls would make any crash or hang look replayed."""

    # A breaker's refusals carry the call sequence or scenario of the last call that really failed, the
    # same one for every test refused until another call fails: each is checked once (kept with its
    # answer, so that its id stays its own), not once per test refused.
    refusals_checked: dict[int, tuple[object, tuple | bool | None]] = {}

    def replaying(verdict: ConformanceError) -> tuple | bool | None:
        from harness.integration.histories import SHRINK_SECONDS, replaying_steps, scenario_fails_on_a_fresh_driver
        from reference_driver import ReferenceDevice

        replayed = (verdict.steps or verdict.scenario) if getattr(verdict, "by_breaker", False) else None
        if replayed is not None and id(replayed) in refusals_checked:
            return refusals_checked[id(replayed)][1]
        with state.service.breaker.suspended() if state.service is not None else contextlib.nullcontext():
            if verdict.steps:
                found: tuple | bool | None = replaying_steps(state.fresh_device, ReferenceDevice(), verdict,
                                                             time.monotonic() + SHRINK_SECONDS)
            else:
                found = scenario_fails_on_a_fresh_driver(state.fresh_device, ReferenceDevice(), verdict)
        if replayed is not None:
            refusals_checked[id(replayed)] = (replayed, found)
        with contextlib.suppress(DriverFault):  # a new service that does not start is the next call's failure
            state.fresh_device()
        return found

    return replaying


@pytest.fixture(scope="session")
def failure_watch(pytestconfig: pytest.Config) -> FailureWatch:
    recorder = pytestconfig.pluginmanager.get_plugin("harness-recorder")
    if recorder is None:
        return FailureWatch(lambda test: None, lambda error: None)
    return FailureWatch(lambda test: recorder.watch(test, count=False), recorder.note_failure)


@pytest.fixture
def generation_seed(pytestconfig: pytest.Config) -> int | None:
    """The seed a test that builds its own hypothesis test (a state machine) generates from: the
    run's (ci, certify, --harness-seed), this round's in harness fuzz; None in an unseeded run."""
    return state_of(pytestconfig).generation_seed()


@pytest.fixture
def memory_domains(capabilities: Capabilities) -> None:
    """The test is not applicable when the driver declares no memory-domain support (SPEC §3 is optional)."""
    if not capabilities.memory_domains:
        not_applicable("memory_domains", "the driver declares no memory-domain support (SPEC §3 is optional for drivers)")
