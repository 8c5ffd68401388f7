"""The project's text is for its users and its next developer, not a diary: ``git log`` keeps the
history (which change, when, measured how), and CHANGELOG.md what changed for users.

So the README is a user's guide of at most 300 lines, and no document, comment or docstring names
a working session by number, cites a commit by its hash, or dates a measurement.  Comments and
docstrings say why the code is as it is now.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_LINES = 300
#: Where the code lives whose comments and docstrings are checked.
CODE_FOLDERS = ("harness", "reference_driver", "plugins", "suites", "tests", "benchmarks", ".ci")

#: What history looks like in prose.
DIARY = {
    "a working session by number": re.compile(r"\b[Ss]essions? \d+"),
    # 7 to 40 hexadecimal digits, with a digit and a letter, standing alone (not part of a longer
    # name, number, path or 0x literal): the way a commit is cited
    "a commit hash": re.compile(r"(?<![\w./-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])"),
    "a dated measurement": re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b"),
    "a day's conditions": re.compile(r"\b(?:on a|that|this|a) (?:slow|fast|quiet|busy|loaded|slower|faster) "
                                     r"(?:day|morning|afternoon|evening|hour)\b"),
}


def _documents() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return found + [path for folder in CODE_FOLDERS for path in sorted((ROOT / folder).rglob("*.md"))]


def _code_files() -> list[Path]:
    files = []
    for folder in CODE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            parts = path.relative_to(ROOT).parts
            if not path.is_file() or "build" in parts or "__pycache__" in parts or path.name.endswith(".mod.py"):
                continue
            if path.suffix in (".py", ".c", ".cc", ".h") or path.parent.name == ".ci":
                files.append(path)
    return files


def _python_prose(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python source."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                yield first.lineno, first.value.value
        # attribute docstrings: a string right after an assignment, and #: comments are comments
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for before, after in zip(node.body, node.body[1:]):
                if (isinstance(before, (ast.Assign, ast.AnnAssign)) and isinstance(after, ast.Expr)
                        and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
                    yield after.lineno, after.value.value


def _other_prose(path: Path, source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of the comments of a C or C++ source or a shell script."""
    pattern = r"#[^!\n].*" if path.suffix not in (".c", ".cc", ".h") else r"//.*|/\*.*?\*/"
    for match in re.finditer(pattern, source, flags=re.DOTALL if path.suffix in (".c", ".cc", ".h") else 0):
        yield source.count("\n", 0, match.start()) + 1, match.group(0)


@functools.cache
def _prose() -> list[tuple[str, int, str]]:
    """(file, line, text) of every document, comment and docstring of the project."""
    return list(_each_prose())


def _each_prose() -> Iterator[tuple[str, int, str]]:
    for path in _documents():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield str(path.relative_to(ROOT)), number, line
    for path in _code_files():
        source = path.read_text(encoding="utf-8", errors="replace")
        pieces = _python_prose(source) if path.suffix == ".py" else _other_prose(path, source)
        for number, text in pieces:
            yield str(path.relative_to(ROOT)), number, text


def test_the_readme_is_a_guide_of_at_most_300_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; reference material goes to docs/"


@pytest.mark.parametrize("what", list(DIARY))
def test_no_project_text_keeps_a_diary(what: str) -> None:
    pattern = DIARY[what]
    found = [f"{name}:{line}: {match.group(0)!r}" for name, line, text in _prose()
             if not (what == "a dated measurement" and name == "CHANGELOG.md")  # a release's date is no diary
             for match in pattern.finditer(text)]
    assert found == [], f"{what} in the project's text (git log keeps history): " + "; ".join(found[:40])


def test_the_checks_see_what_they_look_for() -> None:
    """The patterns catch the forms they exist for, and pass over their look-alikes."""
    hexes = "".join(("4d8", "4021"))
    assert DIARY["a commit hash"].search(f"measured against {hexes}, twice")
    assert not DIARY["a commit hash"].search(f"0x{hexes} 12345678 deadbeefcafe0123456789abcdef0123456789abcdef")
    assert DIARY["a working session by number"].search("Session 63 measured")
    assert not DIARY["a working session by number"].search("the pytest session's time")
    assert DIARY["a day's conditions"].search("on a slow day")
    lines = list(_python_prose('"""Module."""\n\nX = 1\n"""About X."""\n\n\ndef f():\n    """F."""\n    return 1  # why\n'))
    assert sorted(text for _, text in lines) == sorted(["# why", "Module.", "F.", "About X."])
