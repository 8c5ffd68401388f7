"""The suites' own score, both error rates of the harness:

- sensitivity: every seeded-bug driver (``mutant-*``) is caught by a test naming the
  requirement it breaks;
- specificity: every correct variant driver (``variant-*``, SPEC §8) passes every test, with
  none not run.

    harness score [--jobs N] [--only NAME ...] [--seed N] [--mutant-profile P] [--profiles P,..] [--seeds N,..]
                  [--examples N] [--json FILE]
    python -m harness.commands.score

Each driver runs the suites in the ``ci`` profile with a fixed seed, through the service,
without shrinking (``--mutant-profile certify``: the seeded bugs in the profile ``harness certify``
runs, the sensitivity a vendor's certificate has).  A mutant's run collects only the test files naming the requirement it breaks
(only a test naming it can catch it) and stops at the first such test that fails on it; a
variant's runs to the end, once per profile and seed asked for (``--profiles``, ``--seeds``):
a correct driver must pass them all (every suite that calls the driver: suites/service checks the
harness with canary drivers, whatever the driver).  ``--examples N`` runs each generative test of
a variant's runs with N examples in place of the profile's: a quicker, weaker pass (the project's
test command takes one at a third of the ``ci`` profile's); the measure of specificity is every
profile, several seeds.
The command fails unless both rates are 100%.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from harness.api.requirements import HARNESS_GUARANTEES, REQUIREMENTS, VALUE_RULE
from harness.commands.cli import SEED as SEED_NUMBER
from harness.commands.cli import OneLineParser
from harness.integration.inputs import Number, file_problem
from harness.integration.own_config import own_pytest_options
from harness.integration.recording import RERUN_SECONDS
from harness.integration.warm_sessions import run_pytest, run_script
from harness.drivers.catalog import DriverEntry, load_catalog
from harness.report import certificate
from harness.report.attribution import failed_requirements

SEED = 0
#: The profiles a whole run of every suite can take here (nightly's 1,000 examples per test are harness fuzz's).
VARIANT_PROFILES = ("dev", "ci", "certify")
DRIVER_TIMEOUT_S = 2.0
RUN_TIMEOUT_S = 600
#: How long a caught bug's reproducer may run.  A script's driver service ends a hung call at its
#: deadline, but a rerun script runs a whole test, whose every hang waits one out: it is stopped here.
#: The run kept a rerun script (after the tests before its own, perhaps) only when it failed within
#: RERUN_SECONDS, so a script is given that long, and some more for a loaded machine.
SCRIPT_TIMEOUT_S = RERUN_SECONDS + 60


@dataclass
class Score:
    driver: str
    requirement: str
    caught: bool
    first_test: str = ""
    seconds_to_catch: float | None = None
    examples: int | None = None
    failures_elsewhere: int = 0
    message: str = ""
    profile: str = "ci"
    seed: int = SEED
    # A variant's run with this many examples per generative test, not the profile's (0: the profile's).
    examples_per_test: int = 0
    # What the catching failure's reproducer did against the seeded bug (`reproducer_outcome`);
    # "no script" when none was written, "" for a variant's run.
    reproducer: str = ""
    # The requirements the seeded bug's run failed besides its own (`failed_requirements` of each
    # failure): a certificate of that run would blame these too.  Empty for a variant's run.
    unrelated: tuple[str, ...] = ()

    @property
    def attributed(self) -> bool:
        """The run fails the requirement the seeded bug breaks, and no other."""
        return self.caught and not self.unrelated


def _quiet_pytest(arguments: list[str], cwd: str) -> None:
    """A pytest session with the harness's own configuration, started in ``cwd`` (forked warm:
    ``warm_sessions``); what it finds is read from the files it writes, never from its output."""
    run_pytest([*own_pytest_options(), *arguments], cwd, timeout=RUN_TIMEOUT_S)


def run_suites(driver: str, stop_on: str = "", extra: tuple[str, ...] = (), seed: int = SEED,
               profile: str = "ci", modules: tuple[str, ...] = (), reproducers: str = "") -> list[dict]:
    """Run every suite (or only the test files ``modules``) against ``driver``; the per-test records
    of that run (``reproducers``: a directory for the failures' reproducers)."""
    with tempfile.TemporaryDirectory() as tmp:
        record = os.path.join(tmp, "record.jsonl")
        where = list(modules) if modules else ["--pyargs", "harness.suites"]
        command = [*where, f"--driver={driver}", f"--harness-profile={profile}", f"--harness-seed={seed}",
                   f"--driver-timeout={DRIVER_TIMEOUT_S}", "--harness-no-shrink", f"--harness-record={record}", "-q", "--tb=no",
                   "-p", "no:randomly", *extra]
        if stop_on:
            command.append(f"--harness-stop-on={stop_on}")
        if reproducers:
            command.append(f"--harness-reproducers={reproducers}")
        _quiet_pytest(command, tmp)
        if not os.path.exists(record):
            return []
        with open(record, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        return [r for r in records if "id" in r]  # test records, without the session header


def modules_naming_requirements() -> dict[str, tuple[str, ...]]:
    """The test files holding a test that names each requirement, from one collection of every
    suite (the reference's: a test's requirement markers do not depend on the driver)."""
    return _suite_maps()[0]


def _suite_maps() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """From one collection of every suite: the test files naming each requirement, and those
    holding a test that draws each operation (`plugin.concerned_operations`); empty if it failed."""
    with tempfile.TemporaryDirectory() as tmp:
        naming, drawing = os.path.join(tmp, "requirements.json"), os.path.join(tmp, "operations.json")
        _quiet_pytest(["--collect-only", "-q", "--pyargs", "harness.suites", "--driver=reference",
                       "-p", "harness.integration.requirement_map", f"--harness-requirement-map={naming}",
                       f"--harness-operation-map={drawing}"], tmp)
        maps = []
        for path in (naming, drawing):
            if not os.path.exists(path):
                return {}, {}
            with open(path, encoding="utf-8") as f:
                maps.append({key: tuple(files) for key, files in json.load(f).items()})
        return maps[0], maps[1]


def score_mutant(driver: str, requirement: str, seed: int = SEED, modules: tuple[str, ...] = (),
                 profile: str = "ci", operations: tuple[str, ...] = (), drawing: tuple[str, ...] = ()) -> Score:
    """A seeded bug's run: the tests of ``operations`` (whose results the bug gets wrong) first,
    then those naming ``requirement`` (``modules``: only their files, as only they can catch it),
    stopping at the first that fails on it.  Every test still runs until one does.  A bug of the
    value rule, which any test can catch, is first run on ``drawing`` alone (the files holding the
    tests of its operations), and on every suite only if none of those caught it: collecting every
    suite was about a second of each such run, most of which end in the first file."""
    first = (f"--harness-first-operations={','.join(operations)}",) if operations else ()
    if drawing and not modules:
        score = _scored_run(driver, requirement, seed, drawing, profile, first)
        if score.caught:
            return score
    return _scored_run(driver, requirement, seed, modules, profile, first)


def _scored_run(driver: str, requirement: str, seed: int, modules: tuple[str, ...], profile: str,
                first: tuple[str, ...]) -> Score:
    score = Score(driver, requirement, caught=False, seed=seed, profile=profile)
    with tempfile.TemporaryDirectory() as scripts:
        records = run_suites(driver, stop_on=requirement, extra=first, seed=seed, profile=profile, modules=modules,
                             reproducers=scripts)
        failed = {failed for record in records for failed in failed_requirements(record)}
        score.unrelated = tuple(sorted(failed - {requirement}))
        for record in records:
            if record["outcome"] != "failed":
                continue
            if requirement in failed_requirements(record):  # a verdict on the driver (attribution.fault_of)
                score.caught = True
                score.first_test = record["id"]
                score.seconds_to_catch = record["elapsed"]
                score.examples = record["examples"]
                score.message = record["message"][:300]
                score.reproducer = reproducer_outcome(record["reproducer"], scripts) if record.get("reproducer") else "no script"
                break
            score.failures_elsewhere += 1
    return score


def reproducer_outcome(script: str, cwd: str) -> str:
    """What a reproducer did, run against the seeded bug it was written for: "fails" (exit 1, or
    killed by a signal: the bug shows), "passes" (it would read as a fix), "does not replay" (3:
    it needed calls no history held), "did not run" (5: skipped), "hung", or "exit N"."""
    # Forked warm, as the runs are: a cold interpreter's imports were half of each seeded bug's score.
    try:
        code = run_script(script, cwd, timeout=SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "hung"
    if code == 1 or code < 0:
        return "fails"
    return {0: "passes", 3: "does not replay", 5: "did not run"}.get(code, f"exit {code}")


def _driver_independent_suites() -> tuple[str, ...]:
    """The suite directories whose tests never call the driver under test: suites/service checks
    the harness itself with canary drivers and the reference (SVC-1..3), whatever ``--driver`` says."""
    spec = importlib.util.find_spec("harness.suites.service")
    return tuple(spec.submodule_search_locations or ()) if spec else ()


def score_variant(driver: str, choice: str, seed: int = SEED, profile: str = "ci", examples: int = 0) -> Score:
    """A correct variant passes: no test fails, and none is not run (its certificate would say
    INCOMPLETE, not PASS); each is a false alarm of the harness.  Only a skip its declared
    capabilities explain (not-applicable) is no alarm.  A suite that never calls the driver is
    left out: no difference of the variant's can show there (about 3 s a run, most of it a hang's
    deadline waited out)."""
    extra = tuple(f"--ignore={path}" for path in _driver_independent_suites())
    records = run_suites(driver, seed=seed, profile=profile,
                         extra=extra + ((f"--harness-examples={examples}",) if examples else ()))
    failed = [r for r in records if r["outcome"] == "failed"]
    not_run = [r for r in records if r["outcome"] == "skipped" and (r.get("skip") or {}).get("kind") == "not-run"]
    score = Score(driver, choice, caught=bool(failed or not_run) or not records, profile=profile, seed=seed,
                  examples_per_test=examples)
    alarms = failed + not_run
    unchecked = [] if alarms else _unchecked_requirements(records)
    if alarms:
        first = alarms[0]
        score.first_test, score.seconds_to_catch, score.examples = first["id"], first["elapsed"], first["examples"]
        score.message = (first["message"] if first in failed else f"not run: {first['skip'].get('reason', '')}")[:300]
        score.failures_elsewhere = len(alarms) - 1
    elif unchecked:
        score.caught = True
        score.first_test, reason = unchecked[0]
        score.message = f"not run: {reason}"[:300]
        score.failures_elsewhere = len(unchecked) - 1
    elif not records:
        score.message = "the run recorded no test"
    return score


def _unchecked_requirements(records: list[dict]) -> list[tuple[str, str]]:
    """(A test of it, why) for each requirement that the variant's declarations left with no test
    to run, though none of them excuses it: not-run in its certificate (`certificate.requirement_status`),
    which says INCOMPLETE although no test failed or was skipped for any other reason."""
    tests = [r for r in records if "id" in r]
    unchecked = []
    for requirement in REQUIREMENTS:
        covering = certificate.covering_tests(tests, requirement)
        entry = certificate.requirement_status(covering, requirement) if covering else None
        if entry is not None and entry["status"] == "not-run":
            unchecked.append((covering[0]["test"], entry["reasons"][0]))
    return unchecked


def _short(name: str) -> str:
    """A seeded bug's or variant's name without its ``mutant-``/``variant-`` prefix: as the
    score's tables print it, and as ``--only`` takes it besides the whole name."""
    return name.split("-", 1)[1]


def _unknown_names(names: list[str]) -> tuple[list[str], list[str]]:
    """The ``--only`` names that are no seeded bug or variant, and the names there are."""
    catalog = load_catalog()
    scored = [n for n in catalog.names() if catalog.drivers[n].breaks or catalog.drivers[n].exercises]
    known = {*scored, *map(_short, scored)}
    return [n for n in names if n not in known], [_short(n) for n in scored]


def _selected(names: list[str] | None, kind: str) -> list[DriverEntry]:
    catalog = load_catalog()
    chosen = [catalog.drivers[n] for n in catalog.names() if getattr(catalog.drivers[n], kind)]
    if names:
        chosen = [s for s in chosen if s.name in names or _short(s.name) in names]
    return chosen


def score_all(names: list[str] | None = None, jobs: int = 2, seed: int = SEED, profile: str = "ci") -> list[Score]:
    """Sensitivity: every seeded-bug driver, each until its requirement's first failure."""
    mutants = _selected(names, "breaks")
    naming, drawing = _suite_maps()  # empty if the collection failed: then each run takes every suite
    # Every test that judges an output can fail the value rule, whichever requirement it names: a
    # bug of the value rule runs every suite (those naming it first, as --harness-stop-on orders them).
    naming.pop(VALUE_RULE, None)

    def files_drawing(operations: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted({path for operation in operations for path in drawing.get(operation, ())}))

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda spec: score_mutant(spec.name, spec.breaks, seed, naming.get(spec.breaks, ()), profile,
                                                       spec.breaks_operations, files_drawing(spec.breaks_operations)),
                             mutants))


def score_variants(names: list[str] | None = None, jobs: int = 2, seed: int = SEED,
                   profiles: tuple[str, ...] = ("ci",), seeds: tuple[int, ...] = (), examples: int = 0) -> list[Score]:
    """Specificity: every correct variant driver through every suite, once per profile and seed
    (``seeds``, or ``seed`` alone), each generative test with ``examples`` examples (0: the
    profile's); ``caught`` means a false alarm."""
    runs = [(spec, profile, each) for spec in _selected(names, "exercises") for profile in profiles
            for each in (seeds or (seed,))]
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda run: score_variant(run[0].name, run[0].exercises, run[2], run[1], examples), runs))




def unmeasured_requirements() -> list[str]:
    """The requirements a driver can break that no seeded-bug driver breaks: whether the suites
    would catch such a bug is not measured."""
    broken = {entry.breaks for entry in load_catalog().drivers.values() if entry.breaks}
    return [r for r in REQUIREMENTS if r not in broken and r not in HARNESS_GUARANTEES]


def format_table(scores: list[Score]) -> str:
    rows = [("mutant", "requirement", "caught", "also failed", "first test that caught it", "time to catch", "examples",
             "reproducer")]
    for s in scores:
        rows.append((s.driver.removeprefix("mutant-"), s.requirement, "yes" if s.caught else "NO",
                     ", ".join(s.unrelated) or "-", s.first_test.removeprefix("suites/") or "-",
                     f"{s.seconds_to_catch:.1f} s" if s.seconds_to_catch is not None else "-",
                     str(s.examples) if s.examples is not None else "-", s.reproducer or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary(scores: list[Score]) -> str:
    caught = [s for s in scores if s.caught]
    times = [s.seconds_to_catch for s in caught if s.seconds_to_catch is not None]
    median = f"{statistics.median(times):.1f} s" if times else "-"
    failing = sum(s.reproducer == "fails" for s in caught)
    others = ", ".join(f"{n} {outcome}" for outcome, n in sorted(Counter(s.reproducer for s in caught if s.reproducer != "fails").items()))
    return (f"sensitivity: caught {len(caught)}/{len(scores)} seeded bugs; median time to catch {median}; "
            f"reproducers: {failing}/{len(caught)} fail on their bug{f' ({others})' if others else ''}; "
            f"{attribution(scores)}")


def attribution(scores: list[Score]) -> str:
    """The share of seeded bugs whose run fails the requirement each breaks and no unrelated one:
    how often a certificate names the bug a driver has, and only it."""
    attributed = sum(s.attributed for s in scores)
    share = f" ({100 * attributed / len(scores):.0f}%)" if scores else ""
    return f"attribution: {attributed}/{len(scores)} fail their own requirement and no other{share}"


def _by_driver(scores: list[Score]) -> dict[str, list[Score]]:
    grouped: dict[str, list[Score]] = {}
    for s in scores:
        grouped.setdefault(s.driver, []).append(s)
    return grouped


def format_variants(scores: list[Score]) -> str:
    """A row per variant: the runs it passed (profile x seed), and its first false alarm."""
    rows = [("variant", "choice", "passes", "runs passed", "first false alarm")]
    for driver, runs in _by_driver(scores).items():
        alarms = [s for s in runs if s.caught]
        first = (f"{alarms[0].profile}, seed {alarms[0].seed}: {alarms[0].first_test.removeprefix('suites/')}: "
                 f"{alarms[0].message}") if alarms else "-"
        rows.append((driver.removeprefix("variant-"), runs[0].requirement, "no" if alarms else "yes",
                     f"{len(runs) - len(alarms)}/{len(runs)}", first))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def specificity(scores: list[Score]) -> str:
    grouped = _by_driver(scores)
    passing = [driver for driver, runs in grouped.items() if not any(s.caught for s in runs)]
    kinds = sorted({(s.profile, s.seed) for s in scores})
    over = (f" in every run ({len({p for p, _ in kinds})} profiles x {len({n for _, n in kinds})} seeds)"
            if len(kinds) > 1 else "")
    return f"specificity: {len(passing)}/{len(grouped)} correct variants pass{over}"


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="harness score", description="Score the suites against every seeded-bug driver.")
    parser.add_argument("--jobs", type=Number(int, 0, high=1024, unit="runs at once").for_argparse(),
                        default=os.cpu_count() or 2, help="mutants run at once")
    parser.add_argument("--only", nargs="*", default=None, metavar="NAME", help="score only these mutants and variants")
    parser.add_argument("--seed", type=SEED_NUMBER.for_argparse(), default=SEED, help=f"the seed of every run (default {SEED})")
    parser.add_argument("--mutant-profile", default="ci", choices=VARIANT_PROFILES, metavar="P",
                        help="the profile of every seeded bug's run (default ci; certify is harness certify's)")
    parser.add_argument("--profiles", default="ci", metavar="P,..",
                        help="run each correct variant in each of these profiles (default ci; dev, ci, certify)")
    parser.add_argument("--seeds", default="", metavar="N,..", help="run each correct variant with each of these seeds")
    parser.add_argument("--examples", type=Number(int, 0, above=False, note="0: the profile's").for_argparse(), default=0, metavar="N",
                        help="run each correct variant's generative tests with N examples, not the profile's")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the scores as JSON")
    options = parser.parse_args(argv)
    if options.json and file_problem(options.json):  # checked now, not after the whole score
        parser.error(f"--json={options.json}: {file_problem(options.json)}")
    profiles = tuple(p for p in options.profiles.split(",") if p)
    unknown = [p for p in profiles if p not in VARIANT_PROFILES]
    if unknown or not profiles:
        parser.error(f"--profiles: {', '.join(unknown) or 'none given'}; allowed: {', '.join(VARIANT_PROFILES)} "
                     f"(nightly is harness fuzz's: fuzz a variant with it)")
    try:
        seeds = tuple(int(SEED_NUMBER.read(n)) for n in options.seeds.split(",") if n.strip())
    except ValueError:
        parser.error(f"--seeds: {options.seeds!r} is not a comma-separated list of whole numbers")
    unknown_names, there = _unknown_names(options.only or [])
    if unknown_names:  # scoring nothing would exit 0: a misspelt name must not read as a pass
        parser.error(f"--only: {unknown_names[0]!r} is no seeded bug or correct variant; they are: {', '.join(there)}")
    started = time.monotonic()
    scores = score_all(options.only, options.jobs, options.seed, options.mutant_profile)
    variants = score_variants(options.only, options.jobs, options.seed, profiles, seeds, options.examples)
    if scores:
        print(format_table(scores))
        print()
    if variants:
        print(format_variants(variants))
        print()
    parts = ([summary(scores)] if scores else []) + ([specificity(variants)] if variants else [])
    seeded = (f"seed {options.seed}" + (f", seeded bugs in {options.mutant_profile}" if options.mutant_profile != "ci" else "")
              + (f"; variants: seeds {', '.join(map(str, seeds))}" if seeds else "")
              + (f"; variants: {options.examples} examples per generative test" if options.examples else ""))
    print(f"{'; '.join(parts) or 'nothing matched --only'} ({seeded}; scored in {time.monotonic() - started:.0f} s "
          f"with {options.jobs} jobs)")
    unmeasured = unmeasured_requirements()
    print(f"requirements no seeded bug breaks: {', '.join(unmeasured) or 'none'} "
          f"({', '.join(HARNESS_GUARANTEES)} are the harness's own, checked with canary drivers)")
    if options.json:
        from harness.report.files import write_atomically

        document = {"sensitivity": [{**asdict(s), "attributed": s.attributed} for s in scores], "specificity": [asdict(s) for s in variants],
                    "unmeasured_requirements": unmeasured}
        try:
            write_atomically(options.json, json.dumps(document, indent=2))
        except OSError as error:
            print(f"harness score: --json={options.json}: cannot write it: {error.strerror}", file=sys.stderr)
            return 2
    return 0 if all(s.caught for s in scores) and not any(v.caught for v in variants) else 1


if __name__ == "__main__":
    sys.exit(main())
