"""Native code the harness and its drivers build at first use with the system compiler."""

from harness.native.build import CompilerMissing, build_shared_library

__all__ = ["CompilerMissing", "build_shared_library"]
