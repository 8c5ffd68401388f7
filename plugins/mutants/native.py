"""Native mutants: the sample C++ driver (plugins/native_sample) built with one seeded bug."""

from __future__ import annotations

import functools

from ._registry import mutant


def _native_mutant(name: str, requirement: str, description: str, flag: str) -> None:
    def factory():
        from harness.plugins.native_sample import sample_device

        return sample_device((f"-D{flag}",))

    mutant(name, requirement, description)(functools.update_wrapper(factory, factory))


_native_mutant("native-role-check-disabled", "DOM-ROLE-2", "the native sample accepts a token whatever roles it was "
               "allocated for", "NATIVE_MUTANT_ROLE_CHECK_DISABLED")
_native_mutant("native-region-off-by-one", "REQ-2", "the native sample accepts a region that ends one byte past its pool",
               "NATIVE_MUTANT_REGION_OFF_BY_ONE")
_native_mutant("native-crash-on-zero-size", "DOM-COPY-1", "the native sample dereferences NULL when a copy is given "
               "a memory of 0 bytes", "NATIVE_MUTANT_CRASH_ON_ZERO_SIZE")
_native_mutant("native-copy-ignores-file-offset", "DOM-COPY-1", "the native sample reads an mmap_fd memory from the "
               "start of its file, not from its offset", "NATIVE_MUTANT_COPY_IGNORES_FILE_OFFSET")
