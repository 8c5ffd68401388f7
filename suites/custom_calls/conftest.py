"""Each custom-call test runs once per declared target that fits it (``target`` parameter),
so every target gets the whole example budget and its own line in the certificate."""

from __future__ import annotations

import pytest

from harness.integration.plugin import declared_for_driver, parametrize_declared


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("targets")
    wanted = marker.kwargs if marker else {}
    chosen = [t for t in declared_for_driver(metafunc.config, "custom_call_targets")
              if t.convention in wanted.get("conventions", (t.convention,))
              and (wanted.get("failing") is None or (t.error is not None) == wanted["failing"])
              and t.name in wanted.get("names", (t.name,))
              and (not wanted.get("xla") or bool(t.xla_symbol))]
    parametrize_declared(metafunc, "target", chosen, [f"{t.name}@{t.platform}" for t in chosen])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "targets(conventions=(), failing=None, names=(), xla=False): which custom-call "
                                       "targets a test runs on (xla: those with a typed-FFI handler)")
