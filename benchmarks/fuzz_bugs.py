"""``bench_fuzz.py --bugs``: fuzzing measured in deep seeded bugs found, blind beside guided.

(a) each deep bug's own driver (``deep-<name>``) through every suite in the ``ci`` profile, as
    ``harness score`` runs a driver (fixed seed, no shrinking): a bug ``ci`` catches is not deep,
    and is reported so;
(b) ``harness fuzz --driver deep-bugs`` (every Python-level deep bug at once), and ``--driver
    deep-native-bugs`` (the native sample with every native one), each for the same budget blind
    (``--blind``) and guided (the default), one after the other;
(c) each distinct failure of each run attributed to the bug(s) whose single-bug driver its
    reproducer fails on (the script run with its ``DRIVER`` replaced, in-process, as ``harness
    score`` runs a catch's script); a failure no single bug's driver fails is counted apart;
(d) per bug, the time to its first attributed failure in each run, side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import results

COMPOSED = "deep-bugs"
#: What a reproducer script's driver line looks like (`harness.report.reproducer`).
_DRIVER_LINE = re.compile(r"^DRIVER = .*$", re.MULTILINE)
_ISOLATION_LINE = re.compile(r"^ISOLATION = .*$", re.MULTILINE)
#: A script that runs its test again has its example options on one line: a list's repr.
_EXAMPLES_LINE = re.compile(r"^EXAMPLES = \[(.*)\]$", re.MULTILINE)


@dataclass
class Run:
    """One fuzzing configuration's run: when each bug was first found, and what was not attributed."""

    mode: str
    seconds: float = 0.0
    examples: int = 0
    failures: int = 0
    found_s: dict[str, float] = field(default_factory=dict)
    unattributed: list[dict[str, Any]] = field(default_factory=list)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bugs", action="store_true",
                        help="measure fuzzing in deep seeded bugs found, blind and guided (the other figures are not run)")
    parser.add_argument("--minutes", type=float, default=10.0, help="--bugs: the fuzzing budget of each configuration")
    parser.add_argument("--workers", type=int, default=2, help="--bugs: fuzzing processes of each configuration")
    parser.add_argument("--skip-ci-check", action="store_true", help="--bugs: do not check that ci misses each bug")
    parser.add_argument("--standalone", action="store_true",
                        help="--bugs: also fuzz each bug that is a driver of its own (one run per configuration each)")


def _deep_bugs() -> dict[str, Any]:
    from harness.plugins.deep_bugs._registry import DEEP_BUGS

    return dict(DEEP_BUGS)


def ci_catches(driver: str) -> dict[str, str] | None:
    """What the ``ci`` profile's run of every suite on ``driver`` failed first (test and
    requirement), or None when it failed nothing."""
    from harness.commands.score import _driver_independent_suites, run_suites
    from harness.report.attribution import failed_requirements

    extra = tuple(f"--ignore={path}" for path in _driver_independent_suites())
    for record in run_suites(driver, profile="ci", extra=extra):
        if record["outcome"] == "failed":
            return {"test": record["id"], "requirements": ", ".join(failed_requirements(record)) or "none named",
                    "message": record["message"][:200]}
    return None


def blind_flag_exists() -> bool:
    """Whether this checkout's ``harness fuzz`` takes ``--blind``."""
    shown = subprocess.run([sys.executable, "-m", "harness.commands.cli", "fuzz", "--help"], capture_output=True,
                           text=True, timeout=120)
    return "--blind" in shown.stdout


def fuzz(driver: str, minutes: float, workers: int, out: str, blind: bool) -> dict[str, Any]:
    """One ``harness fuzz`` run of a driver holding many bugs; its summary."""
    command = [sys.executable, "-m", "harness.commands.cli", "fuzz", "--driver", driver, "--minutes", str(minutes),
               "--workers", str(workers), "--db", os.path.join(out, "db"), "--out", out, *(["--blind"] if blind else [])]
    subprocess.run(command, cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=minutes * 60 + 600)
    with open(os.path.join(out, "fuzz-summary.json"), encoding="utf-8") as f:
        return json.load(f)


def fails_on(script: str, driver: str, scratch: str) -> bool:
    """Whether a reproducer script still fails with ``driver`` as its driver (run in-process: the
    deep-bug drivers are the harness's own)."""
    from harness.commands.score import reproducer_outcome

    with open(script, encoding="utf-8") as f:
        text = f.read()
    found_on = _DRIVER_LINE.search(text)
    if found_on is not None:  # a test run again replays the examples the composed driver's run stored
        composed = found_on.group(0).split("=", 1)[1].strip()
        text = _EXAMPLES_LINE.sub(
            lambda line: f"EXAMPLES = [{line.group(1)}{', ' if line.group(1).strip() else ''}"
                         f"'--harness-examples-of=' + {composed}]", text, count=1)
    text = _DRIVER_LINE.sub(f"DRIVER = {driver!r}", text, count=1)
    text = _ISOLATION_LINE.sub("ISOLATION = 'inline'", text, count=1)
    path = os.path.join(scratch, f"{driver}-{os.path.basename(script)}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return reproducer_outcome(os.path.basename(path), scratch) == "fails"


def attribute(summary: dict[str, Any], bugs: Iterable[str], mode: str, jobs: int) -> Run:
    """Each failure of a run's summary attributed to the bugs whose driver its reproducer fails on."""
    run = Run(mode, summary.get("seconds", 0.0), sum(summary.get("examples_per_suite", {}).values()),
              len(summary.get("failures", [])))
    names = list(bugs)
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(max(jobs, 1)) as pool:
        for failure in summary.get("failures", []):
            found = failure.get("found_at_s")
            script = failure.get("reproducer") or ""
            if not script or not os.path.exists(script):
                run.unattributed.append({"test": failure["test"], "why": "no reproducer", "found_at_s": found})
                continue
            culprits = [name for name, fails in zip(names, pool.map(lambda n: fails_on(script, f"deep-{n}", scratch), names))
                        if fails]
            if not culprits:
                run.unattributed.append({"test": failure["test"], "why": "no single bug's driver fails its reproducer",
                                         "requirements": failure.get("requirements"), "found_at_s": found})
            for name in culprits:
                if found is not None and found < run.found_s.get(name, float("inf")):
                    run.found_s[name] = found
    return run


def _add(run: Run, more: Run) -> None:
    """What one more driver's run of the same configuration found, added to ``run``."""
    run.seconds += more.seconds
    run.examples += more.examples
    run.failures += more.failures
    run.found_s.update(more.found_s)
    run.unattributed += more.unattributed


def _cell(seconds: float | None) -> str:
    return f"{'-':>7}" if seconds is None else f"{seconds:7.1f}"


def main(args: argparse.Namespace) -> None:
    import harness

    bugs = _deep_bugs()
    composable = sorted(name for name, bug in bugs.items() if bug.fault is not None)
    figures: dict[str, Any] = {"minutes_per_configuration": args.minutes, "workers": args.workers,
                               "driver": COMPOSED, "bugs": {}, "versions": _versions(harness)}
    if not args.skip_ci_check:
        print(f"(a) each deep bug's driver through every suite, ci profile ({len(bugs)} bugs, one at a time):", flush=True)
        for name in sorted(bugs):
            started = time.monotonic()
            caught = ci_catches(f"deep-{name}")
            figures["bugs"].setdefault(name, {})["ci_caught"] = caught
            verdict = f"CAUGHT by {caught['test']} ({caught['requirements']}): not deep" if caught else "missed"
            print(f"    {name:<42} {verdict} [{time.monotonic() - started:.0f} s]", flush=True)
    blind = blind_flag_exists()
    figures["blind_flag"] = blind
    if not blind:
        print("(b) harness fuzz has no --blind here: both configurations run the current fuzz loop", flush=True)
    # one driver per kind holds its bugs at once: the Python-level ones, and the native sample's
    from harness.plugins.deep_bugs._registry import Reach
    from harness.plugins.deep_bugs.native import COMBINED as NATIVE_COMBINED

    native = sorted(name for name, bug in bugs.items() if bug.fault is None and bug.reach == Reach.NATIVE)
    targets = {COMPOSED: composable, NATIVE_COMBINED: native}
    # the rest are drivers of their own (bugs in the reference's own native targets, a token table):
    # fuzzed one by one with --standalone, else left out of the figures, and said so
    alone = sorted(name for name, bug in bugs.items() if bug.fault is None and bug.reach != Reach.NATIVE)
    if args.standalone:
        targets.update({f"deep-{name}": [name] for name in alone})
    else:
        figures["not_fuzzed"] = alone
        print(f"(b) not fuzzed here, each a driver of its own (--standalone fuzzes them): {', '.join(alone)}", flush=True)
    figures["drivers"] = {driver: names for driver, names in targets.items()}
    runs = [Run("blind"), Run("guided")]
    for driver, names in targets.items():
        for run in runs:
            with tempfile.TemporaryDirectory() as out:
                print(f"(b) harness fuzz --driver {driver} --minutes {args.minutes:g} --workers {args.workers}"
                      f"{' --blind' if run.mode == 'blind' and blind else ''} ({run.mode})", flush=True)
                summary = fuzz(driver, args.minutes, args.workers, out, blind=run.mode == "blind" and blind)
                print(f"(c) attributing its {len(summary.get('failures', []))} distinct failures", flush=True)
                _add(run, attribute(summary, names, run.mode, args.workers))
    composable = [name for names in targets.values() for name in names]
    blind_run, guided_run = runs
    print(f"(d) time to find each bug (s), {args.minutes:g} min and {args.workers} workers a configuration:")
    print(f"    {'bug':<42} {'reach':<26} {'blind':>7} {'guided':>7}")
    for name in composable:
        bug = bugs[name]
        entry = figures["bugs"].setdefault(name, {})
        entry.update({"requirement": bug.requirement, "reach": str(bug.reach),
                      "blind_s": blind_run.found_s.get(name), "guided_s": guided_run.found_s.get(name)})
        print(f"    {name:<42} {str(bug.reach):<26} {_cell(entry['blind_s'])} {_cell(entry['guided_s'])}")
    for run in runs:
        figures[run.mode] = {"seconds": run.seconds, "examples": run.examples, "distinct_failures": run.failures,
                             "bugs_found": len(run.found_s), "unattributed": run.unattributed}
        if run.unattributed:
            print(f"    {run.mode}: {len(run.unattributed)} failures attributed to no single bug: "
                  + "; ".join(f"{u['test']} ({u['why']})" for u in run.unattributed[:5]))
    found = len(guided_run.found_s)
    both = sorted(set(blind_run.found_s) & set(guided_run.found_s))
    ratio = (statistics.median(guided_run.found_s[n] for n in both) /
             max(statistics.median(blind_run.found_s[n] for n in both), 1e-9)) if both else None
    figures["guided_found"] = found
    figures["blind_found"] = len(blind_run.found_s)
    figures["found_by_both"] = both
    figures["median_time_ratio_guided_over_blind"] = None if ratio is None else round(ratio, 3)
    print(f"guided found {found}/{len(composable)} ({100 * found / max(len(composable), 1):.0f}%), blind "
          f"{len(blind_run.found_s)}/{len(composable)}; median time to find, guided/blind, on the {len(both)} bugs both "
          f"found: {'n/a' if ratio is None else f'{ratio:.2f}'}")
    results.write("bench_fuzz_bugs", figures, args.results, script="bench_fuzz")


def _versions(harness: Any) -> dict[str, str]:
    import hypothesis
    import numpy

    return {"harness": getattr(harness, "__version__", "unknown"), "hypothesis": hypothesis.__version__,
            "numpy": numpy.__version__, "python": sys.version.split()[0]}
