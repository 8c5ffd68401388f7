"""pytest plugin (pytest11 entry point): markers for now; options and fixtures follow."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requirement(*ids): the SPEC requirement IDs a test checks")
