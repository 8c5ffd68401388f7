from __future__ import annotations

import pytest

from reference_driver import ReferenceDevice


@pytest.fixture
def device() -> ReferenceDevice:
    return ReferenceDevice()
