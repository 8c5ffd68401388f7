"""What a fuzz run found, as root causes: failing tests grouped by the bug they most likely share.

One bug usually fails several tests (every test that reaches the broken code), each with its own
words for the values it drew.  Failures are one finding when they break the same requirement,
at the same entry point of the Driver API, in the same frame of the driver when they carry its
stack (an exception it raised, a crash), with the same message once the values in it are left
out: numbers, call arguments, addresses.  A finding keeps every test it stands for and the
reproducer of the first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Finding", "entry_point", "frame_signature", "group_findings", "normalised_message", "not_applicable_reason"]

#: The Driver API's calls, as messages name them ("PreparedModel.execute(...)", "copy_from").
_ENTRY_POINT = re.compile(
    r"\b((?:Device|PreparedModel|Buffer)\.\w+|prepare_model|get_supported_operations|execute|allocate|copy_from|"
    r"copy_to|release|capabilities)\b")
_RULE_PREFIX = re.compile(r"^\[[A-Z][A-Z0-9-]*\]\s*")
_CALL_ARGUMENTS = re.compile(r"(\w)\((?:[^()]|\([^()]*\))*\)")
_NUMPY_SCALAR = re.compile(r"\bnp\.\w+\(…\)")  # np.float32(…), np.uint8(…): a value whatever its type
_TRAILING_NOTE = re.compile(r"\s*\((?:[^()]|\([^()]*\))*\)$")  # "(3 elements outside 2 terms x eps(float32) ...)"
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")  # an address, a byte or a bit pattern
_NUMBER = re.compile(r"(?<!\w)-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")  # a number on its own, not a name's digits
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_SPACES = re.compile(r"\s+")
#: A frame of a Python traceback or of faulthandler's dump: 'File "x.py", line 12 in f' (with or without the comma).
_FRAME = re.compile(r'File "([^"]+)", line \d+,? in (\S+)')


def entry_point(message: str) -> str:
    """The Driver API call a failure's message names first ("" when it names none)."""
    found = _ENTRY_POINT.search(message)
    return found.group(1) if found else ""


def normalised_message(message: str) -> str:
    """A failure's first line with what varies from example to example left out: its rule prefix
    (the requirement is compared on its own), a closing note in parentheses (how many elements,
    the bound they broke), call arguments, values, addresses and numbers."""
    line = message.strip().splitlines()[0] if message.strip() else ""
    line = _RULE_PREFIX.sub("", line)
    line = _TRAILING_NOTE.sub("", line)
    line = _CALL_ARGUMENTS.sub(r"\1(…)", line)
    line = _NUMPY_SCALAR.sub("…", line)
    line = _QUOTED.sub("'…'", line)
    line = _ADDRESS.sub("<hex>", line)
    line = _NUMBER.sub("#", line)
    return _SPACES.sub(" ", line).strip()


def frame_signature(message: str) -> str:
    """Where in the driver a failure that carries a stack (an exception the driver raised, a
    crash's dump) happened: the innermost frame's file and function ("" when it carries none).
    Python's tracebacks end with the innermost frame; faulthandler's dumps begin with it."""
    frames = _FRAME.findall(message)
    if not frames:
        return ""
    path, function = frames[0] if "most recent call first" in message else frames[-1]
    return f"{path.rsplit('/', 1)[-1]}:{function}"


@dataclass(frozen=True)
class Finding:
    """One root cause: the requirement it breaks, where, the first test's message and reproducer,
    and every failing test it stands for (in the order they were found)."""

    requirement: str
    entry_point: str
    message: str
    reproducer: str
    tests: tuple[str, ...]
    found_at_s: float | None = None  # when a fuzz run first met it (None: not known)
    frame: str = ""  # the driver's innermost frame, when the failure carries a stack (`frame_signature`)

    def as_json(self) -> dict:
        return {"requirement": self.requirement, "entry_point": self.entry_point, "frame": self.frame,
                "message": self.message, "reproducer": self.reproducer, "tests": list(self.tests),
                "found_at_s": self.found_at_s}


def _requirement(failure: Mapping) -> str:
    requirements = failure.get("requirements") or []
    return str(failure.get("rule") or (requirements[0] if requirements else ""))


def group_findings(failures: Iterable[Mapping]) -> list[Finding]:
    """The distinct root causes of ``failures`` (records or fuzz-summary failure entries: ``test``
    or ``id``, ``message``, ``rule`` or ``requirements``, ``reproducer``), in the order first met;
    the most widespread first when two were met together."""
    groups: dict[tuple[str, str, str, str], list[Mapping]] = {}
    for failure in failures:
        message = str(failure.get("message") or "")
        key = (_requirement(failure), entry_point(message), frame_signature(message), normalised_message(message))
        groups.setdefault(key, []).append(failure)
    findings = []
    for (requirement, where, frame, _), members in groups.items():
        first = members[0]
        tests = tuple(dict.fromkeys(str(m.get("test") or m.get("id") or "") for m in members))
        reproducer = next((str(m["reproducer"]) for m in members if m.get("reproducer")), "")
        message = (str(first.get("message") or "").strip().splitlines() or [""])[0]
        times = [float(m["found_at_s"]) for m in members if m.get("found_at_s") is not None]
        findings.append(Finding(requirement, where, message, reproducer, tests, min(times) if times else None, frame))
    return findings


def not_applicable_reason(records: Iterable[Mapping]) -> str | None:
    """Why a suite does not apply to the driver, from its tests' records: the reason its tests
    were skipped as not applicable (the most common), when every test it ran was; None otherwise."""
    reasons: dict[str, int] = {}
    seen = False
    for record in records:
        seen = True
        skip = record.get("skip") or {}
        if record.get("outcome") != "skipped" or skip.get("kind") != "not-applicable":
            return None
        reason = str(skip.get("reason") or "")
        reasons[reason] = reasons.get(reason, 0) + 1
    if not seen:
        return None
    return max(reasons, key=lambda reason: reasons[reason])
