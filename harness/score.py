"""The suites' own score: run them against every seeded-bug driver and see what they catch.

    harness score [--jobs N] [--only NAME ...] [--json FILE]
    python -m harness.score

Each mutant runs the suites in the ``ci`` profile with a fixed seed, through the service,
without shrinking, and stops at the first failing test that names the requirement the
mutant breaks.  The table says, per mutant: caught or not, the first test that caught it,
the time to that failure and how many generated examples that test needed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from harness.registry import load_registry

SEED = 0
DRIVER_TIMEOUT_S = 2.0
RUN_TIMEOUT_S = 600


@dataclass
class Score:
    driver: str
    requirement: str
    caught: bool
    first_test: str = ""
    seconds_to_catch: float | None = None
    examples: int | None = None
    failures_elsewhere: int = 0
    message: str = ""


def run_suites(driver: str, stop_on: str = "", extra: tuple[str, ...] = ()) -> list[dict]:
    """Run every suite against ``driver``; the per-test records of that run."""
    with tempfile.TemporaryDirectory() as tmp:
        record = os.path.join(tmp, "record.jsonl")
        command = [sys.executable, "-m", "pytest", "--pyargs", "suites", f"--driver={driver}", "--harness-profile=ci",
                   f"--harness-seed={SEED}", f"--driver-timeout={DRIVER_TIMEOUT_S}", "--harness-no-shrink",
                   f"--harness-record={record}", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *extra]
        if stop_on:
            command.append(f"--harness-stop-on={stop_on}")
        subprocess.run(command, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
        if not os.path.exists(record):
            return []
        with open(record, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        return [r for r in records if "id" in r]  # test records, without the session header


def score_mutant(driver: str, requirement: str) -> Score:
    records = run_suites(driver, stop_on=requirement)
    score = Score(driver, requirement, caught=False)
    for record in records:
        if record["outcome"] != "failed":
            continue
        if requirement in record["requirements"]:
            score.caught = True
            score.first_test = record["id"]
            score.seconds_to_catch = record["elapsed"]
            score.examples = record["examples"]
            score.message = record["message"][:300]
            break
        score.failures_elsewhere += 1
    return score


def score_all(names: list[str] | None = None, jobs: int = 2) -> list[Score]:
    registry = load_registry()
    mutants = [registry.drivers[n] for n in registry.names() if registry.drivers[n].breaks]
    if names:
        mutants = [m for m in mutants if m.name in names or m.name.removeprefix("mutant-") in names]
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda spec: score_mutant(spec.name, spec.breaks), mutants))


def format_table(scores: list[Score]) -> str:
    rows = [("mutant", "requirement", "caught", "first test that caught it", "time to catch", "examples")]
    for s in scores:
        rows.append((s.driver.removeprefix("mutant-"), s.requirement, "yes" if s.caught else "NO",
                     s.first_test.removeprefix("suites/") or "-",
                     f"{s.seconds_to_catch:.1f} s" if s.seconds_to_catch is not None else "-",
                     str(s.examples) if s.examples is not None else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary(scores: list[Score]) -> str:
    caught = [s for s in scores if s.caught]
    times = [s.seconds_to_catch for s in caught if s.seconds_to_catch is not None]
    median = f"{statistics.median(times):.1f} s" if times else "-"
    return f"caught {len(caught)}/{len(scores)} seeded bugs; median time to catch {median}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness score", description="Score the suites against every seeded-bug driver.")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants run at once")
    parser.add_argument("--only", nargs="*", default=None, metavar="NAME", help="score only these mutants")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the scores as JSON")
    options = parser.parse_args(argv)
    started = time.monotonic()
    scores = score_all(options.only, options.jobs)
    print(format_table(scores))
    print()
    print(f"{summary(scores)} (scored in {time.monotonic() - started:.0f} s with {options.jobs} jobs)")
    if options.json:
        from harness.report.files import write_atomically

        write_atomically(options.json, json.dumps([asdict(s) for s in scores], indent=2))
    return 0 if all(s.caught for s in scores) else 1


if __name__ == "__main__":
    sys.exit(main())
