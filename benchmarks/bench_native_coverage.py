"""Edge coverage of native code (`harness.tooling.coverage`): what instrumenting costs, and what it sees.

    python benchmarks/bench_native_coverage.py [--repeat N] [--builds N] [--suites a,b] [--seconds S]

(a) the native sample's build, plain and instrumented, each in an empty cache (seconds: the
    fastest of ``--builds`` builds of each, made in turn, so that a busy machine counts less);
(b) median latency of one ADD of two 1 KiB float32 tensors through `execute`, in this process,
    plain build vs instrumented (the instrumentation's cost per call);
(c) the same ADD through the sample's driver service, coverage off and on (the map read at each
    reply and the edges sent with it counted too): the fastest of three medians each, in turn;
(d) the distinct native edges the replies carried over a short run of the suites (the ``ci``
    profile, fixed seed) on the instrumented sample in its service, and how long the run took.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling benchmark's helpers

import numpy as np  # noqa: E402
import results  # noqa: E402
from bench_reference import _timed, bench_small  # noqa: E402

from harness.plugins.native_sample import SOURCE  # noqa: E402
from harness.tooling.build import build_with_tvm_ffi  # noqa: E402
from harness.tooling.coverage import COVERAGE_ENVIRONMENT  # noqa: E402

_COUNTING_PLUGIN = textwrap.dedent('''
    """Writes how many distinct native edges the run's replies carried."""
    import json
    import os

    from harness.service.coverage import NATIVE_BASE, RECEIVED

    _EDGES = set()


    def pytest_runtest_logfinish(nodeid, location):
        _EDGES.update(RECEIVED.take())


    def pytest_sessionfinish(session, exitstatus):
        _EDGES.update(RECEIVED.take())
        native = sum(1 for edge in _EDGES if edge >= NATIVE_BASE)
        with open(os.environ["EDGE_COUNT_FILE"], "w") as out:
            json.dump({"native": native, "refused": RECEIVED.replies_refused}, out)
''')


def _build_seconds(coverage: bool) -> float:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["DRIVER_HARNESS_CACHE"] = cache
        started = time.perf_counter()
        build_with_tvm_ffi("native_sample", [str(SOURCE)], (), coverage=coverage)
        return time.perf_counter() - started


def _library(coverage: bool) -> str:
    os.environ.pop("DRIVER_HARNESS_CACHE", None)
    return build_with_tvm_ffi("native_sample", [str(SOURCE)], (), coverage=coverage)


def _service_call(coverage: bool, repeat: int) -> float:
    """Median seconds of one small ADD through a native-sample service started with coverage
    ``coverage``."""
    import statistics

    from harness.judging.builders import binary_model, pack_request
    from harness.service import DriverService
    from harness.service.coverage import RECEIVED

    os.environ[COVERAGE_ENVIRONMENT] = "1" if coverage else "0"
    try:
        service = DriverService("native-sample", timeout=30)
    finally:
        del os.environ[COVERAGE_ENVIRONMENT]
    try:
        model = binary_model(dims=(256,))
        prepared = service.device.prepare_model(model)
        request, _, _ = pack_request(model, [np.ones(256, np.float32)] * 2)
        prepared.execute(request)
        return statistics.median(_timed(lambda: prepared.execute(request), repeat))
    finally:
        service.close()
        RECEIVED.take()


def _short_run(suites: list[str], seconds: float) -> dict:
    import json

    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "edge_count.py").write_text(_COUNTING_PLUGIN)
        count = Path(scratch, "count.json")
        environment = {**os.environ, COVERAGE_ENVIRONMENT: "1", "EDGE_COUNT_FILE": str(count),
                       "PYTHONPATH": os.pathsep.join([scratch, os.environ.get("PYTHONPATH", "")])}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "edge_count", "--pyargs",
                   *(f"harness.suites.{suite}" for suite in suites), "--driver=native-sample",
                   "--harness-profile=ci", "--harness-seed=0"]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=scratch, env=environment, capture_output=True, text=True, timeout=seconds)
        elapsed = time.perf_counter() - started
        counted = json.loads(count.read_text())
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        return {"native_edges": counted["native"], "replies_refused": counted["refused"], "seconds": round(elapsed, 1),
                "suites": suites, "pytest_summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--builds", type=int, default=2)
    parser.add_argument("--suites", default="memory_pools,requests")
    parser.add_argument("--seconds", type=float, default=600.0, help="the short run's limit")
    results.add_option(parser)
    args = parser.parse_args()
    builds: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.builds):
        for coverage in (False, True):
            builds[coverage].append(_build_seconds(coverage))
    plain_build, instrumented_build = min(builds[False]), min(builds[True])
    print(f"(a) build of the native sample in an empty cache: plain {plain_build:.1f} s, "
          f"instrumented {instrumented_build:.1f} s")
    from harness.drivers.native import NativeDevice

    plain, instrumented = NativeDevice(_library(False)), NativeDevice(_library(True))
    plain_call = bench_small(args.repeat * 20, plain)
    instrumented_call = bench_small(args.repeat * 20, instrumented)
    print(f"(b) small ADD execute: plain {plain_call * 1e6:.1f} us, instrumented {instrumented_call * 1e6:.1f} us "
          f"(ratio {instrumented_call / plain_call:.3f})")
    served: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(3):
        for coverage in (False, True):
            served[coverage].append(_service_call(coverage, args.repeat * 40))
    plain_served, instrumented_served = min(served[False]), min(served[True])
    print(f"(c) small ADD through the service: coverage off {plain_served * 1e6:.1f} us, on "
          f"{instrumented_served * 1e6:.1f} us (ratio {instrumented_served / plain_served:.3f})")
    run = _short_run(args.suites.split(","), args.seconds)
    print(f"(d) {run['native_edges']} distinct native edges over the ci profile of {', '.join(run['suites'])} "
          f"in {run['seconds']} s ({run['pytest_summary']})")
    results.write("bench_native_coverage", {
        "build_seconds": {"plain": round(plain_build, 2), "instrumented": round(instrumented_build, 2)},
        "small_add_execute_median_us": {"plain": round(plain_call * 1e6, 1),
                                        "instrumented": round(instrumented_call * 1e6, 1)},
        "small_add_instrumented_over_plain": round(instrumented_call / plain_call, 3),
        "small_add_through_service_median_us": {"coverage_off": round(plain_served * 1e6, 1),
                                                "coverage_on": round(instrumented_served * 1e6, 1)},
        "small_add_through_service_on_over_off": round(instrumented_served / plain_served, 3),
        "short_run": run, "repeat": args.repeat, "builds": args.builds}, args.results)


if __name__ == "__main__":
    main()
