"""FFI-4: tensors cross by DLPack without copying: same data pointer, shape, dtype, strides, device."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harness.judging.verdict import require
from harness.strategies.dlpack import COMMON_DTYPES, CPU, DLPACK_DTYPES, HOST_READABLE_DEVICES, WIDER_DTYPES, DLPackExport
from harness.strategies.swarm import switch
from harness.strategies.values import integers, sampled, shapes

# the driver's code runs in this process: each test makes its call in a forked child (a crash is reported)
pytestmark = pytest.mark.in_forked_child

#: Examples per draw of the wider dtypes: on in about one example of this many (swarm).
WIDER_ONE_IN = 16
# One array strategy per dtype, made once: hypothesis validates every new strategy object before
# its first draw, which cost more than the draw when built inside each example.
# Rank 0 too: a scalar tensor has no shape or strides to walk, which bindings built around an axis miss.
_ARRAYS = {dtype: hnp.arrays(dtype, shapes(min_rank=0, max_rank=3, max_side=6)) for dtype in DLPACK_DTYPES}
_OFFSET_APART = st.booleans()


@st.composite
def arrays(draw):
    wider = switch(draw, "tensors of DLPack's other dtypes", WIDER_ONE_IN)
    dtype = draw(sampled(tuple(sorted(WIDER_DTYPES if wider else COMMON_DTYPES))), label="dtype")
    base = draw(_ARRAYS[dtype], label="array")
    # strided views too, and reversed ones: DLPack strides are signed, a reversed axis's negative
    steps = tuple(draw(sampled((1, 2, -1, -2)), label="step") for _ in range(base.ndim))
    return base[tuple(slice(None, None, s) for s in steps)] if base.ndim else base  # base[()] is no array


@st.composite
def exports(draw):
    """An array, what hands it over by DLPack, and the device it says the tensor is on: numpy
    itself (byte_offset always 0, always the CPU), or a producer whose data pointer lies before
    the first element, byte_offset making up the rest, as a view in TVM's runtime is handed over,
    on a device whose memory the host reads (CPU, CUDA host or managed memory)."""
    array = draw(arrays())
    if not draw(_OFFSET_APART, label="byte_offset apart"):
        return array, array, CPU
    lead = draw(integers(0, 4), label="elements from data to the allocation's first")
    device = draw(sampled(HOST_READABLE_DEVICES), label="device (DLPack type, id)")
    export = DLPackExport(array, lead, device)
    note(f"byte_offset {export.byte_offset}")
    return export, export.array, device


@pytest.mark.requirement("FFI-4")
@given(sent=exports())
def test_tensors_cross_without_copying(probes, sent) -> None:
    import tvm_ffi

    export, array, device = sent
    pointer, shape, strides, code, bits, lanes, device_type, device_id = probes.tensor_info(tvm_ffi.from_dlpack(export))
    item = array.itemsize
    require(pointer == array.ctypes.data, "FFI-4", f"the callee saw the first element at {pointer:#x}, not "
            f"{array.ctypes.data:#x}: the tensor was copied, or its byte_offset not added to its data pointer")
    require(tuple(shape) == array.shape, "FFI-4", f"shape {tuple(shape)} != {array.shape}")
    elements = tuple(s // item for s in array.strides)
    require(tuple(strides) == elements, "FFI-4", f"strides {tuple(strides)} != {elements} (in elements)")
    require((code, bits, lanes) == (*DLPACK_DTYPES[array.dtype.name], 1), "FFI-4", f"dtype {(code, bits, lanes)} for {array.dtype}")
    require((device_type, device_id) == device, "FFI-4", f"a tensor sent on device {device} (DLPack type, id) "
            f"arrived on {(device_type, device_id)}")


@pytest.mark.requirement("FFI-4")
@given(sent=exports())
def test_a_returned_tensor_is_the_same_memory(probes, sent) -> None:
    import tvm_ffi

    export, array, device = sent
    returned = probes.tensor_echo(tvm_ffi.from_dlpack(export))
    came_back_on = tuple(returned.__dlpack_device__())
    require(came_back_on == device, "FFI-4", f"a tensor sent on device {device} (DLPack type, id) came back on "
            f"{came_back_on}")
    back = np.from_dlpack(returned)
    require(back.ctypes.data == array.ctypes.data and back.shape == array.shape and back.strides == array.strides, "FFI-4",
            f"the returned tensor is another one: data {back.ctypes.data:#x}, shape {back.shape}, strides {back.strides}; "
            f"sent {array.ctypes.data:#x}, {array.shape}, {array.strides}")
    require(np.shares_memory(back, array) and np.array_equal(back, array, equal_nan=array.dtype.kind == "f"), "FFI-4",
            "the returned tensor does not share the sent one's memory and values")
