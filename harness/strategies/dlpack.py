"""The DLPack tensors the packed-function tests send (`dlpack_exports`), among them ones numpy never
exports: ones whose ``byte_offset`` is not zero, and ones on a device other than the CPU.

DLPack locates a tensor's first element at ``data + byte_offset``; numpy folds any offset into
``data``, so a consumer that ignores ``byte_offset`` passes every test made from numpy arrays.
Likewise numpy only exports CPU tensors, so a consumer that takes every tensor for a CPU one
passes them all.  `DLPackExport` hands a numpy array over with its offset kept apart, as a view
into a larger allocation does in TVM's runtime, and on the device it is told: one whose memory
the host reads (CUDA host or managed memory), so that what comes back can be read here.

Their dtypes are every one numpy holds that DLPack has a code for: the five most tensors have,
and the others (`WIDER_DTYPES`) behind a swarm switch, on in one example of `WIDER_ONE_IN`.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .swarm import switch
from .values import integers, sampled, shapes

__all__ = ["COMMON_DTYPES", "CPU", "DLPACK_DTYPES", "HOST_READABLE_DEVICES", "WIDER_DTYPES", "WIDER_ONE_IN", "DLPackExport",
           "dlpack_arrays", "dlpack_exports"]

#: (DLPack device type, device id) of the CPU: kDLCPU, the only device numpy exports from
CPU = (1, 0)
#: the devices whose memory the host can read: the CPU, kDLCUDAHost, kDLCUDAManaged
HOST_READABLE_DEVICES: tuple[tuple[int, int], ...] = (CPU, (3, 0), (13, 0), (13, 1))
#: numpy dtype kind -> DLPack type code (kDLInt, kDLUInt, kDLFloat, kDLBool)
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}
#: The dtypes a tensor crosses with most, as (DLPack type code, bits).
COMMON_DTYPES = {"float32": (2, 32), "float64": (2, 64), "int32": (0, 32), "int64": (0, 64), "uint8": (1, 8)}
#: Every other dtype a DLPack tensor has that numpy holds: DLPack's integer and float codes at
#: every width, and its bool (kDLBool, 8 bits).  Complex (kDLComplex) tvm-ffi does not take.
WIDER_DTYPES = {"int8": (0, 8), "int16": (0, 16), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
                "float16": (2, 16), "bool": (6, 8)}
#: (DLPack type code, bits) of every dtype the packed-function tests send.
DLPACK_DTYPES = {**COMMON_DTYPES, **WIDER_DTYPES}
#: Examples per draw of the wider dtypes: on in about one example of this many (swarm).
WIDER_ONE_IN = 24


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


class _ManagedTensor(ctypes.Structure):
    # the deleter as a plain pointer: libc's free, which releases the one block this struct heads
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]
_FREE = ctypes.cast(_libc.free, ctypes.c_void_p).value
# A prototype of our own: ctypes.pythonapi's function objects are shared by every module in the
# process, and another library sets PyCapsule_New's argument types to its own.
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))


class DLPackExport:
    """A DLPack producer (``__dlpack__``) of ``array`` whose ``data`` points ``lead`` elements
    before the allocation's first element, and whose ``byte_offset`` covers those and the view's
    own offset in it; the tensor says it is on ``device``, one of `HOST_READABLE_DEVICES`.
    ``array`` stays the values' owner: keep this object alive while the consumer's tensor is in use."""

    def __init__(self, array: np.ndarray, lead: int, device: tuple[int, int] = CPU) -> None:
        if array.dtype.kind not in _CODES:
            raise ValueError(f"no DLPack type code for {array.dtype}")
        if device not in HOST_READABLE_DEVICES:
            raise ValueError(f"device {device} is not one whose memory the host reads: {HOST_READABLE_DEVICES}")
        self.device = device
        item = array.itemsize
        # a copy of the array in a block with ``lead`` elements in front, the view's strides kept
        low = sum(s * (n - 1) for s, n in zip(array.strides, array.shape) if s < 0)
        high = sum(s * (n - 1) for s, n in zip(array.strides, array.shape) if s > 0) + item
        self._block = np.zeros(lead * item + high - low, np.uint8)
        first = lead * item - low  # a multiple of the item size, as every stride is
        self.array = np.lib.stride_tricks.as_strided(self._block[first:].view(array.dtype), array.shape, array.strides)
        self.array[...] = array
        self.byte_offset = self.array.ctypes.data - self._block.ctypes.data
        self._dtype = _DataType(_CODES[array.dtype.kind], item * 8, 1)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **_: object) -> object:
        ndim = self.array.ndim
        size = ctypes.sizeof(_ManagedTensor) + 16 * ndim
        address = _libc.malloc(size)
        if not address:
            raise MemoryError("no memory for a DLManagedTensor")
        axes = (ctypes.c_int64 * (2 * ndim)).from_address(address + ctypes.sizeof(_ManagedTensor))
        for axis, (side, stride) in enumerate(zip(self.array.shape, self.array.strides)):
            axes[axis], axes[ndim + axis] = side, stride // self.array.itemsize
        managed = _ManagedTensor.from_address(address)
        managed.dl_tensor = _Tensor(self._block.ctypes.data, _Device(*self.device), ndim, self._dtype, ctypes.addressof(axes),
                                    ctypes.addressof(axes) + 8 * ndim, self.byte_offset)
        managed.manager_ctx = None
        managed.deleter = _FREE
        return _capsule_new(address, b"dltensor", None)


# One array strategy per dtype, made once: hypothesis validates every new strategy object before
# its first draw, which cost more than the draw when built inside each example.
# Rank 0 too: a scalar tensor has no shape or strides to walk, which bindings built around an axis miss.
_ARRAYS = {dtype: hnp.arrays(dtype, shapes(min_rank=0, max_rank=3, max_side=6)) for dtype in DLPACK_DTYPES}
_OFFSET_APART = st.booleans()


@st.composite
def dlpack_arrays(draw) -> np.ndarray:
    """An array of a DLPack dtype (a wider one with the swarm switch on), strided or reversed."""
    wider = switch(draw, "tensors of DLPack's other dtypes", WIDER_ONE_IN)
    dtype = draw(sampled(tuple(sorted(WIDER_DTYPES if wider else COMMON_DTYPES))), label="dtype")
    base = draw(_ARRAYS[dtype], label="array")
    # strided views too, and reversed ones: DLPack strides are signed, a reversed axis's negative
    steps = tuple(draw(sampled((1, 2, -1, -2)), label="step") for _ in range(base.ndim))
    return base[tuple(slice(None, None, s) for s in steps)] if base.ndim else base  # base[()] is no array


@st.composite
def dlpack_exports(draw) -> tuple[object, np.ndarray, tuple[int, int]]:
    """An array, what hands it over by DLPack, and the device it says the tensor is on: numpy
    itself (byte_offset always 0, always the CPU), or a producer whose data pointer lies before
    the first element, byte_offset making up the rest, as a view in TVM's runtime is handed over,
    on a device whose memory the host reads (CPU, CUDA host or managed memory)."""
    array = draw(dlpack_arrays())
    if not draw(_OFFSET_APART, label="byte_offset apart"):
        return array, array, CPU
    lead = draw(integers(0, 4), label="elements from data to the allocation's first")
    device = draw(sampled(HOST_READABLE_DEVICES), label="device (DLPack type, id)")
    export = DLPackExport(array, lead, device)
    note(f"byte_offset {export.byte_offset}")
    return export, export.array, device
