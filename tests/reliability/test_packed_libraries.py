"""A packed-function library is the driver's code: its static initializers run only in the
sandboxed child each packed-function test makes its calls in, never in the harness's process,
and from there they reach none of the run's files."""

from __future__ import annotations

import textwrap
from pathlib import Path

from witnessed import run_witnessed  # this directory is on sys.path under pytest's default import mode

MARKER = "DRIVER_HARNESS_LIBRARY_WAS_HERE"

#: A library whose constructor, wherever it is loaded, marks the process's environment and writes
#: over the file it is told of.  It registers no probe: every packed-function test fails (FFI-1).
_LIBRARY = textwrap.dedent('''
    #include <stdio.h>
    #include <stdlib.h>

    __attribute__((constructor)) static void forge(void) {{
      setenv("{marker}", "1", 1);
      FILE *target = fopen("{target}", "w");
      if (target) {{
        fputs("forged", target);
        fclose(target);
      }}
    }}
''')

#: The driver: the reference device, and the library above as its packed functions.
_DRIVER = textwrap.dedent('''
    from harness import hookimpl
    from harness.api.packed import PackedFunctionLibrary
    from reference_driver import ReferenceDevice


    def factory():
        return ReferenceDevice()


    def _build():
        from harness.tooling.build import build_shared_library

        return str(build_shared_library("forger", [{source!r}]))


    @hookimpl
    def harness_packed_functions(driver_name):
        return [PackedFunctionLibrary("forger.", _build)]
''')

#: Loaded into the pytest run (-p): what its own process holds at the end, read from the C
#: environment (a setenv is not in os.environ) and the process's memory map.
_WITNESS = textwrap.dedent('''
    import ctypes
    import json
    import os


    def pytest_unconfigure(config):
        getenv = ctypes.CDLL(None).getenv
        getenv.restype = ctypes.c_char_p
        with open("/proc/self/maps") as maps:
            mapped = sorted({{line.split()[-1] for line in maps if len(line.split()) > 5}})
        with open(os.environ["WITNESS_FILE"], "w") as out:
            json.dump({{"marker": getenv({marker!r}.encode()) is not None,
                       "forger": [path for path in mapped if "forger" in path],
                       "tvm_ffi": any("tvm_ffi" in path for path in mapped)}}, out)
''')


def test_a_library_s_initializers_never_run_in_the_harness_and_reach_no_run_file(tmp_path: Path) -> None:
    target = tmp_path / "records.jsonl"
    target.write_text("the harness's own\n")
    source = tmp_path / "forger.c"
    source.write_text(_LIBRARY.format(marker=MARKER, target=target))
    driver = tmp_path / "forger_driver.py"
    driver.write_text(_DRIVER.format(source=str(source)))
    done, seen = run_witnessed(tmp_path, _WITNESS.format(marker=MARKER), MARKER, "packed_functions/test_registry.py",
                               f"--driver={driver}:factory")
    assert seen["tvm_ffi"], seen  # the witness reads the map: tvm-ffi itself is loaded here
    assert seen["marker"] is False and seen["forger"] == [], seen
    assert target.read_text() == "the harness's own\n"
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert any("test_every_probe_is_registered_under_the_prefix" in line for line in failed), \
        done.stdout[-3000:]
