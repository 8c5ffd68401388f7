"""The suites' own score: every seeded-bug driver is caught by a test naming its requirement,
and every correct variant passes the same configuration (profile, seed, deadline, no shrinking).
The reference's own run of that profile and seed is the certify acceptance test's."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.api.requirements import REQUIREMENTS
from harness.drivers.registry import load_registry
from harness.commands.score import (format_table, format_variants, modules_naming_requirements, run_suites, score_all,
                                    score_variants, specificity, summary, unmeasured_requirements)
from harness.report.attribution import failed_requirements
from reference_driver.ops import KERNELS
from reference_driver.ops.control_flow import RUNNERS


#: Examples per generative test in the variants' runs here: one, where ci draws twelve.
VARIANT_EXAMPLES = 1


def test_there_are_enough_mutants_covering_every_family() -> None:
    registry = load_registry()
    mutants = {name: spec for name, spec in registry.drivers.items() if spec.breaks}
    assert len(mutants) >= 30
    families = {spec.breaks.rsplit("-", 1)[0] for spec in mutants.values()}
    assert {"POOL", "REQ", "DOM-ALLOC", "DOM-STATE", "DOM-COPY", "DOM-ROLE", "DOM-DYN", "DOM-CONC", "CC", "FFI"} <= families
    assert all(name.startswith("mutant-") and spec.description for name, spec in mutants.items())
    assert unmeasured_requirements() == [], "requirements a driver can break with no seeded bug breaking them"


@pytest.mark.long_running
@pytest.mark.timeout(1500)
def test_every_mutant_is_caught() -> None:
    scores = score_all(jobs=2)
    report = f"{format_table(scores)}\n{summary(scores)}"
    missed = [s.driver for s in scores if not s.caught]
    assert not missed, f"seeded bugs no test caught (holes in the suites):\n{report}"
    # What a vendor gets from a catch: a script that fails on the bug, run by itself.  Never one that
    # reads as a fix, hangs, is missing, or says it does not replay (exit 3): a failure that needed
    # an earlier test's calls (mappings-cached-by-descriptor's stale mapping) is run again after it.
    unreproduced = [s.driver for s in scores if s.reproducer != "fails"]
    assert not unreproduced, f"catches whose reproducer does not fail on the seeded bug:\n{report}"
    print(report)


def test_a_mutant_run_collects_only_the_files_naming_its_requirement() -> None:
    naming = modules_naming_requirements()
    assert set(naming) == set(REQUIREMENTS), "every requirement is named by a test of some file"
    assert all(path.endswith(".py") and "/suites/" in path for files in naming.values() for path in files)
    records = run_suites("mutant-cc-symbol-hidden", stop_on="CC-1", modules=naming["CC-1"])
    assert records and {r["id"].split("::")[0] for r in records} <= {f"suites/custom_calls/{Path(p).name}" for p in naming["CC-1"]}
    assert any(r["outcome"] == "failed" and "CC-1" in failed_requirements(r) for r in records)


def test_a_mutant_run_takes_the_tests_of_the_operations_it_breaks_first() -> None:
    records = run_suites("mutant-strided-slice-end-mask-ignored", stop_on="OPS-1",
                         extra=("--harness-first-operations=STRIDED_SLICE",))
    ran = [r["id"] for r in records if r["outcome"] in ("passed", "failed")]
    failed = [r for r in records if r["outcome"] == "failed"]
    assert len(failed) == 1 and "STRIDED_SLICE" in failed[0]["id"] and "OPS-1" in failed_requirements(failed[0])
    assert all("STRIDED_SLICE" in name for name in ran), ran


def test_every_operation_a_mutant_breaks_is_one_it_changes() -> None:
    registry = load_registry()
    breaking = {name: spec for name, spec in registry.drivers.items() if spec.breaks_operations}
    assert len(breaking) >= 50
    for name, spec in breaking.items():
        device = spec.create()
        # IF and WHILE run through the executor's runners, not kernels: a control-flow bug changes one
        changed = {op.name for op, kernel in device.kernels.items() if kernel is not KERNELS[op]} | \
            {op.name for op, runner in device.runners.items() if runner is not RUNNERS[op]}
        assert set(spec.breaks_operations) == changed, name


def test_there_are_enough_correct_variants_covering_every_choice() -> None:
    registry = load_registry()
    variants = {name: spec for name, spec in registry.drivers.items() if spec.exercises}
    assert len(variants) >= 12
    assert {spec.exercises for spec in variants.values()} >= {f"CHOICE-{n}" for n in range(1, 9)}
    for name, spec in variants.items():
        assert name.startswith("variant-") and spec.exercises in spec.description, f"{name} does not cite {spec.exercises}"


@pytest.mark.long_running
@pytest.mark.timeout(1500)
def test_every_correct_variant_passes() -> None:
    """Specificity: a driver that differs from the reference only as SPEC §8 allows gets no failure,
    in a run of every suite.  Each generative test draws one example here
    (the fixed tests and the golden corpus run whole): the variants' whole runs at 12 were a quarter
    of the test command's CPU time, and every operation family drawn made each run longer.  The
    measure is `harness score --profiles dev,ci,certify --seeds ...`."""
    scores = score_variants(jobs=2, examples=VARIANT_EXAMPLES)
    false_alarms = [s for s in scores if s.caught]
    assert not false_alarms, f"false alarms on correct drivers:\n{format_variants(scores)}\n{specificity(scores)}"
    print(format_variants(scores))


def test_a_test_concerns_an_operation_through_its_family_or_its_marker() -> None:
    """What --harness-first-operations takes first: a test parametrized by the operation, by a
    family of models that draws it, or marked with it; not the other tests."""
    from types import SimpleNamespace

    from harness.api.hal import OperationType
    from harness.integration.plugin import _concerns

    def item(params: dict, marked: tuple = ()) -> SimpleNamespace:
        markers = [SimpleNamespace(args=marked)] if marked else []
        return SimpleNamespace(callspec=SimpleNamespace(params=params), iter_markers=lambda name: iter(markers))

    cast = frozenset({"CAST"})
    assert _concerns(item({"op": OperationType.CAST}), cast)
    assert _concerns(item({"family": "conversion"}), cast)
    assert _concerns(item({"dilated": False}, (OperationType.CAST,)), cast)
    assert not _concerns(item({"family": "elementwise"}), cast)
    assert not _concerns(item({"op": OperationType.ADD}), cast)
    assert not _concerns(item({"family": "conversion"}), frozenset())
