"""XLA itself, through the reference's typed-FFI handlers: signature checks and aliasing."""

from __future__ import annotations

import numpy as np
import pytest

from harness.judging.xla import call_handler, unavailable

WHY_NOT = unavailable()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "jax is available")


@pytest.fixture(scope="module")
def library() -> str:
    from reference_driver.custom_calls import build_xla_targets

    return str(build_xla_targets())


def _shape(dims, dtype):
    import jax

    return jax.ShapeDtypeStruct(dims, np.dtype(dtype))


def test_wrong_argument_count_is_rejected_and_reported(library) -> None:
    with pytest.raises(Exception, match="(?i)number of arguments"):
        call_handler(library, "HarnessAddMod128", [_shape((2048,), "float32")], [np.ones(128, np.float32)])


def test_wrong_dtype_is_rejected_and_reported(library) -> None:
    with pytest.raises(Exception, match="(?i)dtype|data type|element type"):
        call_handler(library, "HarnessAddMod128", [_shape((2048,), "int32")],
                     [np.ones(128, np.int32), np.ones(2048, np.int32)])


def test_input_output_aliases_give_the_target_one_address(library) -> None:
    x = np.arange(16, dtype=np.float32)
    results = [_shape((16,), "float32"), _shape((2,), "uint64")]
    y, addresses = call_handler(library, "HarnessAliasProbe", results, [x], input_output_aliases={0: 0})
    assert addresses[0] == addresses[1] and np.array_equal(y, x)
    y, addresses = call_handler(library, "HarnessAliasProbe", results, [x])
    assert addresses[0] != addresses[1] and np.array_equal(y, x)
