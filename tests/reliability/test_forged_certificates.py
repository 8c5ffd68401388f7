"""The four routes a hostile driver took to a forged PASS, each tried end to end: a real
``harness certify`` of a small driver written here, each ending in FAIL or a clear refusal, never
PASS.  Each run is narrowed to one test that executes a model (``-k``): the driver's failure there
is a FAIL whatever the rest would say, and a forgery that worked would show as that test's pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.tooling.sandbox import landlock_abi

#: One test that executes models; what it checks there (the driver's execute) is POOL-2.
NARROW = ["--", "--harness-profile=ci", "-k", "test_long_sums_are_judged_by_their_terms"]
CHECKED = "POOL-2"

#: The reference, with every execute ending its service; ``before_execute`` runs first.
_FAILING_DRIVER = textwrap.dedent('''
    import os
    import sys

    from reference_driver import ReferenceDevice
    from reference_driver.device import ReferencePreparedModel


    class _Prepared(ReferencePreparedModel):
        def execute(self, request):
            before_execute()
            sys.stderr.flush()
            os._exit(3)


    def factory():
        return ReferenceDevice(prepared_model_class=_Prepared)
''')


def _certify(cwd: Path, *args: str, environment: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.commands.cli", "certify", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=environment)


def _certificate(out: Path) -> dict:
    return json.loads((out / "certificate.json").read_text())


def _driver(tmp_path: Path, name: str, prelude: str, before_execute: str = "pass") -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(prelude) + _FAILING_DRIVER +
                    f"\n\ndef before_execute():\n{textwrap.indent(textwrap.dedent(before_execute), '    ')}\n")
    return f"{path}:factory"


def _assert_failed(done: subprocess.CompletedProcess, out: Path) -> dict:
    document = _certificate(out)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert document["verdict"] == "FAIL" and document["requirements"][CHECKED]["status"] == "fail", document["counts"]
    return document


def test_a_forged_pickle_on_the_zygote_s_control_socket_is_refused(tmp_path: Path) -> None:
    """(1) The zygote imports the driver's module: at import it sends, on every datagram socket it
    holds (the zygote's control socket among them), a pickle that exits with 0 wherever it is
    unpickled."""
    driver = _driver(tmp_path, "forger", '''
        import os
        import pickle
        import socket


        class _Exit:
            def __reduce__(self):
                return (os._exit, (0,))


        for _fd in map(int, os.listdir("/proc/self/fd")):
            try:
                _sock = socket.socket(fileno=os.dup(_fd))
            except OSError:
                continue
            try:
                if _sock.type == socket.SOCK_SEQPACKET:
                    _sock.send(pickle.dumps(("exited", _Exit(), 0)))
                    _sock.send(pickle.dumps(_Exit()))
            except OSError:
                pass
            finally:
                _sock.close()
    ''')
    done = _certify(tmp_path, "--driver", driver, "--out", "out", *NARROW)
    _assert_failed(done, tmp_path / "out")
    assert "driver zygote: refused a message: the message refers to posix._exit" in done.stderr  # it was sent, and read as data


_PLUGIN = '''
import os

import _pytest.reports

from harness import DriverSpec, hookimpl

_init = _pytest.reports.TestReport.__init__


def _forged(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.outcome = "passed"
    self.longrepr = None


_pytest.reports.TestReport.__init__ = _forged  # every report a pass, in whatever process imports this
if {exit_at_import!r}:
    os._exit(0)


@hookimpl
def harness_register_drivers():
    from harness_evil_driver import factory

    return [DriverSpec("evil", factory, "a driver whose plugin forges pytest's reports")]
'''


def _install_plugin(tmp_path: Path, exit_at_import: bool) -> dict:
    """An installed plugin: a module and its dist-info with a ``harness.plugins`` entry point, on
    PYTHONPATH; the environment that sees it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "harness_evil_plugin.py").write_text(_PLUGIN.format(exit_at_import=exit_at_import))
    (site / "harness_evil_driver.py").write_text(_FAILING_DRIVER + "\n\ndef before_execute():\n    pass\n")
    info = site / "harness_evil_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: harness-evil-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[harness.plugins]\nevil = harness_evil_plugin\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


@pytest.mark.parametrize("exit_at_import", [False, True], ids=["patches-reports", "exits-at-import"])
def test_an_installed_plugin_cannot_touch_another_driver_s_verdict_or_its_own(tmp_path: Path,
                                                                             exit_at_import: bool) -> None:
    """(2) An installed plugin whose import makes every pytest report a pass (and, in the second
    case, then ends its process with 0): the reference's run is the reference's, and the plugin's
    own driver fails, or is refused naming the plugin."""
    environment = _install_plugin(tmp_path, exit_at_import)
    reference = _certify(tmp_path, "--driver", "reference", "--out", "reference", *NARROW, environment=environment)
    document = _certificate(tmp_path / "reference")
    ran = [test for test in document["requirements"][CHECKED]["tests"] if test["outcome"] != "deselected"]
    assert ran and all(test["outcome"] == "passed" for test in ran), reference.stdout[-3000:] + reference.stderr[-3000:]
    assert document["counts"]["fail"] == 0 and reference.returncode == 1  # INCOMPLETE: the rest was not selected
    own = _certify(tmp_path, "--driver", "evil", "--out", "evil", *NARROW, environment=environment)
    if exit_at_import:  # the probe that loaded it ended: the plugin is named, its driver unknown
        assert own.returncode == 2, own.stdout[-3000:] + own.stderr[-3000:]
        assert "Plugin evil (harness_evil_plugin) failed to load and may have provided it: the process loading it " \
               "exited with code 0" in own.stderr
        assert not (tmp_path / "evil" / "certificate.json").exists()
    else:
        _assert_failed(own, tmp_path / "evil")


@pytest.mark.skipif(landlock_abi() < 1, reason="this kernel offers no Landlock: the certificate says unsandboxed")
def test_a_driver_cannot_rename_over_or_delete_the_run_s_records(tmp_path: Path) -> None:
    """(3) Before each execute the driver writes a forged records file into the run's output
    directory, renames it over the live one and deletes the live one; the sandbox refuses each,
    and the driver says so on its stderr, which the crash report carries."""
    out = tmp_path / "out"
    driver = _driver(tmp_path, "renamer", "", f'''
        import errno
        import os
        import sys
        import tempfile

        out = {str(out)!r}
        forged = os.path.join(tempfile.gettempdir(), "forged.jsonl")  # its own scratch: writable
        with open(forged, "w") as file:
            file.write('{{"id": "t", "outcome": "passed"}}\\n')
        for attempt, act in (("write", lambda: open(os.path.join(out, "forged.jsonl"), "w").close()),
                             ("rename", lambda: os.replace(forged, os.path.join(out, "records.jsonl"))),
                             ("delete", lambda: os.unlink(os.path.join(out, "records.jsonl")))):
            try:
                act()
                print(f"forgery: {{attempt}} worked", file=sys.stderr)
            except OSError as error:
                print(f"forgery: {{attempt}} refused: {{errno.errorcode.get(error.errno)}}", file=sys.stderr)
    ''')
    done = _certify(tmp_path, "--driver", driver, "--out", "out", *NARROW)
    document = _assert_failed(done, out)
    records = (out / "records.jsonl").read_text()
    said = records + done.stdout
    for attempt in ("write", "rename", "delete"):  # refused by the sandbox: permission, never absence
        assert any(f"forgery: {attempt} refused: {code}" in said for code in ("EACCES", "EPERM", "EXDEV")), \
            f"no word of the driver's {attempt} refused\n{said[-3000:]}"
        assert f"forgery: {attempt} worked" not in said
    assert not (out / "forged.jsonl").exists()
    assert document["evidence"]["record_count"] == len(records.splitlines())


def test_a_second_run_into_a_live_output_directory_is_refused(tmp_path: Path) -> None:
    """(4) While a failing driver's run holds --out, a reference run into it is one clear line and
    exit 2; the first run's certificate is its own FAIL."""
    driver = _driver(tmp_path, "slow", "", "import time\ntime.sleep(0.5)")
    first = subprocess.Popen([sys.executable, "-m", "harness.commands.cli", "certify", "--driver", driver,
                              "--out", "out", *NARROW], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "out" / "records.jsonl").exists():  # made once the directory is locked
            assert first.poll() is None and time.monotonic() < deadline, "the first run never started"
            time.sleep(0.1)
        second = _certify(tmp_path, "--driver", "reference", "--out", "out", *NARROW)
        assert second.returncode == 2 and second.stdout == ""
        line, = second.stderr.splitlines()
        assert line.startswith("harness certify: ") and "out" in line and str(first.pid) in line, line
        output, errors = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    _assert_failed(subprocess.CompletedProcess(first.args, first.returncode, output, errors), tmp_path / "out")
