"""The pytest configuration the harness's own commands run with.

``harness certify``, ``fuzz``, ``replay`` and ``score`` start pytest sessions.  They use the
harness's own ini file and rootdir, never the configuration of the directory they happen
to start in (a vendor's project, or this repository with its test-only options), so the
same command gives the same run anywhere, without warnings about options it does not use.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_INI = Path(__file__).with_name("harness-pytest.ini")


def own_pytest_options() -> list[str]:
    suites = importlib.util.find_spec("harness.suites")
    root = Path(suites.origin).parent.parent if suites is not None and suites.origin else _INI.parent.parent
    return ["-c", str(_INI), f"--rootdir={root}", "-p", "no:cacheprovider"]
