"""The kernel sandbox a driver's zygote and services run in: Linux Landlock.

What a driver's process may do once `confine` returned (and every process it forks after):
- read any file it could read before (its own plugin, the Python installation, shared libraries);
- write, create, remove, rename or truncate only beneath its scratch directories: the service's
  own directory (its socket and ``TMPDIR``) and the native build cache;
- write to the character devices a program writes to as a matter of course (``/dev/null`` and
  the like);
- use the memories it is handed, which arrive as descriptors, not paths.
What it cannot do:
- write anything else: the run's output directory, the records, the harness's own files;
- bind or connect TCP sockets (an example database on a Redis server is the harness's);
- signal, trace or read the memory of a process outside its sandbox (the harness), or connect to
  an abstract Unix socket made outside it.

Landlock is unprivileged, stacks with any other confinement, and is inherited by every child; it
needs Linux 5.13 (file system), 6.7 (TCP) and 6.12 (signals and abstract sockets).  Where the
kernel offers less, `Sandbox.describe` says what is missing, and the certificate records it.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Sandbox", "SandboxError", "confine", "landlock_abi", "plan"]

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# File-system rights (linux/landlock.h) and the ABI version that brought them.
_WRITE_FILE = 1 << 1
_WRITE_RIGHTS: tuple[tuple[int, int], ...] = (
    (_WRITE_FILE, 1), (1 << 4, 1), (1 << 5, 1), (1 << 6, 1), (1 << 7, 1),  # REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR
    (1 << 8, 1), (1 << 9, 1), (1 << 10, 1), (1 << 11, 1), (1 << 12, 1),  # MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM
    (1 << 13, 2),  # REFER: renames and links across directories
    (1 << 14, 3),  # TRUNCATE
)
_TRUNCATE = 1 << 14
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

#: Devices every program may write to; a rule on a file may only grant a file's rights.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom")


class SandboxError(OSError):
    """The kernel refused to set up the sandbox that was asked for."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(number: int, *args: object) -> int:
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        code = ctypes.get_errno()
        raise SandboxError(code, os.strerror(code))
    return result


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers: 0 where it has none (or it is disabled)."""
    try:
        return _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except SandboxError:
        return 0


@dataclass(frozen=True)
class Sandbox:
    """What a confined process may write, and what the kernel enforces of it (as data, for the
    record and the certificate)."""

    mechanism: str  # "landlock", or "none"
    abi: int
    writable: tuple[str, ...]
    tcp_denied: bool
    signals_scoped: bool
    left_off: bool = False  # by the caller (a benchmark of its cost), although the kernel offers Landlock

    @property
    def enforced(self) -> bool:
        return self.mechanism != "none"

    def describe(self) -> dict:
        """The certificate's account: what a driver's process could and could not reach."""
        if not self.enforced:
            why = "left off by its caller" if self.left_off else "the kernel offers no Landlock"
            return {"mechanism": "none", "enforced": False,
                    "why": f"{why}: the driver's processes ran unsandboxed, able to write wherever the harness's "
                           "user can"}
        missing = [what for what, held in (("tcp", self.tcp_denied), ("signals and abstract sockets", self.signals_scoped))
                   if not held]
        return {"mechanism": f"landlock (ABI {self.abi})", "enforced": True, "writable": list(self.writable),
                "tcp_denied": self.tcp_denied, "signals_and_abstract_sockets_scoped": self.signals_scoped,
                "not_enforced_by_this_kernel": missing}


def plan(writable: Sequence[str], enabled: bool = True) -> Sandbox:
    """The sandbox this kernel can give a process allowed to write beneath ``writable``; none
    when not ``enabled`` (only a measurement of what the sandbox costs leaves it off)."""
    abi = landlock_abi()
    if abi < 1:
        return Sandbox("none", 0, tuple(writable), False, False)
    if not enabled:
        return Sandbox("none", abi, tuple(writable), False, False, left_off=True)
    return Sandbox("landlock", abi, tuple(writable), abi >= 4, abi >= 6)


def confine(writable: Sequence[str]) -> Sandbox:
    """Confine this thread (and every process it forks afterwards) as `plan` says; call it in a
    single-threaded process.  Raises `SandboxError` where the kernel has Landlock and refuses."""
    sandbox = plan(writable)
    if not sandbox.enforced:
        return sandbox
    handled = 0
    for right, since in _WRITE_RIGHTS:
        if sandbox.abi >= since:
            handled |= right
    attr = _RulesetAttr(handled, _NET_BIND_TCP | _NET_CONNECT_TCP if sandbox.tcp_denied else 0,
                        _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if sandbox.signals_scoped else 0)
    size = 24 if sandbox.signals_scoped else 16 if sandbox.tcp_denied else 8
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for directory in writable:
            _allow(ruleset, directory, handled)
        for device in _DEVICES:
            _allow(ruleset, device, handled & (_WRITE_FILE | _TRUNCATE), missing_ok=True)
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            code = ctypes.get_errno()
            raise SandboxError(code, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(code)}")
        _syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return sandbox


def _allow(ruleset: int, path: str, access: int, missing_ok: bool = False) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as error:
        if missing_ok and error.errno in (errno.ENOENT, errno.ENXIO, errno.EACCES):
            return
        raise SandboxError(error.errno or 0, f"cannot open {path!r} to allow writes beneath it: {error.strerror}") from None
    try:
        rule = _PathBeneathAttr(access, fd)
        _syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                 ctypes.c_uint32(0))
    finally:
        os.close(fd)
