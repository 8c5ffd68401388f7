"""``harness fuzz`` and ``harness replay``: time-boxed generation, and re-running what it found.

Fuzzing is rounds of ordinary pytest runs of the generative suites, each with a new
seed, until the time budget is spent.  Hypothesis saves every failing example in the
example database the moment it finds it; the records of each round are fsynced per
test; so a run that is killed keeps everything found so far.  At the end (or on Ctrl-C
or SIGTERM) it writes fuzz-summary.json and a reproducer per distinct failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from harness.report.files import write_atomically

ROUND_EXAMPLES = 25
SUITES = ("suites.memory_pools", "suites.requests", "suites.numerics", "suites.memory_domains")


def _pytest(driver: str, db: str, record: str, reproducers: str, extra: list[str], workers: int,
            first_suite: int = 0) -> list[str]:
    # Rounds start at a different suite each time, so a short budget still reaches them all.
    order = SUITES[first_suite % len(SUITES):] + SUITES[: first_suite % len(SUITES)]
    command = [sys.executable, "-m", "pytest", "--pyargs", *order, f"--driver={driver}", "--harness-profile=nightly",
               f"--harness-db={db}", f"--harness-record={record}", f"--harness-reproducers={reproducers}",
               "-q", "-p", "no:cacheprovider", *extra]
    if workers > 1:
        command += ["-n", str(workers)]
    return command


def _read(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [r for r in (json.loads(line) for line in f if line.strip()) if "id" in r]


def _distinct_failures(records: list[dict]) -> dict[tuple[str, str], dict]:
    failures: dict[tuple[str, str], dict] = {}
    for record in records:
        if record["outcome"] == "failed":
            failures.setdefault((record["id"], record["message"][:200]), record)
    return failures


def _absolute(db: str) -> str:
    return db if db.startswith("redis://") else os.path.abspath(db)


def fuzz(driver: str, minutes: float, workers: int, db: str, out: str) -> int:
    out, db = os.path.abspath(out), _absolute(db)
    os.makedirs(out, exist_ok=True)
    deadline = time.monotonic() + minutes * 60
    started = time.monotonic()
    stop = {"now": False}
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    all_records: list[dict] = []
    rounds = 0
    examples: dict[str, int] = {}
    try:
        while not stop["now"] and time.monotonic() < deadline:
            rounds += 1
            record = os.path.join(out, f"round-{rounds}.jsonl")
            command = _pytest(driver, db, record, os.path.join(out, "reproducers"),
                              [f"--harness-examples={ROUND_EXAMPLES}"], workers, rounds - 1)
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            while process.poll() is None:
                if stop["now"] or time.monotonic() >= deadline:
                    process.send_signal(signal.SIGINT)  # pytest stops cleanly; found examples are already saved
                    break
                time.sleep(0.2)
            try:
                _, errors = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                _, errors = process.communicate()
            if process.returncode == 4:
                print(f"harness fuzz: {errors.strip().splitlines()[-1] if errors.strip() else 'usage error'}", file=sys.stderr)
                return 2
            records = _read(record)
            all_records += records
            for r in records:
                suite = r["id"].split("/")[1] if r["id"].count("/") > 1 else r["id"]
                examples[suite] = examples.get(suite, 0) + (r["examples"] or 0)
            found = len(_distinct_failures(all_records))
            print(f"[{time.monotonic() - started:7.1f} s] round {rounds}: "
                  f"{', '.join(f'{k} {v}' for k, v in sorted(examples.items()))} examples; {found} distinct failures",
                  flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    failures = _distinct_failures(all_records)
    summary = {
        "driver": driver, "database": db, "rounds": rounds, "seconds": round(time.monotonic() - started, 1),
        "examples_per_suite": examples, "interrupted": stop["now"],
        "failures": [{"test": r["id"], "requirements": r["requirements"], "message": r["message"],
                      "reproducer": r.get("reproducer", "")} for r in failures.values()],
    }
    write_atomically(os.path.join(out, "fuzz-summary.json"), json.dumps(summary, indent=2))
    print(f"harness fuzz: {driver}: {len(failures)} distinct failures in {rounds} rounds; summary in "
          f"{os.path.join(out, 'fuzz-summary.json')}")
    return 1 if failures else 0


def replay(driver: str, db: str, out: str) -> int:
    """Re-run only the stored failing examples (what a developer does the morning after)."""
    out, db = os.path.abspath(out), _absolute(db)
    os.makedirs(out, exist_ok=True)
    record = os.path.join(out, "replay.jsonl")
    if os.path.exists(record):
        os.unlink(record)
    command = _pytest(driver, db, record, os.path.join(out, "reproducers"), ["--harness-replay"], 1)
    code = subprocess.run(command, stdin=subprocess.DEVNULL).returncode
    if code == 4:
        return 2
    failures = _distinct_failures(_read(record))
    for record_ in failures.values():
        print(f"still failing: {record_['id']}: {record_['message']}")
    print(f"harness replay: {driver}: {len(failures)} stored failures reproduce")
    return 1 if failures else 0
