"""Failures grouped by root cause: one bug that fails forty tests is one entry, of forty tests.

A root cause is (requirement broken, entry point, message signature): the rule the failure
fails (`attribution.failed_requirements`; for a failure that is no verdict on the driver, whose
fault it was), the Driver API call it came from, and the message's first line with every number,
address and quoted value taken out, so that two examples of one bug (other shapes, other bytes)
read alike.  The certificate, the HTML report and the console show the same groups.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from harness.report.attribution import failed_requirements

__all__ = ["ENTRY_POINTS", "console_lines", "entry_point", "group", "signature"]

#: The Driver API's calls, as failure messages name them (harness.api.hal, harness.api.memory).
ENTRY_POINTS: Final = ("get_supported_operations", "prepare_model", "execute", "allocate", "copy_from", "copy_to",
                       "capabilities", "release")
_ENTRY = re.compile(r"\b(" + "|".join(ENTRY_POINTS) + r")\b")
_STAGE = re.compile(r"\bat (prepare|execute|call)\b")
_VARYING = (
    (re.compile(r"\[[A-Z]+(?:-[A-Z]+)*-\d+\]\s*"), ""),  # the rule's tag: the requirement is the key's own part
    # which golden example, in which variation and test kind: one bug fails many (harness.cts.failure)
    (re.compile(r"^\S+\.mod\.py:\d+ example \d+ \([^)]*\), variation [^,]+, [^:]+:\s*"), ""),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "'…'"),  # quoted values
    (re.compile(r"\bnp\.\w+\([^)]*\)"), "#"),  # numpy scalars: their type varies with the example's, as their value does
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "#"),  # addresses and bytes
    (re.compile(r"[-+]?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b"), "#"),  # numbers: sizes, indexes, values
    # asides in parentheses: the call's arguments, how far off, under which bound
    (re.compile(r"\s*\([^()]*(?:\([^()]*\)[^()]*)*\)"), ""),
    (re.compile(r"(\[#\] expected # got #)(?:, \[#\] expected # got #)+"), r"\1"),  # a golden mismatch's first elements
    (re.compile(r"\s+"), " "),
)


def signature(message: str) -> str:
    """``message``'s first line with what varies between examples of one bug taken out."""
    line = next((line for line in message.splitlines() if line.strip()), "")
    for pattern, replacement in _VARYING:
        line = pattern.sub(replacement, line)
    return line.strip()


def entry_point(record: dict) -> str:
    """The Driver API call a failure came from, as its message names it ("" when it names none)."""
    message = record.get("message") or ""
    found = _ENTRY.search(message)
    if found:
        return found.group(1)
    stage = _STAGE.search(message)
    if stage:
        return {"prepare": "prepare_model", "execute": "execute"}.get(stage.group(1), "")
    return "execute" if re.search(r"\boutput \d+ differs\b", message) else ""


def _broken(record: dict) -> str:
    failed = failed_requirements(record)
    return ", ".join(failed) if failed else f"no verdict ({record.get('fault', 'harness')})"


def group(failures: Iterable[dict]) -> list[dict]:
    """The root causes of ``failures`` (test records), the most tests first: each with its key,
    the first failure's message and reproducer, and every test it failed."""
    causes: dict[tuple[str, str, str], dict] = {}
    for record in failures:
        key = (_broken(record), entry_point(record), signature(record.get("message") or ""))
        cause = causes.get(key)
        if cause is None:
            cause = causes[key] = {"requirement": key[0], "entry_point": key[1], "signature": key[2],
                                   "message": record.get("message") or "", "first": record["id"],
                                   "reproducer": record.get("reproducer") or "", "fault": record.get("fault", "driver"),
                                   "tests": []}
        cause["tests"].append(record["id"])
    ordered = sorted(causes.values(), key=lambda cause: -len(cause["tests"]))
    return [{**cause, "count": len(cause["tests"])} for cause in ordered]


def console_lines(causes: list[dict], limit: int = 10) -> list[str]:
    """The root causes as the console shows them: one line each, then where the first one's
    reproducer is."""
    lines = []
    for cause in causes[:limit]:
        first_line = next((line for line in cause["message"].splitlines() if line.strip()), "")
        where = f" in {cause['entry_point']}" if cause["entry_point"] else ""
        tests = f"{cause['count']} test{'s' if cause['count'] != 1 else ''}"
        lines.append(f"  {cause['requirement']}{where}, {tests}: {first_line[:160]}")
        lines.append(f"      first: {cause['first']}" + (f"; reproducer: {cause['reproducer']}" if cause["reproducer"] else ""))
    if len(causes) > limit:
        lines.append(f"  … and {len(causes) - limit} more (certificate.json: root_causes)")
    return lines
