"""A pytest run of a suite with a witness plugin loaded into it (``-p witness``): what the run's own
process looks like at its end, from the inside, after the driver under test had its chance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUITES = Path(__file__).resolve().parents[2] / "suites"


def run_witnessed(tmp_path: Path, witness: str, marker: str, suite: str,
                  *options: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``suite`` (a path under suites/) in ``tmp_path`` with the plugin ``witness`` (its source),
    which writes what it saw as JSON to ``WITNESS_FILE``; ``marker`` is an environment variable the
    run starts without.  The finished run, and what the witness saw."""
    (tmp_path / "witness.py").write_text(witness)
    seen = tmp_path / "witness.json"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
                   "WITNESS_FILE": str(seen)}
    environment.pop(marker, None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "witness", "-p", "no:randomly",
                           str(SUITES / suite), "--harness-profile=ci", *options],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600)
    return done, json.loads(seen.read_text())
