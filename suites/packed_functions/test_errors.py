"""FFI-3: errors cross with their kind and message; a wrong argument count or type is a TypeError
naming the function, never a crash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.judging.verdict import require

# the driver's code runs in this process: each test makes its call in a forked child (a crash is reported)
pytestmark = pytest.mark.in_forked_child

KINDS = {"ValueError": ValueError, "TypeError": TypeError, "RuntimeError": RuntimeError,
         "IndexError": IndexError, "KeyError": KeyError, "AttributeError": AttributeError}


@pytest.mark.requirement("FFI-3")
@given(kind=st.sampled_from(sorted(KINDS)),
       message=st.one_of(st.text(st.characters(blacklist_categories=("Cs",)), max_size=80),
                         st.text(st.characters(blacklist_categories=("Cs",)), min_size=201, max_size=1200)))
def test_errors_cross_with_kind_and_message(probes, kind, message) -> None:
    with pytest.raises(Exception) as raised:
        probes.raise_error(kind, message)
    require(isinstance(raised.value, KINDS[kind]), "FFI-3", f"raised {type(raised.value).__name__}, expected {kind}")
    text = str(raised.value.args[0]) if raised.value.args else str(raised.value)  # KeyError: str() is a repr
    require(message in text, "FFI-3", f"message {message!r} lost: {text!r}")


@pytest.mark.requirement("FFI-3")
@pytest.mark.parametrize("arguments", [(1,), (1, 2, 3), ("a", 1), (1.5, 1)],
                         ids=["too few", "too many", "str for int", "float for int"])
def test_wrong_arguments_are_a_type_error_naming_the_function(probes, arguments) -> None:
    # FFI-3 asks for the kind and the function's name; the rest of the wording is the binding's own.
    with pytest.raises(TypeError) as raised:
        probes.add_int(*arguments)
    text = str(raised.value)
    require("add_int" in text, "FFI-3", f"add_int{arguments!r} raised a TypeError that does not name add_int: {text!r}")
    require(probes.add_int(1, 2) == 3, "FFI-3", "add_int stopped working after a call with wrong arguments")
