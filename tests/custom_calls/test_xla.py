"""XLA itself, through the reference's typed-FFI handlers: signature checks and aliasing."""

from __future__ import annotations

import numpy as np
import pytest

from harness.service.xla import call_handler, unavailable

WHY_NOT = unavailable()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "jax is available")


@pytest.fixture(scope="module")
def library() -> str:
    from reference_driver.custom_calls import build_xla_targets

    return str(build_xla_targets())


def _shape(dims, dtype):
    import jax

    return jax.ShapeDtypeStruct(dims, np.dtype(dtype))


def _rejected_by_xla():
    """The exception XLA raises when a call fails at execution (its type, not its wording)."""
    import jax

    return jax.errors.JaxRuntimeError


def _well_formed_call(library: str, dtype: str) -> list[np.ndarray]:
    return call_handler(library, "HarnessAddMod128", [_shape((2048,), dtype)],
                        [np.ones(128, dtype), np.ones(2048, dtype)])


# Each wrong call is set beside the well-formed one it differs from: the same library and target
# run, so the rejection is the handler's signature check, not a broken build.
def test_wrong_argument_count_is_rejected_and_reported(library) -> None:
    assert [out.shape for out in _well_formed_call(library, "float32")] == [(2048,)]
    with pytest.raises(_rejected_by_xla()):
        call_handler(library, "HarnessAddMod128", [_shape((2048,), "float32")], [np.ones(128, np.float32)])


def test_wrong_dtype_is_rejected_and_reported(library) -> None:
    assert [out.shape for out in _well_formed_call(library, "float32")] == [(2048,)]
    with pytest.raises(_rejected_by_xla()):
        call_handler(library, "HarnessAddMod128", [_shape((2048,), "int32")],
                     [np.ones(128, np.int32), np.ones(2048, np.int32)])


def test_input_output_aliases_give_the_target_one_address(library) -> None:
    x = np.arange(16, dtype=np.float32)
    results = [_shape((16,), "float32"), _shape((2,), "uint64")]
    y, addresses = call_handler(library, "HarnessAliasProbe", results, [x], input_output_aliases={0: 0})
    assert addresses[0] == addresses[1] and np.array_equal(y, x)
    y, addresses = call_handler(library, "HarnessAliasProbe", results, [x])
    assert addresses[0] != addresses[1] and np.array_equal(y, x)
