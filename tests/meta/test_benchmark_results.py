"""Benchmark figures live in files the benchmarks write (benchmarks/results/<name>.json), not in prose."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _results_module():
    spec = importlib.util.spec_from_file_location("benchmark_results", BENCHMARKS / "results.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", sorted(path.name for path in BENCHMARKS.glob("bench_*.py")))
def test_every_benchmark_writes_its_figures(script: str) -> None:
    source = (BENCHMARKS / script).read_text(encoding="utf-8")
    assert "results.add_option(parser)" in source and f'results.write("{script.removesuffix(".py")}"' in source


def test_a_results_file_says_what_was_measured_where_and_when(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_example.py", "--seconds", "1"])
    path = _results_module().write("bench_example", {"round_trip_us": 12.5}, tmp_path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert path == tmp_path / "bench_example.json"
    assert document["figures"] == {"round_trip_us": 12.5}
    assert document["command"] == "python benchmarks/bench_example.py --seconds 1"
    assert {"written", "git_commit", "machine"} <= set(document)
