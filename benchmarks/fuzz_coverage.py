"""``bench_fuzz.py --coverage``: the driver code a guided fuzz run reaches, over its time.

For each driver named (default: the reference, the onnxruntime driver and the native sample),
one ``harness fuzz`` run (guided) of the same budget and workers, one after the other; from its
summary's timeline, each worker's edges (the driver's own lines and native edges its service
reported: `harness.service.coverage`), corpus and inputs at every tenth of the run, and at its end
the findings it made.  A correct driver should end with no findings; its edges still rising at the
end say a longer run would reach more.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import results

DRIVERS = ("reference", "onnxruntime", "native-sample")


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--coverage", action="store_true",
                        help="measure the driver coverage guided fuzzing reaches over time (the other figures are not run)")
    parser.add_argument("--coverage-drivers", default=",".join(DRIVERS), metavar="NAME,...",
                        help="--coverage: the drivers to fuzz, one run each (default: %(default)s)")


def _samples(timeline: list[dict[str, Any]], parts: int = 10) -> list[dict[str, Any]]:
    """The timeline at every ``1/parts`` of the run (the sample nearest each point), and its end."""
    if not timeline:
        return []
    end = timeline[-1]["t"] or 1.0
    chosen = []
    for k in range(1, parts + 1):
        at = end * k / parts
        sample = min(timeline, key=lambda s: abs(s["t"] - at))
        chosen.append({"t_s": sample["t"], "workers": sample.get("coverage", {})})
    return chosen


def run(driver: str, minutes: float, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "harness.commands.cli", "fuzz", "--driver", driver, "--minutes", str(minutes),
                   "--workers", str(workers), "--db", os.path.join(out, "db"), "--out", out]
        done = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=minutes * 60 + 600)
        path = os.path.join(out, "fuzz-summary.json")
        if not os.path.exists(path):
            return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no summary written"]}
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
    # each worker's last coverage figures; where its time went test by test stays in the run's summary
    final = {worker: {key: value for key, value in record.items() if key != "tests"}
             for worker, record in summary.get("coverage", {}).items()}
    return {"exit_code": done.returncode, "seconds": summary["seconds"],
            "examples": sum(summary["examples_per_suite"].values()), "final": final,
            "over_time": _samples(summary.get("timeline", [])), "findings": len(summary.get("findings", [])),
            "finding_messages": [f["message"][:160] for f in summary.get("findings", [])][:10]}


def main(args: argparse.Namespace) -> None:
    drivers = [name for name in args.coverage_drivers.split(",") if name]
    figures: dict[str, Any] = {"minutes_per_driver": args.minutes, "workers": args.workers, "drivers": {}}
    for driver in drivers:
        print(f"harness fuzz --driver {driver} --minutes {args.minutes:g} --workers {args.workers} (guided)", flush=True)
        figures["drivers"][driver] = measured = run(driver, args.minutes, args.workers)
        if "error" in measured:
            print(f"    {driver}: {measured['error']}")
            continue
        for sample in measured["over_time"]:
            edges = " + ".join(f"{c['edges']:,}" for _, c in sorted(sample["workers"].items())) or "-"
            print(f"    {sample['t_s']:7.1f} s  edges {edges}")
        print(f"    {driver}: {measured['examples']:,} examples, {measured['findings']} findings", flush=True)
    results.write("bench_fuzz_coverage", figures, args.results, script="bench_fuzz")
