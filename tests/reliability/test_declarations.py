"""A driver's declarations (custom-call targets) are served by a process of the plugin's own: its
code never runs in the harness's process, and a process that dies or lies fails the tests that
asked it, never passes them: no driver code runs in the harness's process."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

from harness.api.errors import HarnessError
from harness.drivers.declarations import Declarations, DeclarationsFailed
from harness.tooling.sandbox import plan
from witnessed import run_witnessed  # this directory is on sys.path under pytest's default import mode

MARKER = "DRIVER_HARNESS_DECLARER_WAS_HERE"

#: A driver whose module, wherever it is imported, marks the environment and makes every pytest
#: report a pass; its host add target declares a numpy reference that lies (``LIE`` picks how).
_DECLARER = textwrap.dedent('''
    import dataclasses
    import os

    import numpy as np

    from harness import hookimpl
    from reference_driver import ReferenceDevice
    from reference_driver.custom_calls import reference_targets

    os.environ[{marker!r}] = "1"
    try:
        import _pytest.reports

        _init = _pytest.reports.TestReport.__init__

        def _forged(self, *args, **kwargs):
            _init(self, *args, **kwargs)
            self.outcome = "passed"
            self.longrepr = None

        _pytest.reports.TestReport.__init__ = _forged
    except ImportError:
        pass

    LIE = {lie!r}


    def _lying_reference(operands, opaque):
        if LIE == "exit":
            os._exit(0)
        if LIE == "object":
            return object()
        return np.zeros(2048, np.float32)


    def factory():
        return ReferenceDevice()


    @hookimpl
    def harness_custom_call_targets(driver_name):
        return [dataclasses.replace(t, reference=_lying_reference) if t.name == "add_mod128" and t.platform == "Host"
                else t for t in reference_targets()]
''')

#: Loaded into the pytest run under test (-p): what its own process looks like at the end.
_WITNESS = textwrap.dedent('''
    import json
    import os

    import _pytest.reports


    def pytest_unconfigure(config):
        with open(os.environ["WITNESS_FILE"], "w") as out:
            json.dump({{"marker": os.environ.get({marker!r}),
                       "reports_patched": _pytest.reports.TestReport.__init__.__name__ != "__init__"}}, out)
''')


def _declarer(tmp_path: Path, lie: str = "zeros") -> str:
    path = tmp_path / f"declarer_{lie}.py"
    path.write_text(_DECLARER.format(marker=MARKER, lie=lie))
    return f"{path}:factory"


def test_a_declaring_plugin_leaves_the_pytest_process_untouched_and_fails(tmp_path: Path) -> None:
    done, seen = run_witnessed(tmp_path, _WITNESS.format(marker=MARKER), MARKER,
                               "custom_calls/test_host_convention.py", f"--driver={_declarer(tmp_path)}", "-k", "add_mod128")
    assert seen == {"marker": None, "reports_patched": False}, done.stdout[-3000:]
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 failed" in done.stdout and "differs from the reference" in done.stdout, done.stdout[-3000:]


def test_a_declarations_process_that_exits_is_the_plugin_s_named_failure(tmp_path: Path) -> None:
    declarations = Declarations(_declarer(tmp_path, "exit"), [], "declarer_exit.py", plan)
    try:
        host_add = next(t for t in declarations.targets if t.name == "add_mod128" and t.platform == "Host")
        assert host_add.reference is not None
        with pytest.raises(DeclarationsFailed, match=r"plugin declarer_exit.py's declarations process exited with "
                                                     r"code 0 before it answered 'reference'"):
            host_add.reference((np.zeros(128, np.float32), np.zeros(2048, np.float32)), b"")
        with pytest.raises(DeclarationsFailed, match="exited with code 0"):  # and so is every later question
            host_add.reference((np.zeros(128, np.float32), np.zeros(2048, np.float32)), b"")
    finally:
        declarations.close()
    assert not os.path.exists(declarations.scratch)


def test_a_reference_answering_outside_the_closed_set_is_refused(tmp_path: Path) -> None:
    declarations = Declarations(_declarer(tmp_path, "object"), [], "declarer_object.py", plan)
    try:
        host_add = next(t for t in declarations.targets if t.name == "add_mod128" and t.platform == "Host")
        assert host_add.reference is not None
        with pytest.raises(HarnessError, match="declarer_object.py: Unencodable: a value of type object"):
            host_add.reference((np.zeros(128, np.float32), np.zeros(2048, np.float32)), b"")
        assert MARKER not in os.environ
    finally:
        declarations.close()
