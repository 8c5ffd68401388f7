"""Where the benchmarks keep their figures: each run writes ``benchmarks/results/<name>.json``.

A figure belongs in the file the benchmark writes, not in prose: the file says what was
measured, by which command, on which commit and machine, and when.  A run replaces the file of
its benchmark (git keeps the earlier ones); ``--results DIR`` writes elsewhere.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DIRECTORY = HERE / "results"


def add_option(parser: argparse.ArgumentParser) -> None:
    """The ``--results DIR`` option every benchmark takes."""
    parser.add_argument("--results", default=str(DIRECTORY), metavar="DIR",
                        help=f"where the figures go, as <benchmark>.json (default: {DIRECTORY.relative_to(HERE.parent)})")


def _commit() -> str:
    try:
        done = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def write(name: str, figures: dict[str, Any], directory: str | os.PathLike[str] = DIRECTORY,
          script: str = "") -> Path:
    """Write ``figures`` (plain JSON data, units in the keys) as ``<directory>/<name>.json``;
    ``script``: the benchmark that measured them, when its name is not ``name`` (one of its modes)."""
    document = {
        "benchmark": name,
        "command": " ".join(["python", f"benchmarks/{script or name}.py", *sys.argv[1:]]),
        "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _commit(),
        "machine": {"platform": platform.platform(), "machine": platform.machine(), "python": platform.python_version(),
                    "cpus": os.cpu_count()},
        "figures": figures,
    }
    path = Path(directory) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)
    print(f"figures written to {path}")
    return path
