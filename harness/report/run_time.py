"""Where a failing driver's run spent its time, in one line for the console.

A failure costs more than a pass: hypothesis shrinks it to a minimal example, a reproducer is
written and run again to check that it fails alone, and a crash or a hang costs a fresh driver
service (and, for a hang, the call's deadline waited out); a test the circuit breaker ended is not
shrunk, and costs little.  The line gives each figure of the run.
"""

from __future__ import annotations

__all__ = ["why_longer"]


def why_longer(document: dict) -> str:
    """The line that says where a run with failures spent its time ("" for a run without any)."""
    failures = document.get("failures") or []
    if not failures:
        return ""
    spent = sum(float(f.get("duration") or 0.0) for f in failures)
    checked = sum("replays" in f for f in failures)
    run = document.get("run") or {}
    total = run.get("duration_s")
    of_run = f" of this {float(total):.0f} s run" if total is not None else ""
    service = run.get("service") or {}
    starts = int(service.get("starts") or 0)
    restarts = f"; the driver service was started {starts} times (a fresh one after each crash or hang)" if starts > 1 else ""
    count = len(failures)
    refused = sum(bool(f.get("by_breaker")) for f in failures)
    unshrunk = (f" (but the {refused} the circuit breaker refused: every example fails those alike)" if refused > 1
                else " (but the one the circuit breaker refused)" if refused else "")
    return (f"{count} failed test{'s' if count != 1 else ''} took {spent:.0f} s{of_run}: hypothesis shrinks each "
            f"failure to a minimal example{unshrunk}, and {checked} reproducer{'s were' if checked != 1 else ' was'} "
            f"run again to check that each fails alone{restarts}")
