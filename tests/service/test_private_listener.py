"""The driver service talks only to its own harness (issue 15, security).

Its listener for further clients is a filesystem socket in a directory only the harness's user
can enter, never an abstract name that every process sees in /proc/net/unix; and a peer of
another user is disconnected before a single byte of what it sent is read, let alone unpickled.
"""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534

# The other user's client, in C: the machine's Python may live where that user cannot run it.
INTRUDER = r"""
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
    char payload[4096];
    FILE *f = fopen(argv[2], "rb");
    size_t size = f ? fread(payload, 1, sizeof payload, f) : 0;
    int sock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, argv[1], sizeof address.sun_path - 1);
    if (connect(sock, (struct sockaddr *)&address, sizeof address) != 0) {
        printf("refused-at-connect %d\n", errno);
        return 0;
    }
    if (send(sock, payload, size, 0) < 0) { printf("disconnected %d\n", errno); return 0; }
    char reply[65536];
    ssize_t got = recv(sock, reply, sizeof reply, 0);
    printf(got <= 0 ? "disconnected %d\n" : "answered %d\n", got < 0 ? errno : 0);
    return 0;
}
"""


class _Payload:
    """What an unpickling service would run: it creates the marker file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _abstract_names() -> list[str]:
    with open("/proc/net/unix", encoding="ascii") as table:
        return [line.split()[-1] for line in table if line.split()[-1].startswith("@")]


def test_no_abstract_listener_and_a_private_socket(service) -> None:
    assert not [name for name in _abstract_names() if f"driver-harness-{os.getpid()}" in name]
    directory = Path(service.address).parent
    info = directory.stat()
    assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
    assert stat.S_ISSOCK(Path(service.address).stat().st_mode)


def _as_nobody(program: Path, *args: str) -> str:
    # user/group, not a preexec_fn: no Python runs between fork and exec (jax may have threads).
    done = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=60,
                          user=NOBODY, group=NOBODY, extra_groups=[])
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to start a process as another user (nobody)")
def test_another_user_is_refused_before_anything_is_decoded(service, tmp_path) -> None:
    from harness.tooling import CompilerMissing
    from harness.tooling.build import find_compiler

    try:
        compiler = find_compiler()
    except CompilerMissing as error:
        pytest.skip(f"the other user's client is built in C: {error}")
    where = Path(tempfile.mkdtemp(prefix="intruder-"))  # readable by nobody, unlike pytest's tmp_path
    os.chmod(where, 0o755)
    source, program = where / "intruder.c", where / "intruder"
    source.write_text(INTRUDER)
    subprocess.run([compiler, "-o", str(program), str(source)], check=True, capture_output=True, timeout=120)
    marker = tmp_path / "unpickled"  # what the payload would create, as the service's user
    payload = where / "payload"
    payload.write_bytes(pickle.dumps(("call", 1, 0, "capabilities", (_Payload(str(marker)),))))
    os.chmod(payload, 0o644)
    # As the service is set up: the directory keeps the other user out.
    assert _as_nobody(program, service.address, str(payload)).startswith("refused-at-connect")
    # Even with the directory and the socket opened up, the service checks its peer's user and
    # closes the connection before reading: nothing is decoded, the payload never runs.
    directory = Path(service.address).parent
    os.chmod(directory, 0o755)
    os.chmod(service.address, 0o666)
    try:
        outcome = _as_nobody(program, service.address, str(payload))
    finally:
        os.chmod(directory, 0o700)
        shutil.rmtree(where, ignore_errors=True)
    assert outcome.startswith("disconnected"), outcome
    assert not marker.exists()
    assert service.device.capabilities().memory_domains  # and it still serves its own harness
