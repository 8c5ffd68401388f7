"""Tooling: native code the harness and its drivers build at first use with the system compiler.

Above the API and below everything else: the reference driver may use it (building is not
judging), and so may the service and the suites."""

from harness.tooling.build import CompilerMissing, build_shared_library

__all__ = ["CompilerMissing", "build_shared_library"]
