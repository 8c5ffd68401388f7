"""FFI-4: tensors cross by DLPack without copying: same data pointer, shape, dtype, strides, device."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.judging.verdict import require
from harness.strategies.dlpack import OffsetExport
from harness.strategies.values import integers, sampled, shapes

# the driver's code runs in this process: each test makes its call in a forked child (a crash is reported)
pytestmark = pytest.mark.in_forked_child

DTYPES = {"float32": (2, 32), "float64": (2, 64), "int32": (0, 32), "int64": (0, 64), "uint8": (1, 8)}
# One array strategy per dtype, made once: hypothesis validates every new strategy object before
# its first draw, which cost more than the draw when built inside each example.
_ARRAYS = {dtype: hnp.arrays(dtype, shapes(min_rank=1, max_rank=3, max_side=6)) for dtype in DTYPES}
_OFFSET_APART = st.booleans()


@st.composite
def arrays(draw):
    dtype = draw(sampled(tuple(sorted(DTYPES))), label="dtype")
    base = draw(_ARRAYS[dtype], label="array")
    # strided views too, and reversed ones: DLPack strides are signed, a reversed axis's negative
    steps = tuple(draw(sampled((1, 2, -1, -2)), label="step") for _ in range(base.ndim))
    return base[tuple(slice(None, None, s) for s in steps)]


@st.composite
def exports(draw):
    """An array, and what hands it over by DLPack: numpy itself (byte_offset always 0), or a
    producer whose data pointer lies before the first element, byte_offset making up the rest,
    as a view in TVM's runtime is handed over."""
    array = draw(arrays())
    if not draw(_OFFSET_APART, label="byte_offset apart"):
        return array, array
    lead = draw(integers(0, 4), label="elements from data to the allocation's first")
    export = OffsetExport(array, lead)
    note(f"byte_offset {export.byte_offset}")
    return export, export.array


@pytest.mark.requirement("FFI-4")
@given(sent=exports())
def test_tensors_cross_without_copying(probes, sent) -> None:
    import tvm_ffi

    export, array = sent
    pointer, shape, strides, code, bits, lanes, device_type, device_id = probes.tensor_info(tvm_ffi.from_dlpack(export))
    item = array.itemsize
    require(pointer == array.ctypes.data, "FFI-4", f"the callee saw the first element at {pointer:#x}, not "
            f"{array.ctypes.data:#x}: the tensor was copied, or its byte_offset not added to its data pointer")
    require(tuple(shape) == array.shape, "FFI-4", f"shape {tuple(shape)} != {array.shape}")
    elements = tuple(s // item for s in array.strides)
    require(tuple(strides) == elements, "FFI-4", f"strides {tuple(strides)} != {elements} (in elements)")
    require((code, bits, lanes) == (*DTYPES[array.dtype.name], 1), "FFI-4", f"dtype {(code, bits, lanes)} for {array.dtype}")
    require((device_type, device_id) == (1, 0), "FFI-4", "a CPU tensor arrived on another device")


@pytest.mark.requirement("FFI-4")
@given(sent=exports())
def test_a_returned_tensor_is_the_same_memory(probes, sent) -> None:
    import tvm_ffi

    export, array = sent
    back = np.from_dlpack(probes.tensor_echo(tvm_ffi.from_dlpack(export)))
    require(back.ctypes.data == array.ctypes.data and back.shape == array.shape and back.strides == array.strides, "FFI-4",
            f"the returned tensor is another one: data {back.ctypes.data:#x}, shape {back.shape}, strides {back.strides}; "
            f"sent {array.ctypes.data:#x}, {array.shape}, {array.strides}")
    require(np.shares_memory(back, array) and np.array_equal(back, array, equal_nan=array.dtype.kind == "f"), "FFI-4",
            "the returned tensor does not share the sent one's memory and values")
