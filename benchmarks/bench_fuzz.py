"""Fuzzing throughput, each figure against what limits it, measured in the same run.

    python benchmarks/bench_fuzz.py [--seconds S] [--repeats N] [--baseline REV] [--suites a,b] [--profile-examples N]
                                    [--scope suites|whole|both] [--no-engine-examples N]
    python benchmarks/bench_fuzz.py --bugs [--minutes M] [--workers W] [--skip-ci-check]

With ``--bugs``, fuzzing is measured in deep seeded bugs found, blind beside guided, and nothing
else (`fuzz_bugs`, which writes bench_fuzz_bugs.json).  Without it:

(a) per suite, examples/s of ``harness fuzz --driver reference`` with 1 worker and with 2 (N runs of each, interleaved), for
    this checkout and, side by side, for git revision REV (default: none) installed into a
    scratch directory with ``pip install --no-deps --target`` and put first on PYTHONPATH;
(b) where one example's time goes (cProfile of one in-process run per suite, each function's
    own time assigned to hypothesis generation, building the model and its memories, the
    reference, service calls, judging, recording, or the rest; a built-in's time goes to the
    part that called it);
(c) the service's round trip (a trivial call), and the examples/s it would allow at the
    measured number of service calls per example: the ceiling no strategy tuning can pass;
(d) hypothesis' own ceiling: examples/s of a test that does nothing but make as many choices
    per example as the suite's examples make (measured in (b)), under the same engine and
    phases.  No suite can pass it without making fewer choices, so it bounds what any change
    to the harness's own code can give (a 5x goal above it cannot be met that way);
(e) the cores each run keeps busy (the CPU time of every process it starts, the workers, their
    driver services and the controller, over its wall time) and its examples per CPU-second.  A
    2-worker run short of 2x that keeps every core busy is limited by the work per example (the
    service's half of it included), not by waiting; one that leaves cores idle is waiting;
(f) with ``--scope whole`` or ``both``: the whole nightly run, one ``harness fuzz`` over all the
    selected suites together, as issue 18 first measured it (``--minutes 1``, 6 suites, 1 worker:
    about 110 examples/s), with 1 and 2 workers and side by side with REV.  Each round gives every
    test as many examples, so the run's rate is the harmonic mean of its tests' rates (weighted
    by their count), with start-up and the short first rounds included;
(g) hypothesis without its engine: each generative test runs N examples under the engine, then N
    test cases through ``fuzz_one_input`` (hypothesis' own entry point for external fuzzers: one
    test case from a buffer of random bytes, with no data tree, no mutations, no shrinking), both
    timed in the same process with the same fixtures.  What a fuzz loop with no engine at all
    would do with the same test bodies;
(h) the same runs in another unit: the driver calls each configuration made per second (every
    worker session's service counts its calls and writes the count in its record file), side by
    side with REV's.  An example of this checkout and one of REV's need not make as many calls
    (examples that check more make more), so this is the driver's work the fuzzing got through;
(i) with a baseline: the same tests in both, in-test (each test's examples over the time its calls
    took, from the runs' own per-test records: no start-up, no time between tests), at equal
    examples per test as a round gives them.  What a suite's figure in (a) gains beyond this is
    the time between examples the fuzz loop no longer spends (REV started a pytest session per
    round).  Against it, hypothesis' rate for a test that makes one choice and does nothing else:
    a test whose 5x of REV's in-test rate is above that cannot reach 5x under hypothesis' engine,
    whatever its body costs;
(j) with a baseline: what 5x of REV's examples/s in (a) would take of each example: the in-test
    rate it needs at this checkout's share of its run spent in tests, the time per example that
    gives, less hypothesis' engine at the suite's choices ((d)) and the service's round trips
    ((c) x the calls per example from (b)), against the harness's own work per example now (the
    strategies' code beyond their choices, the reference, models and memories, judging);
(k) the machine's own scaling, before and after the runs: hypothesis' engine alone (as in (d), CPU
    bound, nothing shared) in one process, then in two at once.  Two workers reach at most what the
    machine gives two processes of the same kind of work: on a host that shares the two vCPUs'
    cores or caches with other load, that is well under 2x, and a 1.8x goal above it is the
    machine's, not the harness's.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import inspect
import io
import json
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the sibling results module

import fuzz_bugs  # noqa: E402
import results  # noqa: E402

ROOT = os.path.dirname(HERE)
SUITES = ("memory_pools", "requests", "numerics", "memory_domains", "custom_calls", "packed_functions")

#: Where a function's own time goes, by the file it is in (first match wins).
PARTS = (
    ("generation", ("/hypothesis/", "/harness/strategies/")),
    ("model and memories", ("/harness/judging/scenario.py", "/harness/judging/builders.py", "/harness/api/memory.py",
                            "/harness/api/hal.py")),
    ("reference", ("/reference_driver/",)),
    ("service calls", ("/harness/service/", "/pickle.py", "/socket.py", "/selectors.py")),
    ("judging", ("/harness/judging/", "/numpy/")),
    ("recording", ("/harness/integration/", "/harness/report/")),
)


def _part(filename: str) -> str | None:
    for part, needles in PARTS:
        if any(needle in filename for needle in needles):
            return part
    return None


def time_split(stats: pstats.Stats) -> dict[str, float]:
    """Seconds per part; a built-in (no file) counts for the parts of its callers, pro rata."""
    split: dict[str, float] = defaultdict(float)
    raw = stats.stats  # type: ignore[attr-defined]
    for (filename, _, _), (_, _, own, _, callers) in raw.items():
        part = _part(filename)
        if part is not None or filename != "~" or not callers:
            split[part or "other (pytest, imports)"] += own
            continue
        by_caller = {caller: timing[2] for caller, timing in callers.items()}
        total = sum(by_caller.values()) or 1.0
        for (caller_file, _, _), share in by_caller.items():
            split[_part(caller_file) or "other (pytest, imports)"] += own * share / total
    return dict(split)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every waited-for descendant (the zygote waits for services)
    return usage.ru_utime + usage.ru_stime


class _Runs:
    """What one configuration's runs of a suite did, added up (a rate is over all of them)."""

    def __init__(self) -> None:
        self.examples, self.seconds, self.cpu_seconds, self.wall = 0, 0.0, 0.0, 0.0
        self.calls = 0  # driver calls, as the services counted them
        self.rates: list[float] = []  # each run's own examples/s
        self.per_test: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])  # test id -> [examples, seconds in it]

    def add(self, examples: int, seconds: float, cpu_seconds: float, wall: float, calls: int) -> None:
        self.examples += examples
        self.calls += calls
        self.seconds += seconds
        self.cpu_seconds += cpu_seconds
        self.wall += wall
        self.rates.append(examples / seconds)

    @property
    def rate(self) -> float:
        return self.examples / max(self.seconds, 1e-9)

    @property
    def call_rate(self) -> float:
        return self.calls / max(self.seconds, 1e-9)

    @property
    def cores(self) -> float:
        return self.cpu_seconds / max(self.wall, 1e-9)

    @property
    def per_cpu_second(self) -> float:
        return self.examples / max(self.cpu_seconds, 1e-9)


def fuzz_run(suite: str, workers: int, seconds: float, env: dict[str, str], into: _Runs) -> None:
    """One ``harness fuzz`` run of one suite (or of several, comma-separated, in one run): its
    examples and the run's whole wall time (start-up included), and the CPU time of every
    process it started."""
    cpu, started = _children_cpu(), time.monotonic()
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "harness.commands.cli", "fuzz", "--driver", "reference", "--suites", suite,
                   "--minutes", str(seconds / 60), "--workers", str(workers), "--db", os.path.join(out, "db"),
                   "--out", out]
        subprocess.run(command, cwd=out, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds + 300)
        with open(os.path.join(out, "fuzz-summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
        records = _records(out)
        calls = sum(record["service"]["calls"] for record in records if "service" in record)
        for record in records:
            if "id" in record and record.get("examples") and record.get("duration"):  # a generative test call
                into.per_test[record["id"]][0] += record["examples"]
                into.per_test[record["id"]][1] += record["duration"]
    into.add(sum(summary["examples_per_suite"].values()), summary["seconds"], _children_cpu() - cpu,
             time.monotonic() - started, calls)


def _records(out: str) -> list[dict[str, Any]]:
    """Every record of every pytest session of a fuzz run (one file per worker process and run, or
    per round in older code): its tests' calls, and at the end of each its service's counts."""
    records: list[dict[str, Any]] = []
    for name in os.listdir(out):
        if name.endswith(".jsonl"):
            with open(os.path.join(out, name), encoding="utf-8") as f:
                records += map(json.loads, f)
    return records


def same_tests(before: _Runs, now: _Runs, floor: float) -> str:
    """(i): the tests both runs made examples of, in-test, at equal examples per test; and how many
    of them would need more than ``floor`` examples/s (hypothesis' own rate at one choice) for 5x."""
    common = sorted(set(before.per_test) & set(now.per_test))
    if not common:
        return "no test in common"

    def rate(runs: _Runs) -> float:  # examples/s with one example of each test: the harmonic mean
        return len(common) / sum(runs.per_test[t][1] / runs.per_test[t][0] for t in common)

    above = [t for t in common if 5 * before.per_test[t][0] / before.per_test[t][1] > floor]
    return (f"{len(common)} tests in both: before {rate(before):,.1f}, now {rate(now):,.1f} examples/s in-test "
            f"(x{rate(now) / rate(before):.2f}); 5x before is {5 * rate(before):,.0f}/s in-test; "
            f"{len(above)} of {len(common)} tests' 5x is above hypothesis' rate at one choice ({floor:,.0f}/s)")


def what_5x_needs(before: _Runs, now: _Runs, ceiling: float, calls: float, round_trip: float) -> str:
    """(j): the in-test rate 5x of ``before`` needs, at ``now``'s share of its run spent in tests, and
    what that leaves of an example for the harness's own work once hypothesis' engine at the
    suite's choices (``ceiling``) and the service's round trips are taken out, against what that
    work takes now."""
    examples = sum(e for e, _ in now.per_test.values())
    in_tests = sum(seconds for _, seconds in now.per_test.values())
    if not examples or not now.seconds:
        return "no examples recorded"
    share = in_tests / now.seconds
    needed = 5 * before.rate / share
    fixed = 1 / ceiling + calls * round_trip
    allowed, spent = 1 / needed - fixed, in_tests / examples - fixed
    left = (f"leaving {allowed * 1e3:.2f} ms for the harness's own work (now {spent * 1e3:.2f} ms: it would have to "
            f"shrink x{spent / allowed:.2f})" if allowed > 0 else "leaving nothing for the harness's own work")
    return (f"5x needs {needed:,.0f}/s in-test ({100 * share:.0f} % of the run is in tests): {1e3 / needed:.2f} ms an "
            f"example, of which hypothesis' engine and the round trips take {fixed * 1e3:.2f} ms, {left}")


def baseline_env(revision: str, where: str) -> dict[str, str]:
    """An environment whose ``harness`` is REV's: its tree installed (no dependencies) under ``where``."""
    tree = os.path.join(where, "tree")
    os.makedirs(tree)
    archive = subprocess.run(["git", "-C", ROOT, "archive", revision], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    site = os.path.join(where, "site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", site, tree],
                   check=True, stdout=subprocess.DEVNULL)
    return {**os.environ, "PYTHONPATH": site + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _in_process_run(suite: str, examples: int, out: str) -> list[str]:
    """pytest's arguments for an in-process run of a suite's generative tests, as a fuzz round runs
    them (nightly profile, no shrinking), with its example database under ``out``."""
    return ["-q", "-p", "no:cacheprovider", "--pyargs", f"harness.suites.{suite}", "--driver=reference",
            "--harness-profile=nightly", f"--harness-examples={examples}", "--harness-no-shrink",
            "--harness-generative-only", f"--harness-db={out}/db", "-p", "no:warnings"]


def profile_suite(suite: str, examples: int) -> tuple[dict[str, float], int, int, float]:
    """The time split of one in-process run, its generated examples, its service calls and the
    choices each test case made on average."""
    import pytest
    from hypothesis.internal.conjecture.data import ConjectureData

    from harness.service import client

    calls = {"n": 0}
    original = client.Connection._send  # every call is sent here, whether made at once or begun early
    cases = {"n": 0, "choices": 0}
    original_freeze = ConjectureData.freeze  # every test case the engine ran ends here, once

    def counted(self, *args, **kwargs):
        calls["n"] += 1
        return original(self, *args, **kwargs)

    def frozen(self):
        if not self.frozen:
            cases["n"] += 1
            cases["choices"] += len(self.nodes)
        return original_freeze(self)

    with tempfile.TemporaryDirectory() as out:
        record = os.path.join(out, "record.jsonl")
        profiler = cProfile.Profile()
        client.Connection._send = counted  # type: ignore[method-assign]
        ConjectureData.freeze = frozen  # type: ignore[method-assign]
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # pytest's own report is not a figure
                profiler.runcall(pytest.main, [*_in_process_run(suite, examples, out), f"--harness-record={record}"])
        finally:
            client.Connection._send = original  # type: ignore[method-assign]
            ConjectureData.freeze = original_freeze  # type: ignore[method-assign]
        with open(record, encoding="utf-8") as f:
            generated = sum(r.get("examples") or 0 for r in map(json.loads, f) if "id" in r)
    return time_split(pstats.Stats(profiler)), generated, calls["n"], cases["choices"] / max(cases["n"], 1)


class _EngineAgainstFuzzTarget:
    """A pytest plugin for (g): each @given test's examples under the engine, then as many test
    cases through ``fuzz_one_input``, each side counted and timed."""

    def __init__(self, examples: int) -> None:
        self.examples = examples
        self.engine = [0, 0.0]  # test cases run, seconds
        self.no_engine = [0, 0.0]
        self._buffers = random.Random(0)

    def pytest_runtest_call(self, item) -> None:
        function: Any = getattr(item, "obj", None)
        if not getattr(function, "is_hypothesis_test", False):
            return
        handle, inner = function.hypothesis, function.hypothesis.inner_test
        # both sides count the calls of the inner test (the recorder's own count is not on here)
        handle.inner_test = self._counting(inner, self.engine, {})
        started = time.perf_counter()
        try:
            item.runtest()
        finally:
            handle.inner_test = inner
        self.engine[1] += time.perf_counter() - started
        target = self._fuzz_target(function, {name: item.funcargs[name] for name in inspect.signature(function).parameters})
        started = time.perf_counter()
        for _ in range(self.examples):
            target(self._buffers.randbytes(8192))
        self.no_engine[1] += time.perf_counter() - started
        item.runtest = lambda: None  # pytest's own call of the test follows this hook: the examples above ran

    @staticmethod
    def _counting(inner, into: list, fixtures: dict):
        @functools.wraps(inner)
        def counted(*args, **kwargs):
            into[0] += 1
            return inner(*args, **fixtures, **kwargs)

        return counted

    def _fuzz_target(self, function, fixtures: dict):
        """``fuzz_one_input`` binds no pytest fixtures: the target is made from an inner test with
        the fixtures bound and an empty signature, then both are put back (hypothesis internals,
        as in (b): a benchmark with hypothesis pinned)."""
        handle, inner = function.hypothesis, function.hypothesis.inner_test
        signature = function.__dict__.get("__signature__")
        handle.inner_test = self._counting(inner, self.no_engine, fixtures)
        function.__signature__ = inspect.Signature([])
        try:
            return handle._get_fuzz_target()
        finally:
            handle.inner_test = inner
            if signature is None:
                del function.__signature__
            else:
                function.__signature__ = signature


def without_engine(suite: str, examples: int) -> tuple[float, float]:
    """(g): a suite's examples/s under hypothesis' engine and through ``fuzz_one_input``, in one process."""
    import pytest

    plugin = _EngineAgainstFuzzTarget(examples)
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
        pytest.main(_in_process_run(suite, examples, out), plugins=[plugin])
    return (plugin.engine[0] / max(plugin.engine[1], 1e-9), plugin.no_engine[0] / max(plugin.no_engine[1], 1e-9))


def hypothesis_ceiling(choices: float, seconds: float = 3.0) -> float:
    """Examples/s of a test whose examples only make ``choices`` (rounded) one-byte choices, under
    the nightly profile's engine settings: hypothesis' own cost per example at that size."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    from harness.strategies.values import integers

    byte, count, ran = integers(0, 255), max(round(choices), 1), [0]

    @st.composite
    def count_choices(draw) -> None:
        for _ in range(count):
            draw(byte)

    @settings(max_examples=500, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(count_choices())
    def only_choices(_: None) -> None:
        ran[0] += 1

    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        only_choices()
    return ran[0] / (time.perf_counter() - start)


def _ceiling_into(queue: Any, choices: float, seconds: float) -> None:
    queue.put(hypothesis_ceiling(choices, seconds))


def machine_scaling(seconds: float = 5.0, choices: float = 12) -> tuple[float, float]:
    """(k) What two processes at once get through on this machine, against one: hypothesis' own
    engine (`hypothesis_ceiling`, CPU-bound, no I/O and nothing shared) run in one process, then in
    two at the same time; returns (one's examples/s, the two's together).  Two fuzz workers cannot
    scale better than the machine does on the same kind of work."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    rates = []
    for processes in (1, 2):
        queue = context.Queue()
        started = [context.Process(target=_ceiling_into, args=(queue, choices, seconds)) for _ in range(processes)]
        for process in started:
            process.start()
        rates.append(sum(queue.get() for _ in started))
        for process in started:
            process.join()
    return rates[0], rates[1]


def service_round_trip(seconds: float = 2.0) -> float:
    from bench_service import median_call_seconds  # the trivial call's round trip, as bench_service measures it

    from harness.service import DriverService

    service = DriverService("reference")
    try:
        device = service.device
        for _ in range(2000):
            device.ping()  # warm up
        return median_call_seconds(device.ping, seconds)
    finally:
        service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="fuzzing time per suite and configuration")
    parser.add_argument("--baseline", default="", help="a git revision to measure side by side (e.g. the code before a change)")
    parser.add_argument("--suites", default=",".join(SUITES))
    parser.add_argument("--profile-examples", type=int, default=30, help="examples per test in the profiled runs")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per suite and configuration, interleaved (1 worker, 2 workers, 1 worker, ...); "
                             "rates are over all of them, so the machine's load moves them less")
    parser.add_argument("--no-engine-examples", type=int, default=200, metavar="N",
                        help="(g): examples per test on each side (0: skip (g))")
    parser.add_argument("--scope", choices=("suites", "whole", "both"), default="suites",
                        help="(a) each suite on its own, (f) the whole nightly run of all of them together, or both")
    fuzz_bugs.add_options(parser)
    results.add_option(parser)
    args = parser.parse_args()
    if args.bugs:
        fuzz_bugs.main(args)
        return
    figures: dict[str, Any] = {"seconds": args.seconds, "repeats": args.repeats, "baseline": args.baseline or None,
                               "suites": {}}
    suites = [s for s in args.suites.split(",") if s]
    each_suite = suites if args.scope != "whole" else []  # (a), (b) and (d) are per suite

    round_trip = service_round_trip()
    figures["service_round_trip_us"] = round(round_trip * 1e6, 1)
    print(f"(c) service round trip (trivial call): {round_trip * 1e6:.1f} us")
    scaling = [machine_scaling()]
    figures["machine_scaling_before"] = {"one_process": round(scaling[0][0]), "two_processes": round(scaling[0][1])}
    print(f"(k) the machine's own scaling (hypothesis' engine alone, 12 choices per example, in 1 process and in 2 at "
          f"once): {scaling[0][0]:,.0f} and {scaling[0][1]:,.0f} examples/s, x{scaling[0][1] / scaling[0][0]:.2f}", flush=True)

    if each_suite:
        print("(b) where the time goes (own time per part, in-process run, current code):")
    calls_per_example: dict[str, float] = {}
    choices_per_example: dict[str, float] = {}
    for suite in each_suite:
        split, generated, calls, choices_per_example[suite] = profile_suite(suite, args.profile_examples)
        total = sum(split.values())
        calls_per_example[suite] = calls / max(generated, 1)
        figures["suites"].setdefault(suite, {}).update({
            "time_split_percent": {part: round(100 * seconds / max(sum(split.values()), 1e-9), 1) for part, seconds in split.items()},
            "service_calls_per_example": round(calls_per_example[suite], 2),
            "choices_per_example": round(choices_per_example[suite], 1)})
        parts = ", ".join(f"{part} {100 * seconds / total:.0f}%" for part, seconds in sorted(split.items(), key=lambda kv: -kv[1]))
        print(f"    {suite:<17} {generated} examples, {calls_per_example[suite]:.1f} service calls and "
              f"{choices_per_example[suite]:.1f} choices each: {parts}")

    if each_suite:
        print("(d) hypothesis' own ceiling (a test that only makes as many one-byte choices per example):")
    engine_ceiling: dict[str, float] = {}
    for suite in each_suite:
        engine_ceiling[suite] = hypothesis_ceiling(choices_per_example[suite])
        figures["suites"][suite]["hypothesis_ceiling_examples_per_s"] = round(engine_ceiling[suite], 1)
        print(f"    {suite:<17} {round(choices_per_example[suite])} choices: {engine_ceiling[suite]:8.1f} examples/s", flush=True)

    if each_suite and args.no_engine_examples:
        print(f"(g) {args.no_engine_examples} examples per test under hypothesis' engine, then as many test cases through "
              f"fuzz_one_input (no engine), in-test examples/s:")
    for suite in each_suite if args.no_engine_examples else ():
        engine, no_engine = without_engine(suite, args.no_engine_examples)
        figures["suites"][suite]["in_test_examples_per_s"] = {"engine": round(engine, 1), "no_engine": round(no_engine, 1)}
        print(f"    {suite:<17} engine {engine:8.1f}, no engine {no_engine:8.1f} (x{no_engine / max(engine, 1e-9):.2f})", flush=True)

    configurations: list[tuple[str, dict[str, str]]] = [("current", dict(os.environ))]
    scratch = tempfile.TemporaryDirectory()
    if args.baseline:
        configurations.insert(0, (f"baseline {args.baseline}", baseline_env(args.baseline, scratch.name)))
    if each_suite:
        print(f"(a) harness fuzz --driver reference, {args.repeats} x {args.seconds:.0f} s per suite and configuration, "
              f"examples/s:")
    available = len(os.sched_getaffinity(0))
    floor = hypothesis_ceiling(1) if each_suite and args.baseline else 0.0
    for suite in each_suite:
        runs = interleaved_runs(suite, configurations, args.repeats, args.seconds)
        one, two = runs[("current", 1)], runs[("current", 2)]
        ceiling = 1 / (round_trip * max(calls_per_example[suite], 1e-9))
        each = "" if args.repeats == 1 else " [runs: " + ", ".join(
            f"x{b / max(a, 1e-9):.2f}" for a, b in zip(one.rates, two.rates)) + "]"
        line = (f"    {suite:<17} current: 1 worker {one.rate:8.1f}, 2 workers {two.rate:8.1f} "
                f"(x{two.rate / max(one.rate, 1e-9):.2f}{each}; (e) {one.cores:.2f} and {two.cores:.2f} of {available} "
                f"cores busy, {one.per_cpu_second:.0f} and {two.per_cpu_second:.0f} examples per CPU-second); "
                f"service ceiling {ceiling:,.0f}/s "
                f"(1 worker at {100 * one.rate / ceiling:.1f}% of it); hypothesis ceiling {engine_ceiling[suite]:,.0f}/s "
                f"(1 worker at {100 * one.rate / engine_ceiling[suite]:.0f}% of it)")
        line += f"; (h) driver calls/s: 1 worker {one.call_rate:,.0f}, 2 workers {two.call_rate:,.0f}"
        figures["suites"][suite]["current"] = _figures(one, two)
        figures["suites"][suite]["service_ceiling_examples_per_s"] = round(ceiling, 1)
        if args.baseline:
            base_one, base_two = runs[(configurations[0][0], 1)], runs[(configurations[0][0], 2)]
            base_1, base_2 = base_one.rate, base_two.rate
            line += (f"; baseline: 1 worker {base_1:8.1f}, 2 workers {base_2:8.1f}; "
                     f"current/baseline per worker x{one.rate / max(base_1, 1e-9):.2f}; "
                     f"5x baseline is {100 * 5 * base_1 / engine_ceiling[suite]:.0f}% of the hypothesis ceiling; "
                     f"(h) baseline driver calls/s: 1 worker {base_one.call_rate:,.0f}, 2 workers {base_two.call_rate:,.0f}; "
                     f"current/baseline per worker x{one.call_rate / max(base_one.call_rate, 1e-9):.2f}; "
                     f"(i) 1 worker, {same_tests(base_one, one, floor)}; (j) "
                     f"{what_5x_needs(base_one, one, engine_ceiling[suite], calls_per_example[suite], round_trip)}")
            figures["suites"][suite]["baseline"] = _figures(base_one, base_two)
            figures["suites"][suite]["current_over_baseline_one_worker"] = round(one.rate / max(base_1, 1e-9), 3)
        print(line, flush=True)
    scaling.append(machine_scaling())
    figures["machine_scaling_after"] = {"one_process": round(scaling[1][0]), "two_processes": round(scaling[1][1])}
    print(f"(k) again, after the runs: {scaling[1][0]:,.0f} and {scaling[1][1]:,.0f} examples/s, "
          f"x{scaling[1][1] / scaling[1][0]:.2f}; a 2-worker figure above is to be read against these two", flush=True)
    if args.scope != "suites":
        print(f"(f) the whole nightly run: harness fuzz --driver reference --suites {','.join(suites)}, "
              f"{args.repeats} x {args.seconds:.0f} s per configuration, examples/s:")
        runs = interleaved_runs(",".join(suites), configurations, args.repeats, args.seconds)
        for name, _ in configurations:
            one, two = runs[(name, 1)], runs[(name, 2)]
            figures.setdefault("whole_run", {})[name] = _figures(one, two)
            print(f"    {name:<17} 1 worker {one.rate:8.1f} {_each(one)}, 2 workers {two.rate:8.1f} {_each(two)} "
                  f"(x{two.rate / max(one.rate, 1e-9):.2f}; {one.cores:.2f} and {two.cores:.2f} cores busy); "
                  f"(h) driver calls/s {one.call_rate:,.0f} and {two.call_rate:,.0f}", flush=True)
        if args.baseline:
            base, now = runs[(configurations[0][0], 1)], runs[("current", 1)]
            print(f"    current/baseline per worker x{now.rate / max(base.rate, 1e-9):.2f} examples/s, "
                  f"x{now.call_rate / max(base.call_rate, 1e-9):.2f} driver calls/s", flush=True)
    scratch.cleanup()
    results.write("bench_fuzz", figures, args.results)


def _figures(one: _Runs, two: _Runs) -> dict[str, Any]:
    """One configuration's runs with 1 and 2 workers, as data."""
    return {f"{workers}_worker{'s' if workers > 1 else ''}": {
        "examples_per_s": round(runs.rate, 1), "each_run_examples_per_s": [round(rate, 1) for rate in runs.rates],
        "cores_busy": round(runs.cores, 2), "examples_per_cpu_second": round(runs.per_cpu_second, 1),
        "driver_calls_per_s": round(runs.call_rate, 1)} for workers, runs in ((1, one), (2, two))}


def interleaved_runs(suites: str, configurations: list[tuple[str, dict[str, str]]], repeats: int,
                     seconds: float) -> dict[tuple[str, int], _Runs]:
    """Each configuration's runs with 1 and 2 workers, ``repeats`` times, taking turns so that the
    machine's load moves them alike."""
    runs = {(name, workers): _Runs() for name, _ in configurations for workers in (1, 2)}
    for _ in range(repeats):
        for name, env in configurations:
            for workers in (1, 2):
                fuzz_run(suites, workers, seconds, env, runs[(name, workers)])
    return runs


def _each(runs: _Runs) -> str:
    return "(" + ", ".join(f"{rate:.1f}" for rate in runs.rates) + ")"


if __name__ == "__main__":
    main()
