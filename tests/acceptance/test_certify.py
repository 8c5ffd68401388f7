"""harness certify end to end: verdicts, reports, reproducers, waivers, bad input, interruption."""

from __future__ import annotations

import json
import os
import signal
import stat
import struct
import subprocess
import sys
import textwrap
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.api.requirements import BINDING_REQUIREMENTS, REQUIREMENTS
from harness.report.certificate import DECLARE_FIX

QUICK = ["--", "--harness-profile=ci", "-k", "test_each_allocation_mistake or test_generated_scenarios or test_token_uses"]


def ran(entry: dict) -> list[dict]:
    """A requirement's tests that the run did not leave out (the quick runs here take -k: every
    requirement they touch is not-run for the rest, whatever those that ran say)."""
    return [test for test in entry["tests"] if test["outcome"] != "deselected"]


def certify(tmp_path: Path, *args: str, timeout: float = 600, umask: int | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.commands.cli", "certify", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=timeout, umask=-1 if umask is None else umask)


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("link", "script", "img"):
            raise AssertionError(f"report.html loads an external asset through <{tag}>")

    def handle_data(self, data):
        if self.tags and self.tags[-1] in ("td", "a") and "td" in self.tags:  # a requirement's ID links to its text
            self.cells.append(data.strip())

    def handle_endtag(self, tag):
        if self.tags and self.tags[-1] == tag:
            self.tags.pop()


def test_reference_passes_with_every_requirement_run(tmp_path: Path) -> None:
    """The main job: every suite, nothing not run, every report written with the user's umask,
    whatever pytest configuration the directory it starts in has."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --an-option-of-the-vendors-project\ntimeout = 5\n")
    done = certify(tmp_path, "--driver", "reference", "--out", "out", "--", "--harness-profile=ci", umask=0o022)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "warning" not in (done.stdout + done.stderr).lower(), done.stdout[-3000:] + done.stderr
    out = tmp_path / "out"
    document = json.loads((out / "certificate.json").read_text())
    assert document["verdict"] == "PASS" and document["schema"] == "driver-harness/certificate/2"
    assert document["run"]["seed"] == 0 and document["run"]["profile"] == "ci"
    assert set(document["requirements"]) == set(REQUIREMENTS)
    statuses = {r: e["status"] for r, e in document["requirements"].items()}
    assert set(statuses.values()) == {"pass"}, {r: s for r, s in statuses.items() if s != "pass"}
    assert document["not_run"] == [] and document["fixes"] == []
    assert document["driver"]["capabilities"]["memory_domains"] is True
    assert (out / "junit.xml").read_text().startswith("<?xml")
    parser = _Rows()
    parser.feed((out / "report.html").read_text())
    assert all(requirement in parser.cells for requirement in REQUIREMENTS)
    limits = document["driver"]["driver_timeout_s"], document["driver"]["driver_memory_limit_mib"]
    assert any(f"cut off after {limits[0]} s, {limits[1]} MiB" in cell for cell in parser.cells), limits
    for name in ("certificate.json", "report.html", "junit.xml"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o644, name


# A driver outside the repository: the reference without memory domains, declaring through a
# hook in its own file a custom-call target that cannot be built on this machine.
NO_COMPILER_DRIVER = textwrap.dedent(
    """
    import dataclasses

    from harness import hookimpl
    from harness.api.custom_calls import CallCase, CaseSpace, CustomCallTarget
    from harness.tooling import CompilerMissing
    from reference_driver import ReferenceDevice


    class WithoutDomains(ReferenceDevice):
        def capabilities(self):
            return dataclasses.replace(super().capabilities(), memory_domains=False)


    def factory():
        return WithoutDomains()


    def _build():
        raise CompilerMissing("no C compiler found to build native targets")


    @hookimpl
    def harness_custom_call_targets(driver_name):
        return [CustomCallTarget("copy", "Host", "host", _build, "copy_host", reference=lambda operands, opaque: None,
                                 cases=CaseSpace({}, lambda: None))]
    """
)


def test_an_environment_skip_makes_the_certificate_incomplete(tmp_path: Path) -> None:
    (tmp_path / "driver.py").write_text(NO_COMPILER_DRIVER)
    done = certify(tmp_path, "--driver", "driver.py:factory", "--out", "out", "--", "--harness-profile=ci",
                   "-k", "test_host_targets_match or test_every_memory_kind or service or memory_domains")
    assert done.returncode == 1, done.stderr + done.stdout
    document = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert document["verdict"] == "INCOMPLETE"
    cc2 = document["requirements"]["CC-2"]
    assert cc2["status"] == "not-run", cc2
    assert any("no C compiler" in reason for reason in cc2["reasons"]) and any("gcc" in fix for fix in cc2["fixes"])
    role = document["requirements"]["DOM-ROLE-1"]  # every test of it ran: the memory_domains suite
    assert role["status"] == "not-applicable" and role["capabilities"] == ["memory_domains"], role
    pool = document["requirements"]["POOL-3"]
    assert ran(pool) and all(t["outcome"] == "passed" for t in ran(pool)), pool
    assert pool["status"] == "not-run" and "left out of the run (-k, -m or --deselect)" in pool["reasons"], pool
    assert document["requirements"]["SVC-1"]["status"] == "pass"  # every test of it ran ("service")
    assert "CC-2" in document["not_run"] and any("gcc" in fix for fix in document["fixes"])
    assert "To run them:" in done.stderr and "apt-get install gcc" in done.stderr
    report = (tmp_path / "out" / "report.html").read_text()
    assert "no C compiler" in report and "exclude it" in report


SPEC_ADD = textwrap.dedent("""
    i1 = Input("a", "TENSOR_FLOAT32", "{1, 2, 2, 1}")
    i2 = Input("b", ("TENSOR_FLOAT32", [1]))
    o1 = Output("out", "TENSOR_FLOAT32", "{1, 2, 2, 1}")
""")


def test_a_spec_file_the_harness_cannot_read_makes_the_cts_certificate_incomplete(tmp_path: Path) -> None:
    """What the harness could not read may check anything: its examples did not run, and the
    certificate says so with the file and line, never PASS over them.  An operation that HAL 1.3
    (the harness's data model) has no name for is one no driver can declare: not applicable."""
    specs = tmp_path / "specs"
    specs.mkdir()
    add = 'Model().Operation("ADD", i1, i2, Int32Scalar("act", 0)).To(o1)\n'
    (specs / "good.mod.py").write_text(SPEC_ADD + add + "Example({i1: [1, 2, 3, 4], i2: [1], o1: [2, 3, 4, 5]})\n")
    (specs / "broken.mod.py").write_text(SPEC_ADD + "Example({i1: [1, 2, 3, 4],\n")  # never closed
    (specs / "newer.mod.py").write_text(SPEC_ADD + 'Model().Operation("NOT_IN_HAL_1_3", i1, i2).To(o1)\n'
                                        "Example({i1: [1, 2, 3, 4], i2: [1], o1: [2, 3, 4, 5]})\n")
    done = subprocess.run([sys.executable, "-m", "harness.commands.cli", "cts", "--driver", "reference", "--specs", "specs",
                           "--out", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr + done.stdout
    document = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert document["verdict"] == "INCOMPLETE" and set(document["not_run"]) == {"OPS-1", "OPS-2", "OPS-3"}, document
    assert any(f"broken.mod.py:{SPEC_ADD.count(chr(10)) + 1}:" in fix for fix in document["fixes"]), document["fixes"]
    assert "broken.mod.py" in done.stderr
    corpus = document["golden"]["corpus"]
    assert [u["name"] for u in corpus["unexpressed"]] == ["broken.mod.py"], corpus
    assert any("NOT_IN_HAL_1_3" in need for need in corpus["not_declared_by_need"]), corpus
    checks = [c for types in document["golden"]["coverage"].values() for c in types.values()]
    assert sum(c["run"] for c in checks) > 0 and sum(c["passed"] for c in checks) == sum(c["run"] for c in checks), checks


DECLARES_NOTHING_DRIVER = textwrap.dedent("""
    from harness.api.hal import Capabilities
    from harness.api.memory import REQUIRED_KINDS
    from reference_driver import ReferenceDevice

    class DeclaresNothing(ReferenceDevice):
        def capabilities(self):
            return Capabilities(memory_kinds=frozenset(REQUIRED_KINDS), memory_domains=False,
                                operations=frozenset(), operand_types=frozenset())

    def factory():
        return DeclaresNothing()
""")


def test_a_driver_that_declares_nothing_is_not_certified_on_the_rules_that_bind_every_driver(tmp_path: Path) -> None:
    """A plugin that forgot its declarations: no model can be built for it, so nothing checks
    memory pools or requests (SPEC §2, §4), which bind every driver: INCOMPLETE, saying what to
    declare, where it was PASS with them not applicable.  Memory domains stay not applicable."""
    (tmp_path / "driver.py").write_text(DECLARES_NOTHING_DRIVER)
    done = certify(tmp_path, "--driver", "driver.py:factory", "--out", "out")
    assert done.returncode == 1, done.stderr + done.stdout
    document = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert document["verdict"] == "INCOMPLETE"
    for requirement in BINDING_REQUIREMENTS:  # each passed where a test ran, else is not run
        entry = document["requirements"][requirement]
        if any(t["outcome"] == "passed" for t in entry["tests"]):
            assert entry["status"] == "pass", entry
        else:
            assert entry["tests"] and all(t["skip"]["kind"] == "not-applicable" for t in entry["tests"]), entry
            assert entry["status"] == "not-run" and entry["fixes"] == [DECLARE_FIX], entry
    assert {"POOL-1", "POOL-2", "REQ-1", "REQ-2"} <= set(document["not_run"]), document["not_run"]
    assert document["requirements"]["DOM-ROLE-1"]["status"] == "not-applicable"
    assert {document["requirements"][r]["status"] for r in ("SVC-1", "SVC-2", "SVC-3")} == {"pass"}
    assert DECLARE_FIX in document["fixes"] and "Capabilities.operations" in done.stderr


def test_an_invalid_declaration_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "driver.py").write_text(NO_COMPILER_DRIVER.replace('"Host", "host"', '"Host", "hots"'))
    done = certify(tmp_path, "--driver", "driver.py:factory", "--out", "out")
    assert done.returncode == 2, done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "plugin driver.py" in lines[0] and "'convention'" in lines[0] and "'hots'" in lines[0]
    assert "host, host-unified, device, device-status" in lines[0]
    assert not (tmp_path / "out" / "certificate.json").exists() and not (tmp_path / "out" / "records.jsonl").exists()


@pytest.fixture(scope="module")
def failed_certification(once_per_run) -> Path:
    """A certification of a seeded-bug driver: the richest report (failures, reproducers); one for the test run."""
    def run(where: Path) -> list:
        done = certify(where, "--driver", "mutant-offset-ignored", "--out", "out", *QUICK)
        return [done.returncode, done.stderr + done.stdout]

    where, (code, said) = once_per_run("failed-certification", run)
    assert code == 1, said
    return where / "out"


def test_mutant_fails_with_a_reproducer_that_fails(failed_certification: Path) -> None:
    document = json.loads((failed_certification / "certificate.json").read_text())
    assert document["verdict"] == "FAIL" and document["requirements"]["POOL-2"]["status"] == "fail"
    scripts = [f["reproducer"] for f in document["failures"] if f["reproducer"]]
    assert scripts, "no reproducer was written for a scenario failure"
    replay = subprocess.run([sys.executable, scripts[0]], capture_output=True, text=True, timeout=120)
    assert replay.returncode != 0 and "[POOL-2]" in replay.stderr
    assert "reproducer" in (failed_certification / "report.html").read_text()


def test_report_renders_in_headless_chromium(failed_certification: Path, tmp_path: Path, chromium) -> None:
    page = (failed_certification / "report.html").as_uri()
    screenshot = tmp_path / "report.png"  # under tmp_path: kept out of the repository
    shot = chromium.screenshot(page, screenshot, 1280, 1800)
    assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-2000:]
    header = screenshot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", header[16:24]) == (1280, 1800)
    # Not blank: the top of the page is the requirement x status matrix, in the report's colours.
    from PIL import Image

    from harness.report.html import COLOURS

    with Image.open(screenshot) as image:
        top = image.convert("RGB").crop((0, 0, 1280, 400))
        colours = {colour for _, colour in top.getcolors(maxcolors=1 << 20)}
    for status in ("pass", "fail"):
        wanted = tuple(int(COLOURS[status][i:i + 2], 16) for i in (1, 3, 5))
        assert wanted in colours, f"the matrix shows no {status} cell ({COLOURS[status]}) in the screenshot's top"
    assert len(colours) > 20, "the screenshot is nearly blank"
    dom = chromium.dom(page)
    rendered = _Rows()
    rendered.feed(dom.stdout)
    assert all(requirement in rendered.cells for requirement in REQUIREMENTS), dom.stderr[-2000:]
    assert "FAIL" in dom.stdout.split("</h1>")[0]


def test_expectation_xfail_is_a_waiver_not_a_pass(tmp_path: Path) -> None:
    (tmp_path / "expect.toml").write_text(
        '[[expect]]\ntest = "suites/memory_domains/test_roles.py::test_token_uses"\naction = "xfail"\n'
        'reason = "fixed in driver 2.1"\n')
    done = certify(tmp_path, "--driver", "reference", "--out", "out", "--expectations", "expect.toml", *QUICK)
    document = json.loads((tmp_path / "out" / "certificate.json").read_text())
    # -k ran a few suites only: what did not run keeps the certificate from passing.
    assert done.returncode == 1 and document["verdict"] == "INCOMPLETE", done.stderr
    token_uses = {r: e for r, e in document["requirements"].items()
                  if any(t["test"].startswith("suites/memory_domains/test_roles.py::test_token_uses") for t in e["tests"])}
    assert token_uses
    for requirement, entry in token_uses.items():
        waived = [t for t in ran(entry) if t["test"].startswith("suites/memory_domains/test_roles.py::test_token_uses")]
        assert waived and all(t["outcome"] in ("xfailed", "xpassed") and "fixed in driver 2.1" in t["waiver"]
                              for t in waived), entry
        assert entry["status"] not in ("pass", "waived"), entry  # the rest of it was left out
    assert document["requirements"]["CC-1"]["status"] == "not-run"


@pytest.mark.parametrize("args, phrase", [
    (["--driver", "no-such-driver", "--out", "out"], "unknown driver 'no-such-driver'"),
    (["--driver", "reference", "--out", "/proc/no-such-place"], "cannot write into output directory"),
    (["--driver", "reference", "--out", "out", "--expectations", "bad.toml"], "bad.toml"),
    # a corpus of no spec file would certify OPS-1..3 on nothing
    (["--driver", "reference", "--out", "out", "--", "--cts-specs=no-specs"], "--cts-specs=no-specs: holds no *.mod.py file"),
])
def test_bad_input_is_one_clear_line_and_exit_2(tmp_path: Path, args, phrase) -> None:
    (tmp_path / "bad.toml").write_text("[[expect]]\ntest = 1\n")
    (tmp_path / "no-specs").mkdir()
    (tmp_path / "no-specs" / "README").write_text("the spec files are elsewhere\n")
    done = certify(tmp_path, *args)
    assert done.returncode == 2
    assert phrase in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "certificate.json").exists()


def test_interrupted_run_writes_an_incomplete_certificate(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-m", "harness.commands.cli", "certify", "--driver", "reference", "--out", "out"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records = tmp_path / "out" / "records.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not records.exists() or records.read_text().count("\n") < 3):
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=120)
    document = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert document["verdict"] == "INCOMPLETE" and document["run"]["tests"] >= 2
    assert not [p for p in os.listdir(tmp_path / "out") if p.startswith(".certificate")]


HARNESS_BUG = textwrap.dedent(
    '''
    """Stands for a bug in the harness's own code: one test raises a KeyError no driver code raised."""
    import pytest


    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item):
        if item.name.startswith("test_generated_scenarios_match_the_reference"):
            raise KeyError("a slot the harness forgot")
        yield
    '''
)


@pytest.mark.parametrize("isolation", ["process", "inline"])
def test_a_fault_of_the_harness_is_no_verdict_and_makes_the_certificate_incomplete(tmp_path: Path, isolation: str) -> None:
    # The correct reference driver must not FAIL because the harness broke: the test gave no
    # verdict, so what it covers did not run.  Inline too, where the driver shares the harness's stack.
    (tmp_path / "harness_bug.py").write_text(HARNESS_BUG)
    done = certify(tmp_path, "--driver", "reference", "--out", "out", "--", "--harness-profile=ci", "-p", "harness_bug",
                   f"--driver-isolation={isolation}", "--driver-timeout=7", "--driver-memory-limit=4096",
                   "-k", "test_generated_scenarios or test_token_uses")
    assert done.returncode == 1, done.stderr + done.stdout
    document = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert document["verdict"] == "INCOMPLETE"
    [failure] = document["failures"]
    assert (failure["fault"], failure["error_type"]) == ("harness", "KeyError"), failure
    for requirement in ("POOL-2", "REQ-2"):  # what the failing test covers
        entry = document["requirements"][requirement]
        assert entry["status"] == "not-run" and entry["fixes"], entry
        assert [test["outcome"] for test in ran(entry)] == ["no-verdict"], entry
    role = document["requirements"]["DOM-ROLE-1"]  # test_token_uses ran and judged
    assert ran(role) and all(test["outcome"] == "passed" for test in ran(role)), role
    assert "driver-harness" in done.stderr  # the fix names whose fault it is
    assert document["driver"]["isolation"] == isolation
    # what the verdict held under: the run's limits, which an inline driver does not run under
    limits = (7.0, 4096) if isolation == "process" else (None, None)
    assert (document["driver"]["driver_timeout_s"], document["driver"]["driver_memory_limit_mib"]) == limits, document["driver"]


RAISES_IN_EXECUTE = textwrap.dedent(
    '''
    """Prepares as the reference does; every execution raises a KeyError from the driver's own code."""
    from reference_driver import ReferenceDevice


    class _Forgetful:
        def __init__(self, prepared):
            self.model = prepared.model

        def execute(self, request):
            raise KeyError("a slot the driver forgot")


    class RaisesInExecute(ReferenceDevice):
        def prepare_model(self, model):
            return _Forgetful(super().prepare_model(model))


    def factory():
        return RaisesInExecute()
    '''
)


def test_what_an_inline_drivers_code_raises_is_a_verdict_on_it(tmp_path: Path) -> None:
    (tmp_path / "forgetful.py").write_text(RAISES_IN_EXECUTE)
    done = certify(tmp_path, "--driver", "forgetful.py:factory", "--out", "out", "--", "--harness-profile=ci",
                   "--driver-isolation=inline", "-k", "test_generated_scenarios")
    assert done.returncode == 1, done.stderr + done.stdout
    document = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert document["verdict"] == "FAIL" and document["driver"]["isolation"] == "inline"
    assert {(f["fault"], f["error_type"]) for f in document["failures"]} == {("driver", "KeyError")}, document["failures"]
    # the message names the exception and what it said, whatever the traceback's format
    assert all(f["message"].startswith("KeyError: ") and "a slot the driver forgot" in f["message"]
               for f in document["failures"]), [f["message"] for f in document["failures"]]
