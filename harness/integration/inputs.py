"""What the harness reads from its command lines and options, checked: numbers and paths.

One checker per kind of value, shared by the ``harness`` command's options (argparse) and the
pytest plugin's (``addoption(type=...)``): a bad value is one line naming the option, the value and
what is allowed, never a traceback.  A number is finite: ``nan`` and ``inf`` parse as floats in
Python, and every comparison with ``nan`` is false, so a check such as ``value <= 0`` lets it by
(``harness fuzz --minutes nan`` ran until it was killed).  A path is checked before the run starts,
not at the first write an hour into it.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Number", "directory_problem", "file_problem", "one_of"]


@dataclass(frozen=True)
class Number:
    """The numbers an option allows: ``kind`` (int or float), from ``low`` (excluded when
    ``above``; None: no bound) to ``high`` (None: no bound), always finite; ``unit`` and ``note``
    say what they count ("seconds"; "0: no limit")."""

    kind: type
    low: float | None = 0
    above: bool = True
    high: float | None = None
    unit: str = ""
    note: str = ""

    def allowed(self) -> str:
        """What is allowed, in words: "a number above zero and at most 86400 (seconds)"."""
        bounds = []
        if self.low is not None:
            low = "zero" if self.low == 0 else _written(self.low)
            bounds.append(f"{'above' if self.above else 'at least'} {low}")
        if self.high is not None:
            bounds.append(f"at most {_written(self.high)}")
        words = f"{'a whole number' if self.kind is int else 'a finite number'}"
        if bounds:
            words += " " + " and ".join(bounds)
        detail = "; ".join(part for part in (self.unit, self.note) if part)
        return f"{words} ({detail})" if detail else words

    def read(self, text: str) -> int | float:
        """The value ``text`` names; a ValueError saying what is wrong with it otherwise (without
        the option: the caller names it)."""
        try:
            value = self.kind(text.strip())
        except (ValueError, OverflowError):
            raise ValueError(f"not {'a whole number' if self.kind is int else 'a number'}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("not a finite number")
        if self.low is not None and (value <= self.low if self.above else value < self.low) or (
                self.high is not None and value > self.high):
            raise ValueError("out of range")
        return value

    def message(self, option: str, text: str, why: str) -> str:
        return f"{option}={text}: {why}; allowed: {self.allowed()}"

    def for_argparse(self) -> Callable[[str], int | float]:
        """An argparse ``type``: argparse says "argument --minutes: 'nan': not a finite number; allowed: ..."."""

        def parse(text: str) -> int | float:
            try:
                return self.read(text)
            except ValueError as error:
                raise argparse.ArgumentTypeError(f"{text!r}: {error}; allowed: {self.allowed()}") from None

        parse.__name__ = self.allowed()
        return parse

    def for_pytest(self, option: str) -> Callable[[str], int | float]:
        """A pytest ``addoption`` ``type``: a bad value is pytest's usage error, one line
        ("ERROR: --driver-timeout=nan: not a finite number; allowed: ..."), where argparse's own error
        would print pytest's usage and its ini file too."""

        def parse(text: str) -> int | float:
            try:
                return self.read(text)
            except ValueError as error:
                import pytest

                raise pytest.UsageError(self.message(option, text, str(error))) from None

        parse.__name__ = self.allowed()
        return parse


def one_of(option: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    """A pytest ``addoption`` ``type`` in place of ``choices=``: a value not among ``choices`` is one
    line naming them (pytest's own error for ``choices`` prints its usage and its ini file too)."""

    def parse(text: str) -> str:
        if text not in choices:
            import pytest

            raise pytest.UsageError(f"{option}={text}: not one of {', '.join(choices)}")
        return text

    parse.__name__ = f"one of {', '.join(choices)}"
    return parse


def _written(bound: float) -> str:
    """A bound as a person writes it: 31622400, not 3.16224e+07."""
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def _nearest_existing(path: str) -> str:
    """``path``, or the nearest folder above it that exists (or, under a file, that file)."""
    path = os.path.abspath(path)
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def directory_problem(path: str, make: bool = False) -> str | None:
    """Why the harness cannot write files into the directory ``path``, or None when it can: it is
    a directory it can write into, or it can be made (``make``: it is made now).  Checked by
    writing (an unnamed temporary file), not by permission bits: a read-only file system, an
    immutable directory or root's privileges say otherwise."""
    full = os.path.abspath(path)
    existing = _nearest_existing(full)
    if not os.path.isdir(existing):
        if existing == full:
            return f"{path} is a file, not a directory"
        return f"cannot make {path}: {existing} is a file, not a directory"
    if make:
        try:
            os.makedirs(full, exist_ok=True)
        except OSError as error:
            return f"cannot make {path}: {error.strerror}"
        existing = full
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        return f"cannot write into {existing}: {error.strerror}"
    return None


def file_problem(path: str) -> str | None:
    """Why the harness cannot write (append to) the file ``path``, or None when it can: it exists
    and is no directory and can be written, or its directory can hold it (or be made)."""
    full = os.path.abspath(path)
    if os.path.isdir(full):
        return f"{path} is a directory, not a file"
    if os.path.exists(full):
        if not os.access(full, os.W_OK):
            return f"cannot write {path}: permission denied"
        return None
    return directory_problem(os.path.dirname(full))
