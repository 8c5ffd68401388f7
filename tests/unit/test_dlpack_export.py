"""DLPackExport hands an array over by DLPack with its byte_offset kept apart from its data pointer, on the
device it is told."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from harness.strategies import dlpack
from harness.strategies.dlpack import HOST_READABLE_DEVICES, DLPackExport

_BASE = np.arange(24, dtype=np.int32).reshape(4, 6)


@pytest.mark.parametrize("view", [_BASE, _BASE[::2, ::-1], _BASE[::-1, 1::2], _BASE[1], _BASE[1, 2, ...]],
                         ids=["whole", "reversed-columns", "reversed-rows", "row", "scalar"])
@pytest.mark.parametrize("lead", [0, 3])
def test_a_consumer_finds_the_values_at_data_plus_byte_offset(view: np.ndarray, lead: int) -> None:
    export = DLPackExport(view, lead)
    received = np.from_dlpack(export)
    assert np.array_equal(received, view) and received.strides == view.strides
    assert received.ctypes.data == export.array.ctypes.data  # the same memory: no copy on the way
    assert export.byte_offset >= lead * view.itemsize  # the leading elements and the view's own offset


def test_a_dtype_with_no_dlpack_code_is_refused() -> None:
    complex_values = np.zeros(2, np.complex64)
    with pytest.raises(ValueError, match=re.escape(str(complex_values.dtype))):  # the message names the dtype
        DLPackExport(complex_values, 1)


def test_another_librarys_capsule_prototype_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """ctypes.pythonapi's functions are shared by the whole process; a library that gives
    PyCapsule_New a destructor type of its own (the test command's workers had one) must not
    break the export."""
    monkeypatch.setattr(ctypes.pythonapi.PyCapsule_New, "argtypes",
                        [ctypes.c_void_p, ctypes.c_char_p, ctypes.CFUNCTYPE(None, ctypes.c_void_p)])
    view = _BASE[::-1, ::2]
    assert np.array_equal(np.from_dlpack(DLPackExport(view, 2)), view)


_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


@pytest.mark.parametrize("device", HOST_READABLE_DEVICES, ids=lambda d: f"{d[0]}-{d[1]}")
def test_the_tensor_is_on_the_device_asked_for(device: tuple[int, int]) -> None:
    export = DLPackExport(_BASE[::2], 1, device)
    assert export.__dlpack_device__() == device
    address = _capsule_pointer(export.__dlpack__(), b"dltensor")
    managed = dlpack._ManagedTensor.from_address(address)
    try:
        assert (managed.dl_tensor.device.device_type, managed.dl_tensor.device.device_id) == device
    finally:  # the capsule was never consumed: release its tensor as a consumer would
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)(address)
    assert np.array_equal(np.from_dlpack(export), _BASE[::2])  # memory the host reads, read here


def test_a_device_the_host_cannot_read_is_refused() -> None:
    cuda = (2, 0)  # kDLCUDA: device memory, which the values read back here could not be
    with pytest.raises(ValueError, match=re.escape(str(cuda))):
        DLPackExport(_BASE, 0, cuda)
