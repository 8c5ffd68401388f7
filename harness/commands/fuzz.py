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
import tempfile
import time

from harness.api.errors import UsageError
from harness.report.files import write_atomically

ROUND_EXAMPLES = 25
PROGRESS_EVERY_S = 10.0
SUITES = ("harness.suites.memory_pools", "harness.suites.requests", "harness.suites.numerics", "harness.suites.memory_domains", "harness.suites.custom_calls",
          "harness.suites.packed_functions")


def select_suites(names: str | None) -> tuple[str, ...]:
    """The suites named in ``--suites a,b`` (all when None); an unknown name is a usage error."""
    if not names:
        return SUITES
    by_name = {suite.rsplit(".", 1)[1]: suite for suite in SUITES}
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in by_name]
    if unknown or not chosen:
        raise UsageError(f"--suites: unknown suite {', '.join(map(repr, unknown)) or '(none given)'}; "
                         f"the suites are {', '.join(by_name)}")
    return tuple(by_name[name] for name in chosen)


def _pytest(driver: str, db: str, record: str, reproducers: str, extra: list[str], workers: int,
            first_suite: int = 0, suites: tuple[str, ...] = SUITES) -> list[str]:
    # Rounds start at a different suite each time, so a short budget still reaches them all.
    order = suites[first_suite % len(suites):] + suites[: first_suite % len(suites)]
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


def _examples_per_suite(records: list[dict]) -> dict[str, int]:
    examples: dict[str, int] = {}
    for r in records:
        suite = r["id"].split("/")[1] if r["id"].count("/") > 1 else r["id"]
        examples[suite] = examples.get(suite, 0) + (r["examples"] or 0)
    return examples


def _progress(started: float, rounds: int, records: list[dict]) -> None:
    examples = _examples_per_suite(records)
    done = ", ".join(f"{suite} {count}" for suite, count in sorted(examples.items())) or "none finished yet"
    print(f"[{time.monotonic() - started:7.1f} s] round {rounds}: examples {done}; "
          f"{len(_distinct_failures(records))} distinct failures", flush=True)


def _absolute(db: str) -> str:
    return db if db.startswith("redis://") else os.path.abspath(db)


def fuzz(driver: str, minutes: float, workers: int, db: str, out: str, suites: tuple[str, ...] = SUITES) -> int:
    out, db = os.path.abspath(out), _absolute(db)
    os.makedirs(out, exist_ok=True)
    deadline = time.monotonic() + minutes * 60
    started = time.monotonic()
    stop = {"now": False}
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    all_records: list[dict] = []
    rounds = 0
    try:
        while not stop["now"] and time.monotonic() < deadline:
            rounds += 1
            record = os.path.join(out, f"round-{rounds}.jsonl")
            command = _pytest(driver, db, record, os.path.join(out, "reproducers"),
                              [f"--harness-examples={ROUND_EXAMPLES}"], workers, rounds - 1, suites)
            with tempfile.TemporaryFile("w+") as errors:
                process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, text=True)
                shown = time.monotonic()
                while process.poll() is None:
                    if stop["now"] or time.monotonic() >= deadline:
                        process.send_signal(signal.SIGINT)  # pytest stops cleanly; found examples are already saved
                        break
                    if time.monotonic() - shown >= PROGRESS_EVERY_S:  # within a round too: rounds can be long
                        _progress(started, rounds, all_records + _read(record))
                        shown = time.monotonic()
                    time.sleep(0.2)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                if process.returncode == 4:
                    errors.seek(0)
                    lines = errors.read().strip().splitlines()
                    print(f"harness fuzz: {lines[-1] if lines else 'usage error'}", file=sys.stderr)
                    return 2
            all_records += _read(record)
            _progress(started, rounds, all_records)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    failures = _distinct_failures(all_records)
    summary = {
        "driver": driver, "database": db, "workers": workers, "suites": [s.rsplit(".", 1)[1] for s in suites],
        "rounds": rounds, "seconds": round(time.monotonic() - started, 1),
        "examples_per_suite": _examples_per_suite(all_records), "interrupted": stop["now"],
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
    records = _read(record)
    replayed = sum(r.get("examples") or 0 for r in records if "id" in r)
    if not replayed:
        print(f"harness replay: {driver}: nothing is stored for this driver in {db} (0 examples replayed)")
        return 0
    failures = _distinct_failures(records)
    for record_ in failures.values():
        print(f"still failing: {record_['id']}: {record_['message']}")
    print(f"harness replay: {driver}: {replayed} stored examples replayed; {len(failures)} failures reproduce")
    return 1 if failures else 0
