"""Reproducers: a failing scenario printed as a standalone Python script.

Scenarios and lockstep steps are plain data, so this is a printer, not a second code
path: the script rebuilds the same `Scenario` (or call sequence) with the public API and
runs it through the same oracle (or `lockstep.replay`), on the driver in its own service process
as the run had it (`DriverSetup`, `driver_under_test`): a crash or hang shows as a failure the
script reports.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import math
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from harness.api.hal import Device
from harness.drivers.registry import load_registry
from harness.judging.lockstep import ALONE, Step
from harness.judging.scenario import Scenario
from harness.service.supervisor import DEFAULT_CALL_DEADLINE_S


def _literal(value: object) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(f"{f.name}={_literal(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}({fields})"
    if isinstance(value, bytes):
        if len(value) <= 64:
            return repr(value)
        packed = base64.b64encode(zlib.compress(value, 9)).decode()
        return f"_unpack({packed!r})"
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return f"[{', '.join(_literal(v) for v in value)}]"
    if isinstance(value, frozenset):
        return f"frozenset({{{', '.join(sorted(_literal(v) for v in value))}}})" if value else "frozenset()"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"  # repr(nan) is no Python literal: float('nan') is
    return repr(value)


_HEADER = '''#!/usr/bin/env python3
"""Reproducer written by driver-harness: {requirement} on driver {driver!r}.

Run: python {{this file}}  (with driver-harness installed).  It exits non-zero while the bug is there.
"""
{summary}
import base64
import zlib

from harness.api.hal import *  # noqa: F403
from harness.api.memory import MemoryKind  # noqa: F401
from harness.judging.scenario import Defect, MemorySpec, Scenario, TokenRef  # noqa: F401
from harness.report.reproducer import driver_under_test
from reference_driver import ReferenceDevice
{imports}

def _unpack(text):
    return zlib.decompress(base64.b64decode(text))


DRIVER = {driver!r}
{setup}
'''

#: How a script says how it has the driver (`DriverSetup`): as the run had it.
_SETUP = '''# "process": the driver in its own service process, as the run had it (a crash or a hang is reported
# as SVC-1 or SVC-2), each call cut off as a hang after TIMEOUT_S seconds, its address space limited to
# MEMORY_LIMIT_MIB (0: no limit); "inline": in this process, for a debugger (a crash or hang then takes
# this script).
ISOLATION = {isolation!r}
TIMEOUT_S = {timeout_s!r}
MEMORY_LIMIT_MIB = {memory_limit_mib!r}'''


#: The call deadline of scripts written before they carried their run's limits (the default then); kept
#: as it was, so that such a script replays as it did whatever the default becomes.
_OLD_SCRIPTS_DEADLINE_S = 10.0


@dataclass(frozen=True)
class DriverSetup:
    """How a run had its driver, and so how its reproducers have it: in a service process of its own
    or in the script's (``isolation`` "inline"), each call's deadline (``timeout_s``) and the
    service's address-space limit (``memory_limit_mib``, 0: none).  A script with other limits than
    its run's would replay something else: a call the run cut off as a hang at 2 s may return
    within a 10 s deadline, and the script would read as a fix."""

    isolation: str = "process"
    timeout_s: float = DEFAULT_CALL_DEADLINE_S
    memory_limit_mib: int = 0

    def lines(self) -> str:
        """The script's lines that set it."""
        return _SETUP.format(isolation=self.isolation, timeout_s=float(self.timeout_s), memory_limit_mib=self.memory_limit_mib)


def _header(driver: str, requirement: str, message: str, imports: str, setup: DriverSetup) -> str:
    summary = "\n".join(f"# {line}" for line in message.splitlines()[:12])
    return _HEADER.format(requirement=requirement, driver=driver, summary=summary, imports=imports, setup=setup.lines())


@contextmanager
def driver_under_test(driver: str, isolation: str = "process", timeout_s: float = _OLD_SCRIPTS_DEADLINE_S,
                      memory_limit_mib: int = 0) -> Iterator[Device]:
    """What a reproducer script runs its calls on: the driver named ``driver`` in its own service
    process (``isolation`` "process", stopped on exit; each call's deadline ``timeout_s``, its
    address space limited to ``memory_limit_mib``, 0: no limit), or created in this process
    ("inline").  The defaults are those of scripts written before they carried their run's limits."""
    if isolation == "inline":
        yield load_registry().resolve(driver).create()
        return
    from harness.service import DriverService

    service = DriverService(driver, timeout=timeout_s, memory_limit=memory_limit_mib * 1024 * 1024)
    try:
        yield cast(Device, service.device)  # a proxy presenting the Driver API
    finally:
        service.close()


#: What a script that was not checked says when its calls pass: the run stopped during the check
#: (harness fuzz's deadline) or had spent its time for checks (a hang's waits out a deadline), and
#: a failure may need calls made before it.
NOT_CHECKED = ("it was not yet checked on a fresh driver (the run stopped first, or had spent its time for checks), "
               "and the failure may have needed calls made before it: a pass here is no sign of a fix")


def _ending(what: str, replayed: bool, rerun_tried: bool = True, checked: bool = True) -> str:
    """A script's last lines, once its calls passed: a fix, or (``replayed`` False) no sign of one.
    ``rerun_tried`` False: its test was not run again (not a suite's test, or the session's time for
    that was spent), and the script does not say it was.  ``checked`` False: written before its
    check, which may never come (the run stops first): a pass exits 3 until the check replaces it."""
    if not checked:
        return f'''    print("this {what} passes; " {NOT_CHECKED!r})
    raise SystemExit(3)'''
    if replayed:
        return f'''    print("the driver now conforms on this {what}")'''
    rerun = ("and so did its test run again, alone and after the tests before it" if rerun_tried else
             "and its test was not run again (not one of the harness's suites, or the run's time for that was spent)")
    return f'''    print("this {what} passes; it passed on a fresh driver when it was written too, {rerun}: "
          "the failure needed calls the driver had before it")
    raise SystemExit(3)'''


def reproducer_script(scenario: Scenario, driver: str, requirement: str, message: str = "",
                      setup: DriverSetup = DriverSetup(), replayed: bool = True, rerun_tried: bool = True,
                      checked: bool = True) -> str:
    """A script that fails, with ``requirement`` named, while ``driver`` still has the bug.
    ``replayed`` False: the scenario passed on a fresh driver when it was written, and so did a
    rerun of its test when one was tried (``rerun_tried``; the failure needed calls made before it);
    the script then never reads a pass as a fix, and exits 3."""
    passed = _ending("scenario", replayed, rerun_tried, checked)
    return _header(driver, requirement, message, "from harness.judging.oracle import assert_conforms, run_scenario\n",
                   setup) + f'''SCENARIO = {_literal(scenario)}

if __name__ == "__main__":
    with driver_under_test(DRIVER, ISOLATION, TIMEOUT_S, MEMORY_LIMIT_MIB) as driver:
        expected = run_scenario(ReferenceDevice(), SCENARIO)
        actual = run_scenario(driver, SCENARIO)
        assert_conforms({requirement!r}, SCENARIO, expected, actual)
{passed}
'''


#: Beside a reproducer whose check never came (``checked`` false in the record): `NOT_CHECKED`.
UNCHECKED_NOTE = ("not checked on a fresh driver: the run stopped first, or had spent its time for checks; "
                  "a pass of it is no sign of a fix")

#: Beside a reproducer that passed on a fresh driver when it was written (``replays`` false in the
#: record): its scenario or call sequence did, and so did its test run again.
NEEDS_EARLIER_CALLS = ("its scenario or call sequence passed on a fresh driver (a call sequence also after the calls "
                       "the driver's history held), and so did its test run again, alone and after the tests the run "
                       "made before it: the failure needed other calls made before the test, so run its suite again "
                       "to see it")


def check_note(record: dict) -> str:
    """What a report says beside a failure's reproducer of how its check went: it passed on a fresh
    driver (`NEEDS_EARLIER_CALLS`), it was never checked (`UNCHECKED_NOTE`), or nothing."""
    if record.get("replays") is False:
        return NEEDS_EARLIER_CALLS
    return UNCHECKED_NOTE if record.get("checked") is False else ""


def call_sequence_script(steps: Sequence[Step], driver: str, requirement: str, message: str = "",
                         replayed: bool = True, with_earlier_calls: bool = False, setup: DriverSetup = DriverSetup(),
                         rerun_tried: bool = True, checked: bool = True) -> str:
    """A script that replays a lockstep call sequence and fails the same way while the bug is there.
    ``replayed`` False: the sequence did not fail on a fresh driver when it was written, nor did a
    rerun of its test when one was tried (``rerun_tried``; the failure needed calls made before it);
    the script then never reads a pass as a fix, and exits 3.
    ``with_earlier_calls``: the sequences before the last `NEXT_RUN` step are calls made on the same
    driver process before the failing one (by earlier tests, or earlier examples of the same test),
    which the failure needs; the message shows the failing sequence's own calls."""
    listed = "".join(f"    {_literal(step)},\n" for step in steps)
    if with_earlier_calls:
        listed = ("    # The sequences before the last next_run step were made on the same driver process before the\n"
                  "    # failing one (earlier tests, or earlier examples of its test): the failing calls alone pass on\n"
                  "    # a fresh driver.\n" + listed)
    if any(step.method == ALONE for step in steps):
        listed = ("    # A sequence that starts with an alone step is a test's calls on the driver alone: they are made\n"
                  "    # on both drivers for the state they leave, and not judged.\n" + listed)
    passed = _ending("call sequence", replayed, rerun_tried, checked)
    return _header(driver, requirement, message, "from harness.judging.lockstep import Step, replay\n", setup) + f'''STEPS = [
{listed}]

if __name__ == "__main__":
    with driver_under_test(DRIVER, ISOLATION, TIMEOUT_S, MEMORY_LIMIT_MIB) as driver:
        replay(STEPS, driver, ReferenceDevice()).close()
{passed}
'''


def golden_script(golden: dict, driver: str, requirement: str, message: str = "", setup: DriverSetup = DriverSetup()) -> str:
    """A script that runs one golden example (spec file, example, test kind) on ``driver`` again.
    ``golden``'s values are printed as plain literals (an enum member, such as a memory kind, by its value)."""
    plain = {str(key): value.value if isinstance(value, enum.Enum) else value for key, value in golden.items()}
    return _header(driver, requirement, message, "from harness.cts.reproduce import check_one\n", setup) + f'''GOLDEN = {plain!r}

if __name__ == "__main__":
    with driver_under_test(DRIVER, ISOLATION, TIMEOUT_S, MEMORY_LIMIT_MIB) as driver:
        check_one(driver, **GOLDEN)
    print("the driver now passes this golden example")
'''


def rerun_script(test_id: str, driver: str, requirement: str, message: str = "", setup: DriverSetup = DriverSetup(),
                 example_options: Sequence[str] = (), earlier: Sequence[str] = (), replayed: bool = True,
                 checked: bool = True) -> str:
    """A script that runs one test (``suites/area/test_x.py::test_name[param]``) on ``driver`` again,
    with the harness's own pytest configuration: a fixed test, or a generative one whose failure
    carries no scenario or call sequence to print.  ``example_options``: for a generative test, the
    options that make it come to the failing example again (the run's profile and seed, or its
    example database, replayed).  ``earlier``: tests to run first in the same session, on the same
    driver process (`earlier_test`): the ones the run made before it, when the failure needed what
    their calls left in the driver.  The script exits 0 once the test passes, 1 while it still
    fails, and 5 (pytest's "no tests ran") if the test did not run, or replayed no example: pytest
    itself exits 0 for a test it skipped, which is no sign of a fix, and 1 for a failure of an
    earlier test, which is no sign of this one.  ``replayed`` False: the test passed when it was
    run again, alone and after the tests before it, when the script was written; a pass then exits
    3 (no sign of a fix either).  ``checked`` False: written before its check (`NOT_CHECKED`), and
    a pass exits 3 too."""
    path, _, name = test_id.partition("::")
    module = "harness." + path.removesuffix(".py").replace("/", ".")
    summary = "\n".join(f"# {line}" for line in message.splitlines()[:12])
    how = ("it generates its examples as the run did: " + " ".join(example_options) if example_options
           else "a fixed test: it generates no examples")
    three = ("" if replayed and checked else ", 3 it passes but was not checked when this was written" if not checked
             else ", 3 it passes but did so when this was written too (the failure needed calls made before it)")
    after = (f", after the {len(earlier)} tests the run made on the same driver process before it (the failure needed "
             f"what their calls left in the driver)" if earlier else "")
    return f'''#!/usr/bin/env python3
"""Reproducer written by driver-harness: {requirement or 'a failure'} of {test_id} on driver {driver!r}.

Run: python {{this file}} [pytest options]  (with driver-harness installed).  It runs that test again
({how}){after}; options given after the file name are added to its pytest run.
Exit status: 0 it passes, 1 it still fails, 5 it did not run (skipped, or no example left to replay){three}.
"""
{summary}
import importlib
import json
import os
import sys
import tempfile

import pytest

from harness.integration.own_config import own_pytest_options

DRIVER = {driver!r}
TEST_ID = {test_id!r}
MODULE = {module!r}
TEST = {name!r}
{setup.lines()}
EXAMPLES = {list(example_options)!r}
# Run first, in this order, on the same driver process: a module (or a file) and a test in it.
EARLIER = {list(earlier)!r}
# False: it passed when run again as this script runs it, when this was written: a pass is no fix.
REPLAYED = {replayed!r}
# False: written before it was checked, and the run stopped first: a pass is no fix either.
CHECKED = {checked!r}
DID_NOT_RUN = pytest.ExitCode.NO_TESTS_COLLECTED


def node(module_or_file, test):
    file = module_or_file if module_or_file.endswith(".py") else importlib.import_module(module_or_file).__file__
    return f"{{file}}::{{test}}"


class Outcome:
    """This test's own outcome: pytest exits 0 for a skipped test too, and 1 for a failed earlier one."""
    target = None
    outcome = "not run"

    def pytest_collection_modifyitems(self, items):
        file = importlib.import_module(MODULE).__file__
        ours = [item for item in items if item.name == TEST.rpartition("::")[2] and os.path.samefile(item.path, file)]
        Outcome.target = ours[-1].nodeid if ours else None

    def pytest_runtest_logreport(self, report):
        if report.nodeid == Outcome.target and Outcome.outcome != "failed":
            if report.failed:
                Outcome.outcome = "failed"
            elif report.when == "call" and report.passed:
                Outcome.outcome = "passed"


if __name__ == "__main__":
    nodes = [node(*entry.split("::", 1)) for entry in EARLIER] + [node(MODULE, TEST)]
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "record.jsonl")
        code = pytest.main([*own_pytest_options(), *nodes, f"--driver={{DRIVER}}", f"--driver-isolation={{ISOLATION}}",
                            f"--driver-timeout={{TIMEOUT_S}}", f"--driver-memory-limit={{MEMORY_LIMIT_MIB}}", *EXAMPLES,
                            f"--harness-record={{record}}", "-q", "-rs", "-p", "no:randomly", *sys.argv[1:]],
                           plugins=[Outcome()])
        examples = 0
        if os.path.exists(record):  # not when pytest stopped before the run (a usage error)
            with open(record, encoding="utf-8") as lines:
                examples = sum(entry.get("examples") or 0 for entry in map(json.loads, lines) if entry.get("id") == TEST_ID)
    if Outcome.outcome == "failed":
        code = pytest.ExitCode.TESTS_FAILED
    elif Outcome.outcome == "not run" and code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        print("the test did not run (see the skip above), so this says nothing of the failure", file=sys.stderr)
        code = DID_NOT_RUN
    elif Outcome.outcome == "passed" and "--harness-replay" in EXAMPLES and not examples:
        print("nothing was replayed: the database holds no example of this test for this driver (hypothesis "
              "deletes one that passes), so this says nothing of the failure", file=sys.stderr)
        code = DID_NOT_RUN
    elif Outcome.outcome == "passed" and not CHECKED:
        print("this test passes; " {NOT_CHECKED!r}, file=sys.stderr)
        code = 3
    elif Outcome.outcome == "passed" and not REPLAYED:
        print("this test passes; it passed when it was run again, alone and after the tests before it, when this "
              "script was written too: the failure needed calls the driver had before it", file=sys.stderr)
        code = 3
    elif Outcome.outcome == "passed":
        code = pytest.ExitCode.OK
    sys.exit(code)
'''


def earlier_test(test_id: str, path: str) -> str:
    """How a rerun script names a test to run before its own (``EARLIER``): one of the harness's
    suites by its module, as installed wherever the script runs; any other (a vendor's own test) by
    ``path``, the file the run collected it from."""
    file, _, name = test_id.partition("::")
    if file.startswith("suites/"):
        return "harness." + file.removesuffix(".py").replace("/", ".") + "::" + name
    return f"{path}::{name}"
