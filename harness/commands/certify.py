"""``harness certify``: every suite in the certify profile, then certificate.json, junit.xml, report.html.

A thin command over pytest: the run is an ordinary pytest session with the recording
plugin on; the certificate is computed from its records.  Ctrl-C or SIGTERM ends the
run early and still writes a certificate, marked INCOMPLETE, with what was found.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import time

from harness.integration.inputs import directory_problem
from harness.integration.own_config import own_pytest_options
from harness.report import certificate, html, root_causes
from harness.report.evidence import DirectoryInUse, HeldRecords, lock_output_directory
from harness.report.files import write_atomically
from harness.report.run_time import why_longer


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _remove(*paths: str) -> None:
    """What a run that ends without reports leaves behind: a half-written junit.xml is no report."""
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _interrupt_on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def certify(driver: str, out: str, expectations: str | None = None, seed: int | None = None,
            extra: list[str] | None = None, *, suites: str = "harness.suites", requirements: list[str] | None = None,
            command: str = "certify") -> int:
    given, out = out, os.path.abspath(out)
    problem = directory_problem(out, make=True)
    if problem:
        print(f"harness {command}: --out={given}: cannot write into output directory: {problem}", file=sys.stderr)
        return 2
    try:
        lock = lock_output_directory(out)
    except (DirectoryInUse, OSError) as error:
        print(f"harness {command}: {error}", file=sys.stderr)
        return 2
    records_file = None
    try:
        records_file = HeldRecords(os.path.join(out, "records.jsonl"))
        return _run_and_report(driver, out, given, expectations, seed, extra, suites, requirements, command,
                               records_file)
    finally:
        if records_file is not None:
            records_file.close()
        lock.release()


def _run_and_report(driver: str, out: str, given: str, expectations: str | None, seed: int | None, extra: list[str] | None,
                    suites: str, requirements: list[str] | None, command: str, records_file: HeldRecords) -> int:
    import pytest

    reproducers = os.path.join(out, "reproducers")
    junit_partial = os.path.join(out, ".junit.xml.partial")
    args = [*own_pytest_options(), "--pyargs", suites, f"--driver={driver}", "--harness-profile=certify",
            f"--harness-record={records_file.writer_path}", f"--harness-reproducers={reproducers}",
            f"--junitxml={junit_partial}", "-q"]
    if expectations:
        args.append(f"--expectations={expectations}")
    args.append(f"--harness-seed={0 if seed is None else seed}")  # derandomized: the same run every time
    args += extra or []
    started, clock = _now(), time.monotonic()
    previous = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    try:
        code = int(pytest.main(args))
    except KeyboardInterrupt:
        code = int(pytest.ExitCode.INTERRUPTED)
    except OSError as error:  # pytest's own junit.xml, say, on a full disk
        _remove(junit_partial)
        print(f"harness {command}: --out={given}: cannot write the run's files: {error.strerror}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    if code == int(pytest.ExitCode.USAGE_ERROR):
        # pytest printed the one-line reason (unknown driver, malformed expectations, a record that
        # could not be written, ...); a junit.xml begun before it is no report
        records_file.discard()  # a refused run leaves no records behind
        _remove(junit_partial)
        return 2
    # The records as the run wrote them, through the descriptor this process holds (never the path
    # again), and put back at their path as read, so that the file beside the certificate is the one
    # its digest names.
    records, digest = records_file.read()
    session = next((r["session"] for r in records if "session" in r), {"driver": driver})
    complete = code in (int(pytest.ExitCode.OK), int(pytest.ExitCode.TESTS_FAILED))
    document = certificate.build(records, session, started, _now(), complete, round(time.monotonic() - clock, 1),
                                 requirements)
    document["evidence"] = {"records": os.path.basename(records_file.path), "records_sha256": digest,
                            "record_count": len(records)}
    try:
        write_atomically(records_file.path, "".join(json.dumps(record) + "\n" for record in records))
        write_atomically(os.path.join(out, "certificate.json"), json.dumps(document, indent=2))
        write_atomically(os.path.join(out, "report.html"), html.render(document))
        if os.path.exists(junit_partial):
            os.replace(junit_partial, os.path.join(out, "junit.xml"))
    except OSError as error:  # a full disk: no certificate rather than half of one (each write is atomic)
        _remove(junit_partial, os.path.join(out, "certificate.json"))
        print(f"harness {command}: --out={given}: cannot write the certificate and reports: {error.strerror}",
              file=sys.stderr)
        return 2
    counts = ", ".join(f"{n} {status}" for status, n in document["counts"].items() if n)
    print(f"harness {command}: {driver}: {document['verdict']} ({counts}); reports in {out}")
    causes = document["root_causes"]
    if causes:
        failed = len(document["failures"])
        print(f"harness {command}: {failed} failed test{'s' if failed != 1 else ''}, "
              f"{len(causes)} root cause{'s' if len(causes) != 1 else ''} (requirement broken, call, message):")
        for line in root_causes.console_lines(causes):
            print(line)
        print(f"harness {command}: where the failing tests' time went: {why_longer(document)}")
    corpus = document["golden"]["corpus"]
    if corpus:
        cells = [c for types in document["golden"]["coverage"].values() for c in types.values()]
        run, passed = sum(c["run"] for c in cells), sum(c["passed"] for c in cells)
        unsupported = sum(c["unsupported"] for c in cells)
        print(f"harness {command}: golden corpus: {corpus['files']} files, {corpus['examples']} examples, "
              f"{corpus['declared']} declared by the driver ({corpus['not_declared']} not declared, "
              f"{len(corpus['unexpressed'])} the harness could not read); (operation, type) checks passed: {passed} of "
              f"{run}, {unsupported} reported unsupported by the driver")
        if corpus["unexpressed"]:  # whatever the verdict: their examples did not run
            print(f"harness {command}: {len(corpus['unexpressed'])} spec files or examples the harness could not read "
                  "(their examples did not run):", file=sys.stderr)
            for entry in corpus["unexpressed"]:
                print(f"    {entry['reason']}", file=sys.stderr)
    if document.get("nothing_checked") and document["verdict"] == "INCOMPLETE" and not document["not_run"]:
        print(f"harness {command}: no check ran: {certificate.NOTHING_CHECKED_FIX}", file=sys.stderr)
    if document["files_left_out"]:
        print(f"harness {command}: files left out of the run ({', '.join(document['files_left_out'])}): "
              "what their tests check is unknown", file=sys.stderr)
    if document["not_run"] or document["files_left_out"]:
        print(f"harness {command}: not run: {', '.join(document['not_run']) or 'the files left out'}. To run them:",
              file=sys.stderr)
        for fix in document["fixes"]:
            print(f"    {fix}", file=sys.stderr)
    return 0 if document["verdict"] in ("PASS", "PASS-WITH-WAIVERS") else 1
