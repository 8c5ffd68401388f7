"""The shared checks of what the harness reads (harness.integration.inputs), and what a full disk
does to a run's record and to certify's reports: one line and exit 2, nothing torn or half-written
left behind.  A full disk is simulated: a write that is cut short or refused with ENOSPC."""

from __future__ import annotations

import argparse
import errno
import json
import os
from pathlib import Path

import pytest

from harness.integration.inputs import Number, directory_problem, file_problem

SECONDS = Number(float, 0, high=86400, unit="seconds")


@pytest.mark.parametrize("text", ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e309"])
def test_nan_and_inf_are_no_numbers(text: str) -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        SECONDS.read(text)


@pytest.mark.parametrize("number, text, why", [
    (SECONDS, "0", "out of range"), (SECONDS, "-0.0", "out of range"), (SECONDS, "86400.5", "out of range"),
    (SECONDS, "soon", "not a number"), (SECONDS, "", "not a number"),
    (Number(int, 0), "2.5", "not a whole number"), (Number(int, 0), "0", "out of range"),
    (Number(int, 0, above=False), "-1", "out of range"), (Number(int, low=None), "1e3", "not a whole number"),
])
def test_out_of_range_and_unreadable_values_are_refused(number: Number, text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        number.read(text)


def test_values_in_range_are_read() -> None:
    assert SECONDS.read(" 2.5 ") == 2.5 and SECONDS.read("86400") == 86400.0
    assert Number(int, low=None).read("-7") == -7 and Number(int, 0, above=False).read("0") == 0


def test_what_is_allowed_is_said_in_words() -> None:
    assert SECONDS.allowed() == "a finite number above zero and at most 86400 (seconds)"
    assert Number(int, 0, above=False, high=2**43 - 1, note="0: no limit").allowed() == \
        "a whole number at least zero and at most 8796093022207 (0: no limit)"


def test_the_argparse_and_pytest_forms_name_the_value_and_what_is_allowed() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"'nan': not a finite number; allowed: a finite number above zero"):
        SECONDS.for_argparse()("nan")
    with pytest.raises(pytest.UsageError, match=r"^--driver-timeout=inf: not a finite number; allowed: "):
        SECONDS.for_pytest("--driver-timeout")("inf")


def test_directories_that_cannot_be_written_into(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    assert directory_problem(str(tmp_path)) is None
    assert directory_problem(str(tmp_path / "new" / "deeper")) is None and not (tmp_path / "new").exists()
    assert directory_problem(str(tmp_path / "made"), make=True) is None and (tmp_path / "made").is_dir()
    assert "is a file, not a directory" in directory_problem(str(tmp_path / "afile"))
    assert "afile is a file" in directory_problem(str(tmp_path / "afile" / "out"), make=True)
    assert not (tmp_path / "afile").is_dir()


def test_files_that_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    assert file_problem(str(tmp_path / "afile")) is None
    assert file_problem(str(tmp_path / "new" / "record.jsonl")) is None
    assert "is a directory" in file_problem(str(tmp_path))
    assert "afile is a file" in file_problem(str(tmp_path / "afile" / "record.jsonl"))


def _disk_full_after(monkeypatch: pytest.MonkeyPatch, room: int) -> None:
    """Every write from now on has ``room`` bytes left in all, then ENOSPC (as a full disk does)."""
    write, left = os.write, {"bytes": room}

    def full_write(fd: int, data: bytes) -> int:
        if left["bytes"] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = write(fd, bytes(data)[: left["bytes"]])
        left["bytes"] -= written
        return written

    monkeypatch.setattr(os, "write", full_write)


@pytest.mark.parametrize("room", [0, 10], ids=["refused", "cut-short"])
def test_a_full_disk_ends_the_run_with_one_line_and_no_torn_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   room: int) -> None:
    from harness.integration.recording import Recorder

    path = tmp_path / "records.jsonl"
    recorder = Recorder(str(path), "", canonical_id=lambda item: item)
    try:
        recorder.write_session({"driver": "reference"})
        _disk_full_after(monkeypatch, room)
        with pytest.raises(pytest.UsageError, match=r"^--harness-record: .*No space left on device"):
            recorder.write_session({"driver": "reference", "more": "x" * 100})
        monkeypatch.undo()
    finally:
        recorder.close()
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(line) for line in lines[:-1]] == [{"session": {"driver": "reference"}}]


def _fake_run(out: Path, code: int = 0, error: BaseException | None = None):
    """pytest.main as certify runs it: a junit.xml begun and a record written into ``out``."""

    def main(args: list[str]) -> int:
        (out / ".junit.xml.partial").write_text("<testsuites>")
        (out / "records.jsonl").write_text(json.dumps({"session": {"driver": "reference"}}) + "\n")
        if error is not None:
            raise error
        return code

    return main


def _certify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    from harness.commands.certify import certify

    code = certify("reference", str(tmp_path / "out"))
    captured = capsys.readouterr()
    return code, [line for line in captured.err.splitlines() if line.strip()]


def test_certify_on_a_full_disk_writes_no_half_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from harness.commands import certify as certify_module

    (tmp_path / "out").mkdir()
    monkeypatch.setattr(pytest, "main", _fake_run(tmp_path / "out"))
    writes, write = [], certify_module.write_atomically

    def write_until_full(path, text, **kwargs) -> None:
        writes.append(path)
        if len(writes) > 1:  # the certificate fits, the report does not
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write(path, text, **kwargs)

    monkeypatch.setattr(certify_module, "write_atomically", write_until_full)
    code, lines = _certify(tmp_path, capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("harness certify: --out=") and "No space left on device" in lines[0]
    left = sorted(path.name for path in (tmp_path / "out").iterdir())
    assert left == ["records.jsonl"], left  # no certificate without its report, no .junit.xml.partial


@pytest.mark.parametrize("code, error", [(int(pytest.ExitCode.USAGE_ERROR), None),
                                         (0, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))],
                         ids=["record-refused", "pytest-own-write-failed"])
def test_certify_leaves_no_partial_junit_when_the_run_could_not_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str], code: int,
                                                                      error: BaseException | None) -> None:
    """A record the disk refused ends the run as a usage error (pytest printed the line); a write of
    pytest's own (its junit.xml) raises out of it: either way, exit 2 and no half-written junit."""
    (tmp_path / "out").mkdir()
    monkeypatch.setattr(pytest, "main", _fake_run(tmp_path / "out", code, error))
    exit_code, lines = _certify(tmp_path, capsys)
    assert exit_code == 2
    assert len(lines) == (0 if error is None else 1), lines  # pytest printed its own line
    assert not (tmp_path / "out" / ".junit.xml.partial").exists()
    assert not (tmp_path / "out" / "certificate.json").exists()
