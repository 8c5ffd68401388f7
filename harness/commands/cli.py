"""The ``harness`` command: thin commands over pytest and the plugin registry.

    harness list                      every registered driver, with description and capabilities
    harness run --driver NAME [...]   the suites against a driver (any pytest options after --)
    harness score [...]               the suites' own score against the seeded-bug drivers
    harness certify --driver NAME [--out DIR]   certificate.json, junit.xml and report.html
    harness cts --driver NAME --specs DIR       NNAPI golden spec files on a driver (OPS-1..3)
    harness init NAME                 a new driver package to fill in, already certifiable
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from harness.api.errors import HarnessError
from harness.integration.inputs import Number

if TYPE_CHECKING:
    from harness.drivers.catalog import DriverEntry


#: What `harness list` says a driver declares for it (`harness.drivers.catalog`'s kinds).
_DECLARED_KINDS = {"custom_call_targets": "custom-call targets", "packed_function_libraries": "packed-function libraries"}


def _list(options: argparse.Namespace) -> int:
    from harness.integration.plugin import describe_capabilities
    from harness.drivers.catalog import load_catalog

    catalog = load_catalog()
    print("Drivers as their plugins describe them (read by a sandboxed probe: no driver runs here).")
    for name in catalog.names():
        entry = catalog.drivers[name]
        if _seeded(entry) and not options.all:
            continue
        print(f"{name}: {entry.description} [plugin {entry.plugin}]")
        if entry.declaration_error:
            print(f"    declarations refused: {entry.declaration_error}")
            continue
        if entry.capabilities is not None:
            print(f"    declared {describe_capabilities(entry.capabilities)}")
        else:
            print("    capabilities: not declared by its plugin; a run asks the driver when its service starts")
        if entry.declares:
            kinds = ", ".join(_DECLARED_KINDS[kind] for kind in sorted(entry.declares))
            print(f"    declares {kinds}")
    hidden = sum(1 for entry in catalog.drivers.values() if _seeded(entry))
    if hidden and not options.all:
        print(f"({hidden} seeded-bug, deep-bug and correct-variant drivers not shown; harness list --all shows them)")
    for plugin, reason in sorted(catalog.broken.items()):
        print(f"plugin {plugin} failed to load: {reason}", file=sys.stderr)
    return 0


def _seeded(entry: DriverEntry) -> bool:
    """A driver made to measure the harness (a seeded or deep bug, a correct variant), not to use."""
    return bool(entry.breaks or entry.exercises or entry.deep_bug)


def _run(options: argparse.Namespace, extra: list[str]) -> int:
    import pytest

    code = int(pytest.main(["--pyargs", "harness.suites", f"--driver={options.driver}",
                            f"--harness-profile={options.profile}", *extra]))
    return 2 if code == int(pytest.ExitCode.USAGE_ERROR) else code  # the harness's usage errors exit 2


#: What the numeric options allow (a bad value is one line and exit 2, from argparse; never nan or inf).
MINUTES = Number(float, 0, high=366 * 24 * 60, unit="minutes")
WORKERS = Number(int, 0, high=1024, unit="processes")
SEED = Number(int, low=None)


def _suites(text: str) -> str:
    """An argparse type: ``--suites`` names suites (checked as parsed: ``--suites ""`` fuzzed every suite)."""
    from harness.commands.fuzz import select_suites

    try:
        select_suites(text)
    except HarnessError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--suites: ")) from None
    return text


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments are one line (``harness fuzz: argument --minutes: '-1': out of range; allowed: ...``), exit 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


_DRIVER_HELP = "a registered driver's name (harness list shows them)"
_DB_HELP = ("where failing examples are kept: a directory, or a Redis URL that workers and machines share "
            "(default: .hypothesis/examples)")


def command_line() -> OneLineParser:
    """The ``harness`` command line: one subcommand each for list, run, score, certify, cts, fuzz
    and replay (score parses its own options)."""
    parser = OneLineParser(prog="harness", description="Conformance and fuzz testing of accelerator drivers.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="list registered drivers")
    listing.add_argument("--all", action="store_true", help="include the seeded-bug drivers")
    run = commands.add_parser("run", help="run the suites against a driver (pytest options after --)")
    run.add_argument("--driver", default="reference", help=_DRIVER_HELP)
    run.add_argument("--profile", default="dev", choices=("dev", "ci", "certify", "nightly"),
                     help="how many examples each generative test draws (default: dev, the fewest)")
    commands.add_parser("score", help="score the suites against the seeded-bug drivers", add_help=False)
    certify = commands.add_parser("certify", help="certify a driver: certificate.json, junit.xml, report.html")
    certify.add_argument("--driver", required=True, help=_DRIVER_HELP)
    certify.add_argument("--out", default="certification", metavar="DIR",
                         help="where certificate.json, junit.xml, report.html and reproducers/ go (default: certification)")
    certify.add_argument("--expectations", default=None, metavar="FILE",
                         help="a TOML file of your known skips and xfails, each with its reason (waived in the certificate)")
    certify.add_argument("--seed", type=SEED.for_argparse(), default=None, help="default: 0 (the certify profile's fixed seed)")
    cts = commands.add_parser("cts", help="run NNAPI CTS golden spec files (*.mod.py) on a driver: certificate of OPS-1..3")
    cts.add_argument("--driver", required=True, help=_DRIVER_HELP)
    cts.add_argument("--specs", action="append", required=True, metavar="PATH",
                     help="a spec file or directory (recursive), e.g. an AOSP checkout's "
                          "packages/modules/NeuralNetworks/runtime/test/specs; repeatable")
    cts.add_argument("--out", default="cts", metavar="DIR", help="where the certificate and its reports go (default: cts)")
    fuzz = commands.add_parser("fuzz", help="generate for a time budget; keep every failure")
    fuzz.add_argument("--driver", required=True, help=_DRIVER_HELP)
    fuzz.add_argument("--minutes", type=MINUTES.for_argparse(), default=10.0, help="the time budget (default: 10)")
    fuzz.add_argument("--workers", type=WORKERS.for_argparse(), default=1, help="fuzzing processes at once, each with its own driver service (default: 1)")
    fuzz.add_argument("--db", default=".hypothesis/examples", metavar="PATH|redis://HOST:PORT/N", help=_DB_HELP)
    fuzz.add_argument("--out", default="fuzz", metavar="DIR",
                      help="where fuzz-summary.json, fuzz-report.html, each round's records and reproducers/ go (default: fuzz)")
    fuzz.add_argument("--suites", default=None, type=_suites, metavar="NAME,...",
                      help="only these suites, comma-separated: memory_pools, requests, numerics, memory_domains, custom_calls, packed_functions "
                           "(default: all)")
    fuzz.add_argument("--blind", action="store_true",
                      help="no coverage feedback: fresh random inputs and the same time for every test (what a driver "
                           "that reports no coverage gets; for comparing against the guided loop)")
    replay = commands.add_parser("replay", help="re-run only the failing examples stored in the database")
    replay.add_argument("--driver", required=True, help=_DRIVER_HELP)
    replay.add_argument("--db", default=".hypothesis/examples", metavar="PATH|redis://HOST:PORT/N", help=_DB_HELP)
    replay.add_argument("--out", default="replay", metavar="DIR", help="where replay.jsonl and reproducers/ go (default: replay)")
    init = commands.add_parser("init", help="write a driver package to start from (float32 ADD, certifiable as written)")
    init.add_argument("name", metavar="NAME", help="the driver's name: lower case, e.g. acme or acme-npu")
    init.add_argument("--dir", default=None, metavar="PATH", help="where to write it; must not exist (default: ./NAME)")
    return parser


def _init(options: argparse.Namespace) -> int:
    from harness.commands.init import write_skeleton

    written = write_skeleton(options.name, options.dir)
    folder = options.dir or options.name
    installable = folder if os.path.dirname(folder) else f"./{folder}"  # pip takes a bare name for a package index's
    print(f"harness init: wrote {len(written)} files into {folder}; next:")
    print(f"    pip install {installable} && harness certify --driver {options.name}")
    print(f"    then fill in the TODOs ({folder}/README.md says where)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = command_line()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["score"]:
        from harness.commands.score import main as score_main

        return score_main(argv[1:])
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    options = parser.parse_args(argv)
    try:
        if options.command == "list":
            return _list(options)
        if options.command == "init":
            return _init(options)
        if options.command == "certify":
            from harness.commands.certify import certify as run_certify

            return run_certify(options.driver, options.out, options.expectations, options.seed, extra)
        if options.command == "cts":
            from harness.commands.certify import certify as run_certify

            specs = [f"--cts-specs={path}" for path in options.specs]
            return run_certify(options.driver, options.out, None, None, [*specs, *extra], suites="harness.suites.golden",
                               requirements=["OPS-1", "OPS-2", "OPS-3"], command="cts")
        if options.command == "fuzz":
            from harness.commands.fuzz import fuzz as run_fuzz
            from harness.commands.fuzz import select_suites

            return run_fuzz(options.driver, options.minutes, options.workers, options.db, options.out,
                            select_suites(options.suites), blind=options.blind)
        if options.command == "replay":
            from harness.commands.fuzz import replay as run_replay

            return run_replay(options.driver, options.db, options.out)
        return _run(options, extra)
    except HarnessError as error:
        print(f"harness {options.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
