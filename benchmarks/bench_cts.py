"""What a golden corpus costs: ``harness cts`` over a whole CTS spec directory.

    python benchmarks/bench_cts.py --specs PATH [--drivers reference,onnxruntime]

Runs ``harness cts --driver D --specs PATH`` as a vendor would, once per driver, each in a fresh
temporary directory, and records for each: the wall time to the verdict, the CPU time it took
(the command and every process it waited for), the verdict, and the corpus counts from the
certificate (files, examples, examples declared by the driver, examples the harness could not
read, (operation, type) checks passed and run, examples the driver reported unsupported).  The
machine's load average before and after each run is recorded beside it: on a machine shared
with other work the wall time is not the harness's alone.  The figures are printed and written
to benchmarks/results/bench_cts.json.

The corpus is not part of the project: Android's is in AOSP's NeuralNetworks module
(``runtime/test/specs``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling results module

import results  # noqa: E402


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cts_run(driver: str, specs: str) -> dict:
    """One ``harness cts`` run of ``driver`` over ``specs``, and what its certificate says."""
    with tempfile.TemporaryDirectory(prefix="bench-cts-") as where:
        out = Path(where) / "cts"
        load_before = os.getloadavg()
        cpu_before = _children_cpu_s()
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "harness.commands.cli", "cts", f"--driver={driver}", f"--specs={specs}",
                               f"--out={out}"], cwd=where, capture_output=True, text=True)
        wall = time.perf_counter() - started
        cpu = _children_cpu_s() - cpu_before
        load_after = os.getloadavg()
        certificate = out / "certificate.json"
        document = json.loads(certificate.read_text()) if certificate.exists() else {}
    corpus = document.get("golden", {}).get("corpus", {})
    cells = [cell for types in document.get("golden", {}).get("coverage", {}).values() for cell in types.values()]
    return {
        "driver": driver, "exit_code": done.returncode, "verdict": document.get("verdict", "none"),
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "files": corpus.get("files", 0), "examples": corpus.get("examples", 0),
        "declared": corpus.get("declared", 0), "not_declared": corpus.get("not_declared", 0),
        "unreadable": len(corpus.get("unexpressed", [])),
        "checks_passed": sum(cell.get("passed", 0) for cell in cells),
        "checks_run": sum(cell.get("run", 0) for cell in cells),
        "reported_unsupported": sum(cell.get("unsupported", 0) for cell in cells),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "last_line": (done.stdout.strip().splitlines() or [""])[-1][:300],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", required=True, help="a directory of CTS *.mod.py spec files")
    parser.add_argument("--drivers", default="reference", help="comma-separated drivers (default: reference)")
    results.add_option(parser)
    arguments = parser.parse_args(argv)
    if not os.path.isdir(arguments.specs):
        print(f"bench_cts: --specs={arguments.specs}: not a directory", file=sys.stderr)
        return 2
    runs = []
    print("| driver | verdict | wall | CPU | files | examples | declared | unreadable | checks passed / run | load before/after |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for driver in [name for name in arguments.drivers.split(",") if name]:
        run = cts_run(driver, arguments.specs)
        runs.append(run)
        print(f"| {driver} | {run['verdict']} | {run['wall_s']:.0f} s | {run['cpu_s']:.0f} s | {run['files']} | "
              f"{run['examples']} | {run['declared']} | {run['unreadable']} | {run['checks_passed']} / {run['checks_run']} | "
              f"{run['load_average_before'][0]:.1f} / {run['load_average_after'][0]:.1f} |", flush=True)
    results.write("bench_cts", {"specs": os.path.abspath(arguments.specs), "runs": runs}, arguments.results)
    return 0 if all(run["exit_code"] in (0, 1) for run in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
