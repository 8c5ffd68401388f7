"""Time to verdict of ``harness certify`` for a driver that crashes or hangs on every call (issue 84).

    python benchmarks/bench_faults.py [--no-reference] [--json FILE]
    python benchmarks/bench_faults.py --drills [--profile ci|certify] [--only NAME ...]

The first form runs ``harness certify`` as a vendor would (every suite, the certify profile, the
default call deadline) against the seeded bugs ``mutant-segfault-every-execute`` and
``mutant-hang-every-execute`` (plugins/mutants/robustness.py), and against the reference for
comparison, each in a fresh temporary directory.  For each: the wall time to the verdict, the CPU
time it took (the command and every process it waited for), the verdict and the requirements'
statuses (every one classified: none not-run), the service's starts and calls, and what the run
left behind (temporary files, processes).  The bound: a FAIL within 120 s on 2 cores.  The machine's
load average before and after each run is recorded beside it: on a machine shared with other work
the wall time is not the harness's alone.  The figures are printed and written as JSON to
benchmarks/results/bench_faults.json (or --json FILE).

The second form is the older table: each drill driver of tests/reliability/drills.py runs the whole
suite (``--pyargs harness.suites``) in a pytest process of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling results module

HERE = Path(__file__).resolve().parent
DRILLS = HERE.parent / "tests" / "reliability" / "drills.py"
sys.path.insert(0, str(DRILLS.parent))  # the drills' own helpers: how survivors are found

import results  # noqa: E402
from drills import processes_with  # noqa: E402
from harness.integration.own_config import own_pytest_options  # noqa: E402

FAULTS = ["segfault_every_execute", "exit_every_execute", "hang_every_execute", "keyerror_every_execute",
          "forged_pass", "undecodable_reply", "junk_in_result", "returns_none", "closes_every_descriptor",
          "leaks_memory"]
BOUND_S = {"ci": 180, "certify": 600}
#: issue 84: a driver that crashes or hangs on every call gets its FAIL, every requirement classified, within this
CERTIFY_BOUND_S = 120.0
CERTIFY_DRIVERS = {"crash on every call": "mutant-segfault-every-execute",
                   "hang on every call": "mutant-hang-every-execute"}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def certify_run(driver: str) -> dict:
    """One ``harness certify --driver DRIVER`` in a fresh directory and TMPDIR; its figures."""
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as directory:
        temporary, out = Path(directory) / "tmp", Path(directory) / "out"
        temporary.mkdir()
        marker = f"bench-faults-{secrets.token_hex(6)}"
        env = {**os.environ, "TMPDIR": str(temporary), "BENCH_FAULTS_MARKER": marker}
        load_before = os.getloadavg()
        cpu, started = _children_cpu_s(), time.monotonic()
        done = subprocess.run([sys.executable, "-m", "harness.commands.cli", "certify", f"--driver={driver}", f"--out={out}"],
                              env=env, cwd=directory, capture_output=True, text=True)
        seconds, cpu = time.monotonic() - started, _children_cpu_s() - cpu
        load_after = os.getloadavg()
        left_processes = processes_with(marker)
        left_files = sorted(str(p.relative_to(temporary)) for p in temporary.rglob("*"))
        certificate_path = out / "certificate.json"
        document = json.loads(certificate_path.read_text()) if certificate_path.exists() else {}
    run = document.get("run", {})
    service = run.get("service") or {}
    counts = document.get("counts", {})
    result = {
        "driver": driver, "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "exit": done.returncode,
        "verdict": document.get("verdict", "none"), "counts": counts, "not_run": document.get("not_run", []),
        "every_requirement_classified": bool(document) and counts.get("not-run", 1) == 0,
        "tests": run.get("tests"), "failed": run.get("failed"), "service_starts": service.get("starts"),
        "service_calls": service.get("calls"), "breaker_opened": service.get("breaker_opened", []),
        "left_behind": {"temporary_files": left_files, "processes": left_processes},
        "load_average_before": [round(x, 2) for x in load_before], "load_average_after": [round(x, 2) for x in load_after],
    }
    if not document:
        result["output"] = (done.stdout + done.stderr)[-2000:]
    return result


def certify_bench(with_reference: bool, directory: str) -> int:
    runs: dict[str, dict] = {}
    drivers = dict(CERTIFY_DRIVERS)
    if with_reference:
        drivers["reference (for comparison)"] = "reference"
    print(f"harness certify, every suite, default options; bound for a crash or hang on every call: "
          f"FAIL within {CERTIFY_BOUND_S:g} s, every requirement classified\n")
    print("| driver | verdict | time to verdict | CPU | statuses | service starts | calls | breaker opened | left behind | load before/after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, driver in drivers.items():
        result = runs[name] = certify_run(driver)
        statuses = ", ".join(f"{n} {status}" for status, n in result["counts"].items() if n)
        left = result["left_behind"]
        left_text = "nothing" if not left["temporary_files"] and not left["processes"] else \
            f"{len(left['temporary_files'])} files, {len(left['processes'])} processes"
        print(f"| {driver} | {result['verdict']} | {result['seconds']:.1f} s | {result['cpu_seconds']:.1f} s | {statuses} | "
              f"{result['service_starts']} | {result['service_calls']} | {', '.join(result['breaker_opened']) or '-'} | "
              f"{left_text} | {result['load_average_before'][0]:.1f} / {result['load_average_after'][0]:.1f} |", flush=True)
    faulty = [runs[name] for name in CERTIFY_DRIVERS]
    within = all(r["verdict"] == "FAIL" and r["every_requirement_classified"] and r["seconds"] <= CERTIFY_BOUND_S
                 for r in faulty)
    clean = all(not r["left_behind"]["temporary_files"] and not r["left_behind"]["processes"] for r in runs.values())
    figures = {"benchmark": "bench_faults", "bound_s": CERTIFY_BOUND_S, "within_bound": within, "nothing_left_behind": clean,
               "cpus": os.cpu_count(), "machine": platform.platform(), "python": platform.python_version(),
               "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": runs}
    path = results.write("bench_faults", figures, directory)
    print(f"\nwithin the bound: {'yes' if within else 'NO'}; nothing left behind: {'yes' if clean else 'NO'}; figures in {path}")
    return 0 if within and clean else 1


def drill_run(driver: str, profile: str) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        record = Path(directory) / "record.jsonl"
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", *own_pytest_options(), "-q", "--pyargs", "harness.suites",
                               f"--driver={driver}", f"--harness-profile={profile}", f"--harness-record={record}",
                               "--driver-memory-limit=1536"],
                              capture_output=True, text=True, cwd=directory)
        elapsed = time.monotonic() - started
        lines = [json.loads(line) for line in record.read_text().splitlines() if line.strip()] if record.exists() else []
    tests = [r for r in lines if "id" in r]
    service = next((r["service"] for r in lines if "service" in r), {}) or {}
    failed = [r for r in tests if r["outcome"] == "failed"]
    return {"seconds": elapsed, "exit": done.returncode, "tests": len(tests), "failed": len(failed),
            "types": sorted({r["error_type"] for r in failed}), "starts": service.get("starts"),
            "calls": service.get("calls"), "breaker": service.get("breaker_opened", [])}


def drills_bench(profile: str, faults: list[str]) -> int:
    reference = drill_run("reference", profile)
    print(f"reference ({profile}): {reference['seconds']:.0f} s, exit {reference['exit']}, "
          f"{reference['tests']} tests; bound for a crash or hang on every call: {BOUND_S[profile]} s\n")
    print("| fault | verdict | time to verdict | vs reference | service starts | calls | failures (types) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for fault in faults:
        result = drill_run(f"{DRILLS}:{fault}", profile)
        verdict = "FAIL" if result["exit"] == 1 else "PASS" if result["exit"] == 0 else f"exit {result['exit']}"
        print(f"| {fault} | {verdict} | {result['seconds']:.0f} s | {result['seconds'] / reference['seconds']:.2f}x | "
              f"{result['starts']} | {result['calls']} | {result['failed']} of {result['tests']} "
              f"({', '.join(result['types'])}) |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drills", action="store_true", help="the drills' table (pytest runs of every suite) instead")
    parser.add_argument("--profile", default="ci", choices=sorted(BOUND_S), help="--drills: the profile")
    parser.add_argument("--only", nargs="*", default=None, help="--drills: these drills only")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference's certify run")
    results.add_option(parser)
    options = parser.parse_args(argv)
    if options.drills:
        return drills_bench(options.profile, options.only or FAULTS)
    return certify_bench(not options.no_reference, options.results)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
