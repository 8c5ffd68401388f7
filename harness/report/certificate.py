"""The certificate: per SPEC requirement, what was checked and how it went."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from collections.abc import Iterable

import numpy as np

from harness.api.requirements import EXCUSED_BY, REQUIREMENTS
from harness.report import contract
from harness.report.attribution import failed_requirements
from harness.report.root_causes import group

SCHEMA = "driver-harness/certificate/2"


def _git_commit() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        done = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


#: Every status a requirement can have, in the order the report shows them.
STATUSES = ("pass", "fail", "waived", "not-applicable", "not-run")
#: what a requirement that did not run (or did only in part) needs: a run of every test
INLINE_FIX = ("run the driver in its own sandboxed service process (without --driver-isolation=inline, which is "
              "for debugging): a driver in the harness's process could have changed its own verdict")
ALL_SUITES_FIX = "run every suite: harness certify without -k, -m, --deselect, --ignore or test paths"
#: what a requirement whose every test the declarations ruled out, though none of them excuses it, needs
DECLARE_FIX = ("declare the operations and operand types the driver supports (Capabilities.operations, "
               "Capabilities.operand_types): the suites build their models from declared ones only, "
               "and each reason says which they need")


def _test_status(test: dict) -> str:
    outcome = test["outcome"]
    if outcome == "failed":  # a fault of the harness or of the run is no verdict: the test did not run to one
        return "fail" if test.get("fault", "driver") == "driver" else "not-run"
    if outcome in ("stopped", "no-verdict", "deselected"):
        return "not-run"
    if outcome == "held":  # checked, and met, before the test stopped at another rule
        return "pass"
    if outcome in ("xfailed", "xpassed"):
        return "waived"  # an expectations-file xfail is never a pass in a certificate
    if outcome == "skipped":
        return (test.get("skip") or {}).get("kind", "not-run")
    return "pass"


def requirement_status(tests: list[dict], requirement: str = "") -> dict:
    """The one status of ``requirement`` from its tests, with the reasons behind it.

    A failure anywhere fails it; a test that did not run for any reason but the driver's
    declarations makes it not-run (so the certificate cannot pass over it); waived tests make
    it waived; it is not-applicable only when every test is, and passes otherwise.  Only the
    capabilities that may excuse ``requirement`` (`EXCUSED_BY`: none for memory pools, requests and
    the service) make it not-applicable: a requirement whose every test the declarations ruled out
    by another was checked by nothing, and is not-run.
    """
    if not tests:
        return {"status": "not-run", "reasons": ["no test covering it ran"], "fixes": [ALL_SUITES_FIX], "capabilities": []}
    statuses = [_test_status(t) for t in tests]
    first = next((s for s in ("fail", "not-run", "waived") if s in statuses), None)
    status: str = first if first is not None else (
        "not-applicable" if all(s == "not-applicable" for s in statuses) else "pass")
    skips = [t.get("skip") or {} for t, s in zip(tests, statuses) if s == status]
    reasons = [t["waiver"] for t in tests if t["waiver"]] if status == "waived" else []
    reasons += [skip["reason"] for skip in skips if skip.get("reason")]
    capabilities = sorted({skip["capability"] for skip in skips if skip.get("capability")})
    excuses = EXCUSED_BY.get(requirement)
    if status == "not-applicable" and excuses is not None and not set(capabilities) <= excuses:
        leave_out = f"only {', '.join(sorted(excuses))} may leave it out" if excuses else "it binds every driver"
        return {"status": "not-run", "capabilities": capabilities, "fixes": [DECLARE_FIX], "reasons": [
            f"the driver's declarations ({', '.join(capabilities)}) ruled out every test of {requirement}, and "
            f"{leave_out}: nothing checked it", *sorted(set(reasons))]}
    return {
        "status": status,
        "reasons": sorted(set(reasons)) if status != "pass" else [],
        "fixes": sorted({skip["fix"] for skip in skips if skip.get("fix")}) if status == "not-run" else [],
        "capabilities": capabilities if status == "not-applicable" else [],
    }


#: What a certificate none of whose checks ran needs (every requirement not applicable, or waived).
NOTHING_CHECKED_FIX = ("give the run something to check: no test checked anything (every one was not applicable: the "
                       "driver declares none of what they check, or reported every model they built unsupported in "
                       "get_supported_operations); declare what the driver supports, and support what it declares")


def verdict_of(statuses: Iterable[str], complete: bool) -> str:
    """FAIL on any failure; INCOMPLETE when anything applicable did not run, or when no check ran at
    all (no requirement passed: every one not applicable or waived); else PASS(-WITH-WAIVERS).  A
    PASS is a statement over checks that ran: over none, it would say nothing of the driver."""
    statuses = set(statuses)
    if "fail" in statuses:
        return "FAIL"
    if not complete or "not-run" in statuses or "pass" not in statuses:
        return "INCOMPLETE"
    return "PASS-WITH-WAIVERS" if "waived" in statuses else "PASS"


def _versions() -> dict:
    """The versions of what judged the driver, for the record."""
    versions = {"python": sys.version.split()[0], "numpy": np.__version__}
    for distribution in ("pytest", "hypothesis", "pluggy", "pytest-xdist", "jax", "jaxlib", "apache-tvm-ffi"):
        try:
            versions[distribution] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def golden_coverage(tests: list[dict]) -> dict:
    """Operation x operand type -> golden tests passed, run (failed or passed) and reported
    unsupported (the driver's get_supported_operations refused the example's model; a test not
    applicable for another reason, such as a memory-domain test of a driver without memory domains,
    is none of these), over every golden test of the run (a test counts once per pair it exercises)."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for test in tests:
        golden = test.get("golden")
        if not golden:
            continue
        status = _test_status(test)
        for operation, operand_type in golden.get("coverage", []):
            cell = table.setdefault(operation, {}).setdefault(operand_type, {"passed": 0, "run": 0, "unsupported": 0})
            if status in ("pass", "fail"):
                cell["run"] += 1
                cell["passed"] += status == "pass"
            elif status == "not-applicable" and (test.get("skip") or {}).get("capability") == "operations":
                cell["unsupported"] += 1
    return {op: dict(sorted(types.items())) for op, types in sorted(table.items())}


#: What a test that failed with no verdict on the driver left not run, and what fixes it, by whose fault it was.
_NO_VERDICT = {
    "harness": lambda test: {
        "kind": "not-run", "reason": f"{test['id']}: the harness itself failed ({test.get('message') or test.get('error_type')}), "
                                     f"which is no verdict on the driver",
        "fix": "a fault of driver-harness: report it with the test's record (its details and the run's seed)"},
    "run": lambda test: {
        "kind": "not-run", "reason": f"{test['id']}: hypothesis stopped the test with its own error about the run "
                                     f"({test.get('error_type')}), which is no verdict on the driver",
        "fix": "run again; if it persists, the test's data generation depends on something beyond its draws: "
               "report it with the test's record"},
}


def _as_covering(test: dict, requirement: str) -> dict:
    """A test's line under ``requirement``.  A test that failed on another of the rules it names
    passes here when it had checked this one, and the driver met it, before it failed (its record's
    ``held``); otherwise it stopped before it checked this one: not-run here (the certificate
    fails on that rule)."""
    entry = {"test": test["id"], "outcome": test["outcome"], "message": test.get("message", ""),
             "waiver": test.get("waiver", ""), "skip": test.get("skip"), "reproducer": test.get("reproducer", "")}
    failed = failed_requirements(test)
    if test["outcome"] == "failed" and not failed:  # the harness's fault, or the run's: no verdict
        entry["outcome"] = "no-verdict"
        entry["skip"] = _NO_VERDICT[test.get("fault", "harness")](test)
    elif failed and requirement not in failed and requirement in test.get("held", ()):
        entry["outcome"] = "held"
        entry["skip"] = None
        entry["message"] = (f"checked, and met, before the test stopped at its failure of {', '.join(failed)}: "
                            f"{entry['message']}")
    elif failed and requirement not in failed:
        entry["outcome"] = "stopped"
        entry["skip"] = {"kind": "not-run", "reason": f"{test['id']} stopped at its failure of {', '.join(failed)}",
                         "fix": f"fix the driver's failure of {', '.join(failed)}: the tests that stopped there "
                                f"check the rest once it passes"}
    return entry


def covering_tests(tests: Iterable[dict], requirement: str) -> list[dict]:
    """The lines of the tests naming ``requirement``, and of those failing it though they name
    another (a wrong value seen by a test of handles), as the certificate lists them under it."""
    return [_as_covering(t, requirement) for t in tests
            if requirement in t["requirements"] or requirement in failed_requirements(t)]


def _left_out(records: list[dict]) -> list[dict]:
    """The tests the run left out (-k, -m, --deselect), as not-run tests of their requirements:
    some of a requirement's tests passing says nothing of the rest.  Each xdist worker collects,
    and leaves out, every test: one entry each."""
    ran = {r["id"] for r in records if "id" in r}
    left_out = {test["id"]: test for r in records for test in r.get("deselected", ()) if test["id"] not in ran}
    return [{**test, "outcome": "deselected", "skip": {"kind": "not-run", "reason": "left out of the run (-k, -m or --deselect)",
                                                       "fix": ALL_SUITES_FIX}} for test in left_out.values()]


def _limits(session: dict) -> dict:
    """What the verdict held under: each call's deadline and the service's address-space limit in
    MiB (0: none), or None for both when the driver ran in the harness's process, which has neither.
    A driver that passes only with a long deadline is certified with that deadline, and says so."""
    process = session.get("isolation") == "process"
    return {"driver_timeout_s": session.get("driver_timeout_s") if process else None,
            "driver_memory_limit_mib": session.get("driver_memory_limit_mib") if process else None}


def build(records: Iterable[dict], session: dict, started: str, ended: str, complete: bool,
          duration_s: float | None = None, requirements: Iterable[str] | None = None) -> dict:
    """The certificate of a run; ``requirements`` limits its table (``harness cts``: OPS-1..3 only)."""
    records = list(records)
    tests = [r for r in records if "id" in r] + _left_out(records)
    wanted = set(REQUIREMENTS if requirements is None else requirements)
    # How the driver's service fared (starts, calls, calls past the per-call budget, breakers).
    service = next((r["service"] for r in records if "service" in r), None)
    table = {}
    for requirement, summary in REQUIREMENTS.items():
        if requirement not in wanted:
            continue
        covering = covering_tests(tests, requirement)
        table[requirement] = {"summary": summary, "spec": contract.link(requirement),
                              **requirement_status(covering, requirement), "tests": covering}
    # Whole files left out (--ignore, --ignore-glob) leave no record of their tests: which
    # requirements they held is unknown, so no verdict can be PASS.
    files_left_out = list(session.get("files_left_out") or ())
    # A driver in the harness's own process could have changed anything the harness computed: such a
    # run finds failures, but it never certifies.
    inline = session.get("isolation") == "inline"
    verdict = verdict_of((entry["status"] for entry in table.values()), complete and not files_left_out and not inline)
    counts = {status: sum(entry["status"] == status for entry in table.values()) for status in STATUSES}
    fixes = ({fix for entry in table.values() for fix in entry["fixes"]} | ({ALL_SUITES_FIX} if files_left_out else set())
             | ({INLINE_FIX} if inline else set()))
    nothing_checked = counts["pass"] == 0 and counts["fail"] == 0
    if nothing_checked and not counts["not-run"] and complete and not files_left_out:
        fixes.add(NOTHING_CHECKED_FIX)  # the one reason the verdict is not PASS
    return {
        "schema": SCHEMA,
        "verdict": verdict,
        "counts": counts,
        "waived": sorted(r for r, e in table.items() if e["status"] == "waived"),
        "not_applicable": sorted(r for r, e in table.items() if e["status"] == "not-applicable"),
        "not_run": sorted(r for r, e in table.items() if e["status"] == "not-run"),
        "fixes": sorted(fixes),
        "nothing_checked": nothing_checked,  # no requirement passed or failed: no check ran, and the verdict says INCOMPLETE
        "interrupted": not complete,
        "files_left_out": files_left_out,
        "harness": {"version": session.get("harness_version", ""), "git_commit": _git_commit()},
        "driver": {**{k: session.get(k) for k in ("driver", "device_name", "device_version", "plugin", "description",
                                                  "capabilities", "isolation", "sandbox")}, **_limits(session)},
        "run": {"profile": session.get("profile"), "seed": session.get("seed"), "started": started, "ended": ended,
                "duration_s": duration_s, "tests": len(tests), "failed": sum(t["outcome"] == "failed" for t in tests),
                "service": service},
        "platform": {"system": platform.platform(), "machine": platform.machine(), **_versions()},
        "requirements": table,
        "golden": {"corpus": session.get("golden_corpus"), "coverage": golden_coverage(tests)},
        "failures": [t for t in tests if t["outcome"] == "failed"],
        # the failures grouped: one bug that fails many tests is one entry (harness.report.root_causes)
        "root_causes": group(t for t in tests if t["outcome"] == "failed"),
    }
