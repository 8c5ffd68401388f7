"""The ONNX Runtime driver (``onnxruntime``): a real engine behind the Driver API.

Installed with the ``ort`` extra (``pip install 'driver-harness[ort]'``).  See `driver` for
what it supports and how; docs/drivers.md walks through it as the example to copy.
"""

from __future__ import annotations

from harness import DriverSpec, hookimpl


def ort_device():
    from harness.api.errors import DriverLoadError

    try:
        from .driver import OrtDevice

        return OrtDevice()
    except ImportError as error:
        raise DriverLoadError(f"the onnxruntime driver needs onnxruntime and onnx ({error.name} is missing): "
                              "pip install 'driver-harness[ort]'") from None


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    return [DriverSpec("onnxruntime", ort_device, "ONNX Runtime on the CPU: float32 (int32 and bool8 where ONNX "
                                                  "takes them) arithmetic, activations, element-wise functions, "
                                                  "comparisons, convolutions, pools, resizes, shape and layout "
                                                  "operations, reductions, instance normalization; 8-bit quantized "
                                                  "conversions, convolutions, fully connected, max pool, resizes, "
                                                  "RELUs and data moves; no memory domains")]
