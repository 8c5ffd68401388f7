"""Collection of the golden suite: one test per corpus example, test kind and memory kind."""

from __future__ import annotations

import pytest


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "golden_test" in metafunc.fixturenames:
        from harness.integration.golden import parametrize_golden
        from harness.integration.plugin import state_of

        parametrize_golden(metafunc, state_of(metafunc.config).capabilities())
