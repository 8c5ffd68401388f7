"""FFI-4: tensors cross by DLPack without copying: same data pointer, shape, dtype, strides, device."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from harness.judging.verdict import require
from harness.strategies.dlpack import DLPACK_DTYPES, dlpack_exports

# the driver's code runs in this process: each test makes its call in a forked child (a crash is reported)
pytestmark = pytest.mark.in_forked_child


@pytest.mark.requirement("FFI-4")
@given(sent=dlpack_exports())
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
@given(sent=dlpack_exports())
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
