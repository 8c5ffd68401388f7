"""Time to verdict for each kind of fault, against the reference's own run in the same session.

    python benchmarks/bench_faults.py [--profile ci|certify] [--only NAME ...]

Each drill driver of tests/reliability/drills.py runs the whole suite (``--pyargs harness.suites``)
in a pytest process of its own, as a vendor's run would; the table gives the wall time to the
verdict, the verdict, the service starts and calls, and the time as a ratio of the reference's
run.  The bounds (issue 16): a driver that crashes or hangs on every call gets its FAIL within
3 minutes in the ci profile and 10 in certify, on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling results module

import results  # noqa: E402
from harness.integration.own_config import own_pytest_options  # noqa: E402

DRILLS = Path(__file__).resolve().parents[1] / "tests" / "reliability" / "drills.py"
FAULTS = ["segfault_every_execute", "exit_every_execute", "hang_every_execute", "keyerror_every_execute",
          "forged_pass", "undecodable_reply", "junk_in_result", "returns_none", "closes_every_descriptor",
          "leaks_memory"]
BOUND_S = {"ci": 180, "certify": 600}


def run(driver: str, profile: str) -> dict:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="ci", choices=sorted(BOUND_S))
    parser.add_argument("--only", nargs="*", default=None)
    results.add_option(parser)
    options = parser.parse_args(argv)
    faults = options.only or FAULTS
    reference = run("reference", options.profile)
    print(f"reference ({options.profile}): {reference['seconds']:.0f} s, exit {reference['exit']}, "
          f"{reference['tests']} tests; bound for a crash or hang on every call: {BOUND_S[options.profile]} s\n")
    figures: dict = {"profile": options.profile, "bound_s": BOUND_S[options.profile],
                     "reference": {"seconds": round(reference["seconds"], 1), "exit": reference["exit"],
                                   "tests": reference["tests"]}, "faults": {}}
    print("| fault | verdict | time to verdict | vs reference | service starts | calls | failures (types) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for fault in faults:
        result = run(f"{DRILLS}:{fault}", options.profile)
        verdict = "FAIL" if result["exit"] == 1 else "PASS" if result["exit"] == 0 else f"exit {result['exit']}"
        print(f"| {fault} | {verdict} | {result['seconds']:.0f} s | {result['seconds'] / reference['seconds']:.2f}x | "
              f"{result['starts']} | {result['calls']} | {result['failed']} of {result['tests']} "
              f"({', '.join(result['types'])}) |", flush=True)
        figures["faults"][fault] = {"verdict": verdict, "seconds_to_verdict": round(result["seconds"], 1),
                                    "over_reference": round(result["seconds"] / reference["seconds"], 2),
                                    "service_starts": result["starts"], "calls": result["calls"],
                                    "failed_tests": result["failed"], "tests": result["tests"], "types": result["types"]}
    results.write("bench_faults", figures, options.results)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
