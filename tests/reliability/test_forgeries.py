"""A hostile driver's routes to a forged PASS, each tried, each closed (issue: the driver under test
cannot touch its own verdict)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import pytest

from harness.report.evidence import DirectoryInUse, HeldRecords, lock_output_directory
from harness.service import wire
from harness.service.messages import FROM_ZYGOTE
from harness.service.supervisor import DriverService
from harness.tooling.sandbox import landlock_abi

_EVIL_DRIVER = """
import os
from reference_driver import ReferenceDevice

def factory():
    for path in {targets!r}:
        try:
            with open(path, "w") as forged:
                forged.write("forged")
        except OSError:
            pass
    return ReferenceDevice()
"""


@pytest.mark.skipif(landlock_abi() < 1, reason="this kernel offers no Landlock: the certificate says unsandboxed")
def test_the_service_cannot_write_the_run_s_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    records = out / "records.jsonl"
    records.write_text("the harness's own\n")
    targets = [str(records), str(out / "certificate.json")]
    driver = tmp_path / "evil.py"
    driver.write_text(_EVIL_DRIVER.format(targets=targets))
    service = DriverService(f"{driver}:factory", timeout=30)
    try:
        assert service.sandbox.enforced
        assert service.device.capabilities() is not None  # the factory ran, and tried
    finally:
        service.close()
    assert records.read_text() == "the harness's own\n"
    assert not (out / "certificate.json").exists()


def test_a_zygote_message_naming_a_callable_is_refused():
    forged = pickle.dumps(("exited", os.system, "true"))  # what a driver in the zygote could send
    with pytest.raises(wire.UntrustedContent):
        wire.decode(forged, [], FROM_ZYGOTE)


def test_a_second_run_into_one_output_directory_is_refused(tmp_path):
    held = lock_output_directory(str(tmp_path))
    try:
        with pytest.raises(DirectoryInUse, match=str(os.getpid())):
            lock_output_directory(str(tmp_path))
        # another process meets the same refusal
        other = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            from harness.report.evidence import DirectoryInUse, lock_output_directory
            try:
                lock_output_directory({str(tmp_path)!r})
            except DirectoryInUse:
                raise SystemExit(7)
            """)], timeout=60)
        assert other.returncode == 7
    finally:
        held.release()
    lock_output_directory(str(tmp_path)).release()  # free again once the run ends


def test_records_renamed_over_or_deleted_change_nothing_read(tmp_path):
    records = HeldRecords(str(tmp_path / "records.jsonl"))
    try:
        with open(records.writer_path, "a") as writer:
            writer.write('{"id": "t", "outcome": "failed"}\n')
        forged = tmp_path / "forged.jsonl"
        forged.write_text('{"id": "t", "outcome": "passed"}\n')
        os.replace(forged, records.path)  # the forgery: a PASS renamed over the live file
        read, digest = records.read()
        assert read == [{"id": "t", "outcome": "failed"}]
        os.unlink(records.path)  # and deleting it erases nothing
        assert records.read() == (read, digest)
    finally:
        records.close()
