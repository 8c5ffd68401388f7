"""The certificate: per SPEC requirement, what was checked and how it went."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Iterable

import numpy as np

from harness.requirements import REQUIREMENTS

SCHEMA = "driver-harness/certificate/1"


def _git_commit() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        done = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def requirement_status(tests: list[dict]) -> str:
    outcomes = {t["outcome"] for t in tests}
    if not tests:
        return "not-covered"
    if "failed" in outcomes:
        return "fail"
    if outcomes & {"xfailed", "xpassed"}:
        return "waived"  # an expectations-file xfail is never a pass in a certificate
    if outcomes == {"skipped"}:
        return "skipped"
    return "pass"


def build(records: Iterable[dict], session: dict, started: str, ended: str, complete: bool) -> dict:
    tests = [r for r in records if "id" in r]
    table = {}
    for requirement, summary in REQUIREMENTS.items():
        covering = [{"test": t["id"], "outcome": t["outcome"], "message": t.get("message", ""),
                     "waiver": t.get("waiver", ""), "reproducer": t.get("reproducer", "")}
                    for t in tests if requirement in t["requirements"]]
        table[requirement] = {"summary": summary, "status": requirement_status(covering), "tests": covering}
    statuses = [entry["status"] for entry in table.values()]
    if not complete:
        verdict = "INCOMPLETE"
    elif "fail" in statuses:
        verdict = "FAIL"
    elif "waived" in statuses:
        verdict = "PASS-WITH-WAIVERS"
    else:
        verdict = "PASS"
    return {
        "schema": SCHEMA,
        "verdict": verdict,
        "waived": sorted(r for r, e in table.items() if e["status"] == "waived"),
        "not_covered": sorted(r for r, e in table.items() if e["status"] == "not-covered"),
        "harness": {"version": session.get("harness_version", ""), "git_commit": _git_commit()},
        "driver": {k: session.get(k) for k in ("driver", "device_name", "device_version", "plugin", "description",
                                               "capabilities", "isolation")},
        "run": {"profile": session.get("profile"), "seed": session.get("seed"), "started": started, "ended": ended,
                "tests": len(tests), "failed": sum(t["outcome"] == "failed" for t in tests)},
        "platform": {"system": platform.platform(), "python": sys.version.split()[0], "numpy": np.__version__},
        "requirements": table,
        "failures": [t for t in tests if t["outcome"] == "failed"],
    }
