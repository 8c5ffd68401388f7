"""A suite's verdict carries its SPEC rule as a field (``ConformanceError.requirement``), which the
record, the certificate and ``harness score`` read, never only as a "[RULE]" tag in its message.

Read from the source: a check that fails only on a broken driver is otherwise found only when some
seeded bug happens to trip it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_TAG = re.compile(r"\[[A-Z]+(?:-[A-Z]+)?-\d+\]")


def _leading_text(node: ast.expr) -> str:
    """The literal start of a message expression ('' when it does not start with a literal)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    if isinstance(node, ast.BinOp):
        return _leading_text(node.left)
    return ""


def _tagged_without_field(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Assert) and node.msg is not None and _TAG.match(_leading_text(node.msg)):
            found.append(f"{where}: assert with a rule in its message (use require)")
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ConformanceError":
            tagged = node.args and _TAG.match(_leading_text(node.args[0]))
            if tagged and not any(keyword.arg == "requirement" for keyword in node.keywords):
                found.append(f"{where}: ConformanceError with a rule in its message only (use violation)")
    return found


def test_suite_verdicts_carry_their_rule_as_a_field() -> None:
    # suites/service checks the harness's own guarantees (SVC), not a driver: plain asserts there.
    sources = [p for p in sorted((ROOT / "suites").rglob("*.py")) if "service" not in p.relative_to(ROOT).parts]
    sources += sorted((ROOT / "harness" / "judging").glob("*.py"))
    assert len(sources) > 30
    found = [problem for path in sources for problem in _tagged_without_field(path)]
    assert not found, "\n".join(found)


def test_the_check_sees_both_forms(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text('assert ok, f"[POOL-1] outputs differ {x}"\n'
                      'raise ConformanceError("[DOM-ALLOC-3] refused")\n'
                      'raise ConformanceError("[DOM-ALLOC-3] refused", requirement="DOM-ALLOC-3")\n'
                      'assert ok, "outputs differ"\n', encoding="utf-8")
    found = _tagged_without_field(source, tmp_path)
    assert [line.split(":")[1] for line in found] == ["1", "2"]
