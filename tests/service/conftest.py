from __future__ import annotations

import textwrap

import pytest

from harness.service import DriverService

BROKEN_DRIVERS = textwrap.dedent(
    '''
    """Purpose-built broken drivers for the service's own tests."""
    import ctypes
    import os
    import time

    from reference_driver import ReferenceDevice
    from reference_driver.device import ReferencePreparedModel


    class _Broken(ReferencePreparedModel):
        def execute(self, request):
            behaviour = os.environ.get("BROKEN_BEHAVIOUR", "")
            if behaviour == "segfault":
                ctypes.string_at(0)
            if behaviour == "exit":
                os._exit(7)
            if behaviour == "hang":
                while True:
                    time.sleep(0.05)
            if behaviour == "raise":
                raise KeyError("driver bug")
            return super().execute(request)


    def factory():
        return ReferenceDevice(prepared_model_class=_Broken)
    '''
)


@pytest.fixture
def broken_driver(tmp_path):
    path = tmp_path / "broken_driver.py"
    path.write_text(BROKEN_DRIVERS)
    return f"{path}:factory"


@pytest.fixture
def service():
    service = DriverService("reference", timeout=10)
    yield service
    service.close()
