"""Expectations files: per-driver skips and xfails with reasons (``--expectations FILE``).

TOML, one table per entry::

    [[expect]]
    test = "suites/memory_domains/test_roles.py::test_token_roles*"   # node id, glob allowed
    action = "xfail"                                                   # or "skip"
    reason = "ioIndex check lands in driver 2.1"
    driver = "acme"                                                    # optional: only for this driver

An entry that matches no collected test is stale and reported at the end of the run.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.api.errors import ExpectationsError

__all__ = ["Expectation", "load_expectations"]

_ACTIONS = ("skip", "xfail")
_KEYS = {"test", "action", "reason", "driver"}


@dataclass(frozen=True)
class Expectation:
    test: str
    action: str
    reason: str
    driver: str = ""
    source: str = ""  # "file:line" or the plugin that declared it

    def applies_to(self, driver: str) -> bool:
        return not self.driver or self.driver == driver

    def matches(self, nodeid: str) -> bool:
        return fnmatch.fnmatchcase(nodeid, self.test) or fnmatch.fnmatchcase(nodeid, "*" + self.test.lstrip("*"))


def load_expectations(path: str | Path) -> list[Expectation]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ExpectationsError(f"expectations file {str(path)!r}: cannot read it: {error.strerror}") from None
    except UnicodeDecodeError as error:  # TOML is UTF-8 text
        raise ExpectationsError(f"expectations file {str(path)!r}: not UTF-8 text (byte {error.object[error.start]:#04x} "
                                f"at offset {error.start}); expected a TOML file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        if "(at end of document)" in message:  # name the last line rather than no line at all
            message = message.replace("(at end of document)", f"(at line {len(text.splitlines())}, end of document)")
        raise ExpectationsError(f"expectations file {path}: not valid TOML: {message}") from None
    unknown = set(data) - {"expect"}
    if unknown:
        raise ExpectationsError(f"expectations file {path}: unknown top-level key(s) {sorted(unknown)}; expected [[expect]] tables")
    header_lines = [i + 1 for i, line in enumerate(text.splitlines()) if re.match(r"\s*\[\[\s*expect\s*\]\]", line)]
    entries = data.get("expect", [])
    if not isinstance(entries, list):
        raise ExpectationsError(f"expectations file {path}: 'expect' must be a list of [[expect]] tables")
    expectations = []
    for number, entry in enumerate(entries):
        line = header_lines[number] if number < len(header_lines) else 0
        where = f"{path}:{line}"
        extra = set(entry) - _KEYS
        if extra:
            raise ExpectationsError(f"{where}: unknown key(s) {sorted(extra)}; allowed: {sorted(_KEYS)}")
        for key in ("test", "action", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise ExpectationsError(f"{where}: entry needs a non-empty string {key!r}")
        if entry["action"] not in _ACTIONS:
            raise ExpectationsError(f"{where}: action {entry['action']!r} is not one of {', '.join(_ACTIONS)}")
        expectations.append(Expectation(entry["test"], entry["action"], entry["reason"], entry.get("driver", ""), where))
    return expectations
