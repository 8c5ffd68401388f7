"""Bad input to the harness is one clear line and a usage exit code, never a traceback.

The table below is every option, file and environment variable the harness reads a number or a
path from, each with bad values: each case runs as its own process (`harness ...`, or pytest with
the plugin) and must exit with the usage code (2 for `harness`, pytest's 4), print no traceback,
and print one line on stderr that names the option or file (what the line says beyond that is the
harness's, never asserted on another library's wording).  The values are refused as they are
parsed, before any driver or test runs: pytest runs are `--collect-only`, so one that regressed to
accepting its value costs a collection, not a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def run(tmp_path: Path, *args: str, module: str = "harness.commands.cli",
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def error_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


#: (id, `harness` arguments, what the one line must name).  ``{ro}``: a directory nobody may write
#: into; ``afile``: a regular file (a path under it cannot be made, whoever runs the test).
HARNESS_CASES = [
    ("certify-expectations-binary", ["certify", "--driver", "reference", "--out", "o", "--expectations", "binary.toml"],
     ["binary.toml"]),
    ("certify-expectations-directory", ["certify", "--driver", "reference", "--out", "o", "--expectations", "emptydir"],
     ["emptydir"]),
    ("certify-out-a-file", ["certify", "--driver", "reference", "--out", "afile"], ["--out=afile"]),
    ("certify-out-under-a-file", ["certify", "--driver", "reference", "--out", "afile/out"], ["--out=afile/out"]),
    ("certify-out-read-only", ["certify", "--driver", "reference", "--out", "{ro}"], ["--out={ro}"]),
    ("certify-seed-nan", ["certify", "--driver", "reference", "--out", "o", "--seed", "nan"], ["--seed", "nan"]),
    ("cts-specs-missing", ["cts", "--driver", "reference", "--specs", "nope", "--out", "o"], ["--cts-specs=nope"]),
    ("fuzz-minutes-nan", ["fuzz", "--driver", "reference", "--minutes", "nan"], ["--minutes", "nan"]),
    ("fuzz-minutes-inf", ["fuzz", "--driver", "reference", "--minutes", "inf"], ["--minutes", "inf"]),
    ("fuzz-minutes-huge", ["fuzz", "--driver", "reference", "--minutes", "1e308"], ["--minutes", "1e308"]),
    ("fuzz-minutes-negative", ["fuzz", "--driver", "reference", "--minutes", "-1"], ["--minutes", "-1"]),
    ("fuzz-minutes-word", ["fuzz", "--driver", "reference", "--minutes", "soon"], ["--minutes", "soon"]),
    ("fuzz-workers-zero", ["fuzz", "--driver", "reference", "--workers", "0"], ["--workers", "0"]),
    ("fuzz-workers-nan", ["fuzz", "--driver", "reference", "--workers", "nan"], ["--workers", "nan"]),
    ("fuzz-suites-empty", ["fuzz", "--driver", "reference", "--suites", ""], ["--suites"]),
    ("fuzz-suites-commas", ["fuzz", "--driver", "reference", "--suites", ",,"], ["--suites"]),
    ("fuzz-suites-unknown", ["fuzz", "--driver", "reference", "--suites", "requests,bogus"], ["--suites", "bogus"]),
    ("fuzz-db-a-file", ["fuzz", "--driver", "reference", "--minutes", "0.1", "--db", "afile"], ["--db=afile"]),
    ("fuzz-db-under-a-file", ["fuzz", "--driver", "reference", "--minutes", "0.1", "--db", "afile/db"], ["--db=afile/db"]),
    ("fuzz-db-empty", ["fuzz", "--driver", "reference", "--minutes", "0.1", "--db", ""], ["--db="]),
    ("fuzz-db-other-url", ["fuzz", "--driver", "reference", "--minutes", "0.1", "--db", "http://host/db"],
     ["--db=http://host/db"]),
    ("fuzz-out-a-file", ["fuzz", "--driver", "reference", "--minutes", "0.1", "--out", "afile"], ["--out=afile"]),
    ("fuzz-out-read-only", ["fuzz", "--driver", "reference", "--minutes", "0.1", "--out", "{ro}/fuzz"], ["--out=", "{ro}"]),
    ("replay-db-a-file", ["replay", "--driver", "reference", "--db", "afile"], ["--db=afile"]),
    ("replay-out-under-a-file", ["replay", "--driver", "reference", "--out", "afile/replay"], ["--out=", "afile"]),
    ("run-driver-timeout-nan", ["run", "--", "--collect-only", "--driver-timeout=nan"], ["--driver-timeout=nan"]),
    ("score-jobs-zero", ["score", "--only", "no-such-bug", "--jobs", "0"], ["--jobs", "0"]),
    ("score-seed-inf", ["score", "--only", "no-such-bug", "--seed", "inf"], ["--seed", "inf"]),
    ("score-examples-negative", ["score", "--only", "no-such-bug", "--examples", "-1"], ["--examples", "-1"]),
    ("score-seeds-word", ["score", "--only", "no-such-bug", "--seeds", "1,x"], ["--seeds", "x"]),
    # checked before scoring (it was written after minutes of it); --only would be refused next
    ("score-json-under-a-file", ["score", "--only", "no-such-bug", "--json", "afile/score.json"], ["--json=afile/score.json"]),
]

#: (id, pytest options, environment, what the one line must name): the plugin's options.
PYTEST_CASES = [
    ("driver-timeout-nan", ["--driver-timeout=nan"], {}, ["--driver-timeout=nan"]),
    ("driver-timeout-inf", ["--driver-timeout=inf"], {}, ["--driver-timeout=inf"]),
    ("driver-timeout-huge", ["--driver-timeout=1e308"], {}, ["--driver-timeout=1e308"]),
    ("driver-timeout-negative", ["--driver-timeout=-1"], {}, ["--driver-timeout=-1", "above zero"]),
    ("driver-timeout-zero", ["--driver-timeout=0"], {}, ["--driver-timeout=0", "above zero"]),
    ("driver-timeout-word", ["--driver-timeout=soon"], {}, ["--driver-timeout=soon"]),
    ("driver-timeout-from-environment", [], {"PYTEST_ADDOPTS": "--driver-timeout=nan"}, ["--driver-timeout=nan"]),
    ("harness-examples-negative", ["--harness-examples=-1"], {}, ["--harness-examples=-1", "above zero"]),
    ("harness-examples-fraction", ["--harness-examples=2.5"], {}, ["--harness-examples=2.5"]),
    ("harness-rounds-for-nan", ["--harness-rounds-for=nan"], {}, ["--harness-rounds-for=nan"]),
    ("harness-rounds-for-inf", ["--harness-rounds-for=inf"], {}, ["--harness-rounds-for=inf"]),
    ("driver-memory-limit-negative", ["--driver-memory-limit=-1"], {}, ["--driver-memory-limit=-1"]),
    ("driver-memory-limit-huge", ["--driver-memory-limit=" + "9" * 30], {}, ["--driver-memory-limit=999"]),
    ("harness-seed-nan", ["--harness-seed=nan"], {}, ["--harness-seed=nan"]),
    ("harness-profile-unknown", ["--harness-profile=fast"], {}, ["--harness-profile=fast"]),
    ("driver-isolation-unknown", ["--driver-isolation=thread"], {}, ["--driver-isolation=thread"]),
    ("harness-record-under-a-file", ["--harness-record=afile/record.jsonl"], {}, ["--harness-record=afile/record.jsonl"]),
    ("harness-record-a-directory", ["--harness-record=emptydir"], {}, ["--harness-record=emptydir"]),
    ("harness-record-read-only", ["--harness-record={ro}/record.jsonl"], {}, ["--harness-record={ro}/record.jsonl"]),
    # a full disk: the first record written (the session's, at collection) is refused, and the run ends
    ("harness-record-full-disk", ["--harness-record=/dev/full"], {}, ["--harness-record"]),
    ("harness-stop-on-unknown", ["--harness-stop-on=BOGUS-9"], {}, ["--harness-stop-on=BOGUS-9", "POOL-1"]),
    ("harness-first-operations-unknown", ["--harness-first-operations=ADD,CONV2D"], {},
     ["--harness-first-operations=ADD,CONV2D", "CONV2D is not an operation"]),
    ("harness-reproducers-a-file", ["--harness-record=r.jsonl", "--harness-reproducers=afile"], {},
     ["--harness-reproducers=afile"]),
    ("harness-reproducers-read-only", ["--harness-record=r.jsonl", "--harness-reproducers={ro}/scripts"], {},
     ["--harness-reproducers={ro}/scripts"]),
    ("harness-db-a-file", ["--harness-db=afile"], {}, ["--harness-db=afile"]),
    ("harness-db-under-a-file", ["--harness-db=afile/db"], {}, ["--harness-db=afile/db"]),
    ("expectations-binary", ["--expectations=binary.toml"], {}, ["binary.toml"]),
    ("expectations-malformed", ["--expectations=bad.toml"], {}, ["bad.toml"]),
    ("cts-specs-missing", ["--cts-specs=nope"], {}, ["--cts-specs=nope"]),
    ("cache-directory-under-a-file", [], {"DRIVER_HARNESS_CACHE": "afile/cache"}, ["DRIVER_HARNESS_CACHE=afile/cache"]),
]


#: Starts each case's pytest session forked from one interpreter that has imported pytest and the
#: plugin (each session is still a process of its own, from a clean parent, with its own environment
#: and working directory, and output): a new interpreter per case took about 2 s of imports, 29 times.
_FORKING_RUNNER = """
import json, os, sys, traceback
import pytest
import harness.integration.plugin

results = []
for case in json.load(sys.stdin):
    out, err = (os.open(os.path.join(case["cwd"], name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                for name in (".stdout", ".stderr"))
    pid = os.fork()
    if pid == 0:
        os.chdir(case["cwd"])
        os.environ.update(case["env"])
        os.dup2(out, 1)
        os.dup2(err, 2)
        try:
            code = pytest.main(case["args"])
        except SystemExit as error:
            code = error.code
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code or 0))
    os.close(out)
    os.close(err)
    status = os.waitpid(pid, 0)[1]
    outputs = []
    for name in (".stdout", ".stderr"):
        with open(os.path.join(case["cwd"], name), encoding="utf-8", errors="replace") as f:
            outputs.append(f.read())
        os.unlink(os.path.join(case["cwd"], name))
    results.append({"code": os.waitstatus_to_exitcode(status), "stdout": outputs[0], "stderr": outputs[1]})
json.dump(results, sys.stdout)
"""


@contextlib.contextmanager
def _read_only_directory(path: Path) -> Iterator[bool]:
    """``path`` made a directory nobody may write into (root too: immutable, when chattr can);
    whether it could be."""
    path.mkdir()
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield True
        finally:
            path.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    immutable = chattr is not None and subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode == 0
    try:
        yield immutable
    finally:
        if immutable:
            subprocess.run([chattr, "-i", str(path)], check=True)


def _bad_files(directory: Path) -> Path:
    """The files the cases name, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "binary.toml").write_bytes(b"\xff\xfe\x00[[expect]]\x80\x81\n")
    (directory / "bad.toml").write_text("[[expect]]\ntest = 1\n")
    (directory / "afile").write_text("a regular file\n")
    (directory / "emptydir").mkdir()
    return directory


@pytest.fixture(scope="module")
def read_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """A directory nobody may write into (None where none can be made)."""
    path = tmp_path_factory.mktemp("bad-input") / "read-only"
    with _read_only_directory(path) as made:
        yield path if made else None


def _placed(items: list[str], read_only: Path | None) -> list[str]:
    if any("{ro}" in item for item in items):
        if read_only is None:
            pytest.skip("no directory can be made unwritable here (root without chattr)")
        return [item.replace("{ro}", str(read_only)) for item in items]
    return items


def _files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if not path.is_dir()}


def _assert_one_clear_line(done: subprocess.CompletedProcess, code: int, names: list[str]) -> None:
    everything = done.stdout + done.stderr
    assert done.returncode == code, everything
    assert "Traceback" not in everything and "INTERNALERROR" not in everything, everything
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert all(name in lines[0] for name in names), (names, lines[0])


@pytest.mark.parametrize("args, names", [case[1:] for case in HARNESS_CASES], ids=[case[0] for case in HARNESS_CASES])
def test_bad_harness_input_is_one_line_and_exit_2(tmp_path: Path, read_only: Path | None, args: list[str],
                                                  names: list[str]) -> None:
    args, names = _placed(args, read_only), _placed(names, read_only)
    before = _files_under(_bad_files(tmp_path))
    done = run(tmp_path, *args)
    _assert_one_clear_line(done, 2, names)
    # refused before anything ran: no report, record or database file written (an output
    # directory may have been made, empty)
    assert _files_under(tmp_path) == before, _files_under(tmp_path) - before


def _run_plugin_cases(directory: Path) -> dict:
    """Every case of PYTEST_CASES that can run here, each in a directory of its own: id -> exit code,
    output, and the files it left there that were not there before; "read_only": the unwritable
    directory the cases named (None: there is none here, and its cases did not run)."""
    with _read_only_directory(directory / "read-only") as made:
        read_only = directory / "read-only" if made else None
        cases, runnable = [], []
        for name, options, env, _ in PYTEST_CASES:
            if any("{ro}" in option for option in options) and read_only is None:
                continue
            if any("/dev/full" in option for option in options) and not os.path.exists("/dev/full"):
                continue
            where = _bad_files(directory / name)
            cases.append({"cwd": str(where), "env": env,
                          "args": ["-p", "no:cacheprovider", "--pyargs", "harness.suites.requests", "--driver=reference",
                                   "--collect-only", "-q", *_placed(options, read_only)]})
            runnable.append((name, where, _files_under(where)))
        done = subprocess.run([sys.executable, "-c", _FORKING_RUNNER], input=json.dumps(cases), capture_output=True,
                              text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    results = {name: {**result, "left": sorted(str(path) for path in _files_under(where) - before)}
               for (name, where, before), result in zip(runnable, json.loads(done.stdout))}
    return {"cases": results, "read_only": str(read_only) if read_only else None}


@pytest.fixture(scope="module")
def plugin_cases(once_per_run) -> dict:
    """The plugin's cases, run once for the whole test run (all of them by whichever worker comes first)."""
    return once_per_run("bad-plugin-input", _run_plugin_cases)[1]


@pytest.mark.parametrize("name, names", [(case[0], case[3]) for case in PYTEST_CASES], ids=[case[0] for case in PYTEST_CASES])
def test_bad_plugin_input_is_one_line_and_a_usage_error(plugin_cases: dict, name: str, names: list[str]) -> None:
    if name not in plugin_cases["cases"]:
        pytest.skip("needs a read-only directory or /dev/full, and this system has none")
    result = plugin_cases["cases"][name]
    done = subprocess.CompletedProcess([], result["code"], result["stdout"], result["stderr"])
    read_only = Path(plugin_cases["read_only"]) if plugin_cases["read_only"] else None
    _assert_one_clear_line(done, pytest.ExitCode.USAGE_ERROR, _placed(names, read_only))
    assert not result["left"], result["left"]


def test_the_plugin_cases_run_as_their_own_process(tmp_path: Path) -> None:
    """The forked sessions above stand for ``python -m pytest``: one case run that way says the same."""
    _bad_files(tmp_path)
    done = run(tmp_path, "-p", "no:cacheprovider", "--pyargs", "harness.suites.requests", "--driver=reference",
               "--collect-only", "-q", "--driver-timeout=nan", module="pytest")
    _assert_one_clear_line(done, pytest.ExitCode.USAGE_ERROR, ["--driver-timeout=nan"])


@pytest.mark.parametrize("command", ["fuzz", "replay"])
def test_an_unknown_driver_lists_the_drivers_before_anything_runs(tmp_path: Path, command: str) -> None:
    done = run(tmp_path, command, "--driver", "no-such-driver", "--out", "out")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unknown driver 'no-such-driver'" in done.stderr and "Traceback" not in done.stderr
    listed = next(line for line in done.stderr.splitlines() if line.startswith("Drivers:"))
    assert "reference" in listed and "mutant-offset-ignored" not in listed  # the harness's own test drivers are counted, not listed
    assert "harness list --all" in done.stderr
    # told before any worker started: no progress lines, nothing written
    assert done.stdout == "" and not (tmp_path / "out").exists()


def test_a_driver_module_that_is_not_there_is_the_workers_whole_error(tmp_path: Path) -> None:
    done = run(tmp_path, "fuzz", "--driver", "no_such_module:factory", "--minutes", "0.2", "--out", "out")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = error_lines(done)
    assert "Traceback" not in done.stderr
    assert "no_such_module" in lines[-1] and lines[-1].startswith("harness fuzz: --driver=no_such_module:factory"), lines


def test_replaying_an_empty_database_says_nothing_was_stored(tmp_path: Path) -> None:
    done = run(tmp_path, "replay", "--driver", "reference", "--db", str(tmp_path / "empty-db"), "--out", "replay")
    assert done.returncode == 0, done.stderr
    assert "nothing is stored for this driver" in done.stdout and "0 examples replayed" in done.stdout


def test_a_factory_that_raises_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def factory():\n    raise ValueError('no device found')\n")
    done = run(tmp_path, "certify", "--driver", "broken.py:factory", "--out", "out")
    assert done.returncode == 2
    lines = error_lines(done)
    assert len(lines) == 1 and "no device found" in lines[0] and "broken.py:2" in lines[0], lines


@pytest.mark.parametrize("names", [["no-such-bug"], ["offset-ignored", "mutant-no-such-bug"]])
def test_score_refuses_a_name_that_is_no_seeded_bug_or_variant(tmp_path: Path, names: list[str]) -> None:
    """A misspelt --only scored nothing and exited 0: a gate on the score would have passed."""
    done = run(tmp_path, "score", "--only", *names, "--json", "score.json")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = error_lines(done)
    unknown = names[-1]
    assert len(lines) == 1 and f"--only: {unknown!r}" in lines[0] and "Traceback" not in lines[0], lines
    assert "offset-ignored" in lines[0] and "add-only" in lines[0]  # the names there are
    assert not (tmp_path / "score.json").exists()
