from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.api.hal import DriverError, ErrorStatus
from reference_driver import ReferenceDevice


@pytest.fixture
def device() -> ReferenceDevice:
    return ReferenceDevice()


class _Leaky(ReferenceDevice):
    """Serves ``serves`` valid allocations in its life: releasing never frees what a buffer held
    (a leak, DOM-ALLOC-3)."""

    def __init__(self, serves: int) -> None:
        super().__init__()
        self.serves = serves
        self.served = 0

    def allocate(self, desc, prepared_models, input_roles, output_roles):
        buffer, token = super().allocate(desc, prepared_models, input_roles, output_roles)
        if self.served >= self.serves:
            buffer.release()
            raise DriverError(ErrorStatus.GENERAL_FAILURE, "out of device memory")
        self.served += 1
        return buffer, token


@pytest.fixture
def leaky() -> Callable[[int], ReferenceDevice]:
    """``leaky(n)``: a fresh driver that serves ``n`` valid allocations in its life, then refuses."""
    return _Leaky
