"""Nothing the driver service sends can run code in the harness (issue 16).

A hostile or broken driver whose reply would unpickle into a call (here ``os._exit(0)``, which
would end the harness with exit code 0 and forge a passing run) gets a failure naming the call;
the harness decodes replies with an allow-list of its own types.
"""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

from harness.judging.builders import binary_model, pack_request
from harness.service import DriverService
from harness.service.client import RemoteError

FORGING_DRIVER = textwrap.dedent(
    '''
    import os

    from reference_driver import ReferenceDevice
    from reference_driver.device import ReferencePreparedModel


    class _Exit:
        def __reduce__(self):
            return (os._exit, (0,))


    class _Forging(ReferencePreparedModel):
        def execute(self, request):
            super().execute(request)
            return _Exit()


    def factory():
        return ReferenceDevice(prepared_model_class=_Forging)
    '''
)


@pytest.mark.requirement("SVC-1")
def test_a_reply_that_would_run_code_is_refused(tmp_path) -> None:
    path = tmp_path / "forging_driver.py"
    path.write_text(FORGING_DRIVER)
    service = DriverService(f"{path}:factory", timeout=10)
    try:
        model = binary_model(dims=(4,))
        values = np.ones(4, np.float32)
        request, _, _ = pack_request(model, [values, values])
        prepared = service.device.prepare_model(model)
        with pytest.raises(RemoteError) as refused:
            prepared.execute(request)
        assert "PreparedModel.execute" in str(refused.value) and "_exit" in str(refused.value)
        assert service.device.get_supported_operations(model) == [True]  # the connection still serves
        assert service.generation == 1 and os.getpid()  # the harness is alive, the service was not replaced
    finally:
        service.close()
