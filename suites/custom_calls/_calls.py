"""The step every custom-call test shares: draw a target, a case and operands; call; check."""

from __future__ import annotations

from hypothesis import event, note
from hypothesis import strategies as st

from harness.api.custom_calls import CallCase
from harness.api.shapes import Leaf
from harness.integration.skips import not_applicable
from harness.judging.custom_calls import assert_call_conforms, describe_case, run_case
from harness.strategies.custom_calls import call_cases, fixed_values, operand_values


#: Opaque bytes where length handling breaks (CC-4), each case one or more opaques checked in turn:
#: none, a lone byte, a NUL inside, and large.  A lone byte is checked as two values in one case: a
#: target that never copies a lone byte leaves its output byte as allocated (zero in a fresh process,
#: whatever earlier tests left in a long one), and no one leftover value can equal both, so the case
#: fails on that target however memory was left, and its reproducer, run alone, fails too.  With one
#: value per case, "one NUL" caught it only through leftover memory, and its reproducer could
#: pass alone.  The NUL is kept because a C-string reading of the opaque gets its length wrong there.
OPAQUE_EDGE_CASES: dict[str, tuple[bytes, ...]] = {
    "empty": (b"",), "one byte, then one NUL": (b"\x5a", b"\0"), "embedded NUL": (b"a\0b",),
    "4 KiB of NULs": (b"\0" * 4096,), "256 KiB": (bytes(range(256)) * 1024,)}


def echo_case(opaque: bytes) -> CallCase:
    """The case of an ``echo_opaque`` probe: no operands, the length and the bytes out."""
    return CallCase((), Leaf("uint8", (8 + len(opaque),)), opaque)


def call_and_check(data: st.DataObject, custom_calls, target, requirement: str, case=None):
    case = case if case is not None else data.draw(call_cases(target.cases, reaching=True), label="case")
    values = data.draw(operand_values(case.operands), label="operand values")
    event(f"{target.name} on {target.platform}")
    note(describe_case(target, case))
    outcome = run_case(custom_calls, target, case, values)
    assert_call_conforms(requirement, target, case, values, outcome)
    return outcome


def check_fixed_cases(custom_calls, target, requirement: str, cases_of, none_because: str) -> None:
    """Call ``target`` on each of the fixed cases ``cases_of`` makes of its case space (operands
    from a seeded generator) and check each; not applicable (capability custom_call_targets) when
    there is none."""
    cases = cases_of(target.cases) if target.cases is not None else []
    if not cases:
        not_applicable("custom_call_targets", f"{target.name} {none_because}")
    for number, case in enumerate(cases):
        values = tuple(fixed_values(operand, seed=number) for operand in case.operands)
        assert_call_conforms(requirement, target, case, values, run_case(custom_calls, target, case, values))
