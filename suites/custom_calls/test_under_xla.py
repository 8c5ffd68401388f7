"""The same targets under real XLA: typed-FFI handlers registered with jax.ffi and run under
jax.jit on the CPU, compared with the same numpy references, their operands as XLA holds them
after the call untouched (CC-5; optional extra: xla).  Red zones are the harness's own caller's:
XLA allocates the buffers here, so a write past an output is checked there, not under XLA."""

from __future__ import annotations

import pytest
from hypothesis import assume, event, given, note
from hypothesis import strategies as st

from harness.judging.custom_calls import XlaCallFailed, call_under_xla, compare_outputs, describe_case
from harness.judging.verdict import require
from harness.api.errors import ConformanceError, calls_into_driver
from harness.strategies.custom_calls import call_cases, operand_values

from ._calls import OPAQUE_EDGE_CASES, echo_case

pytestmark = pytest.mark.usefixtures("under_xla")


@pytest.mark.requirement("CC-2", "CC-4", "CC-5")
@pytest.mark.targets(failing=False, xla=True)
@given(data=st.data())
def test_outputs_match_the_reference_under_jit(custom_calls, target, data) -> None:
    case = data.draw(call_cases(target.cases), label="case")
    values = data.draw(operand_values(case.operands), label="operand values")
    note(describe_case(target, case))
    event(f"{target.name} under XLA")
    outputs = call_under_xla(custom_calls, target, case, values)
    try:
        compare_outputs("CC-2", target, case, values, outputs)
    except ConformanceError:
        # XLA's CPU runtime does arithmetic with subnormals flushed to zero (FTZ/DAZ), numpy
        # does not; copies stay bit-exact.  Equal under flushing is equal.
        compare_outputs("CC-2", target, case, values, outputs, denormals_are_zero=True)


@pytest.mark.requirement("CC-4")
@pytest.mark.parametrize("opaques", OPAQUE_EDGE_CASES.values(), ids=OPAQUE_EDGE_CASES.keys())
@pytest.mark.targets(names=("echo_opaque",), xla=True)
def test_opaque_edge_cases_under_jit(custom_calls, target, opaques) -> None:
    """The typed-FFI handler is code of its own beside the C target: the lengths where opaque
    handling breaks, under XLA too (there opaque is an array attribute, not a pointer and a length)."""
    for opaque in opaques:
        case = echo_case(opaque)
        compare_outputs("CC-4", target, case, (), call_under_xla(custom_calls, target, case, ()))


@pytest.mark.requirement("CC-6")
@pytest.mark.targets(failing=True, xla=True)
@given(data=st.data())
def test_status_errors_become_exceptions_with_the_message(custom_calls, target, data) -> None:
    case = data.draw(call_cases(target.cases), label="case")
    assume(b"\0" not in case.opaque)  # XLA carries error messages as C strings: a NUL ends them
    expected = calls_into_driver(target.error)(case.opaque)  # the plugin's declaration: its code
    with pytest.raises(XlaCallFailed) as raised:  # a crash or a hang is its own failure (SVC-1, SVC-2)
        call_under_xla(custom_calls, target, case, data.draw(operand_values(case.operands), label="operand values"))
    require(expected in raised.value.message, "CC-6", f"XLA raised {raised.value!r}; expected the message {expected!r}")
