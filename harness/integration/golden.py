"""The golden suite's collection: a corpus of NNAPI spec files, one test per example, kind and memory.

``--cts-specs PATH`` (repeatable) names spec files or directories, such as an AOSP checkout's
``packages/modules/NeuralNetworks/runtime/test/specs``; without it the harness's own small corpus
(``harness/cts/specs``) runs.  Only examples whose operations and operand types the driver
declares become tests (CHOICE-5); the rest are counted, with what they need, in the run's record,
so the certificate's coverage table accounts for every example of the corpus.  A file or example
the harness could not read becomes a test that did not run, with the reason and its line: what it
checks is unknown, so the certificate is INCOMPLETE, never PASS over it.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import pytest

from harness.api.hal import Capabilities, OperandType
from harness.api.memory import REQUIRED_KINDS
from harness.cts.check import REQUIREMENT, GoldenTest
from harness.cts.corpus import Corpus, GoldenCase, Unexpressed, load_corpus
from harness.cts.kinds import GoldenKind

__all__ = ["BUNDLED_SPECS", "corpus_summary", "parametrize_golden"]

BUNDLED_SPECS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cts", "specs")

@dataclass
class _Loaded:
    corpus: Corpus
    declared: list[GoldenCase] = field(default_factory=list)
    missing: Counter = field(default_factory=Counter)
    unreadable: list[Unexpressed] = field(default_factory=list)  # what no driver's declarations explain


_KEY = pytest.StashKey[_Loaded]()


def _missing(case: GoldenCase, caps: Capabilities) -> list[str]:
    wanted = [op.name for op in sorted(case.operations) if op not in caps.operations]
    # SUBGRAPH operands only name IF/WHILE bodies: the operation decides, not the operand type.  A type
    # some of the example's operations declare as their own (`Capabilities.operation_types`) is
    # asked of the driver, whose get_supported_operations says which operations take it.
    declared = caps.operand_types.union(*(caps.types_of(op) for op in case.operations))
    wanted += [t.name for t in sorted(case.operand_types) if t not in declared and t != OperandType.SUBGRAPH]
    return wanted


def _load(config: pytest.Config, caps: Capabilities) -> _Loaded:
    loaded = config.stash.get(_KEY, None)
    if loaded is None:
        paths = config.getoption("cts_specs") or [BUNDLED_SPECS]
        try:
            corpus = load_corpus(paths)
        except FileNotFoundError as error:
            raise pytest.UsageError(f"--cts-specs: {error}") from None
        loaded = _Loaded(corpus)
        for case in corpus.cases:
            missing = _missing(case, caps)
            if missing:
                loaded.missing[" + ".join(missing)] += 1
            else:
                loaded.declared.append(case)
        for entry in corpus.unexpressed:
            if entry.outside:  # no driver can declare what the harness has no name for
                loaded.missing[" + ".join(entry.outside) + " (not in the harness's data model)"] += 1
            else:
                loaded.unreadable.append(entry)
        config.stash[_KEY] = loaded
    return loaded


def corpus_summary(config: pytest.Config) -> dict | None:
    """What the corpus held and what of it ran, for the run's record (None: no golden suite collected)."""
    loaded = config.stash.get(_KEY, None)
    if loaded is None:
        return None
    corpus = loaded.corpus
    return {
        "paths": config.getoption("cts_specs") or ["(the harness's own corpus)"],
        "files": corpus.files,
        "examples": len(corpus.cases) + len(corpus.unexpressed),
        "declared": len(loaded.declared),
        "not_declared": sum(loaded.missing.values()),
        "not_declared_by_need": dict(loaded.missing.most_common()),
        "unexpressed": [{"name": u.name, "reason": u.reason} for u in loaded.unreadable],
    }


def parametrize_golden(metafunc: pytest.Metafunc, caps: Capabilities) -> None:
    loaded = _load(metafunc.config, caps)
    params = []
    memory_kinds = [k for k in REQUIRED_KINDS if k in caps.memory_kinds]
    for case in loaded.declared:
        tests = [GoldenTest(case, GoldenKind.GENERAL, kind) for kind in memory_kinds]
        if not case.case.expect_failure:
            if case.case.dynamic_output_shape:
                tests.append(GoldenTest(case, GoldenKind.DYNAMIC_OUTPUT_SHAPE))
            tests.append(GoldenTest(case, GoldenKind.MEMORY_DOMAIN))
        for test in tests:
            marks = [pytest.mark.requirement(REQUIREMENT[test.kind]), pytest.mark.operations(*case.operations),
                     pytest.mark.golden(spec=case.case.spec, case=case.id, kind=test.kind.value,
                                        coverage=[list(pair) for pair in case.coverage_key])]
            params.append(pytest.param(test, marks=marks, id=test.id))
    for entry in loaded.unreadable:
        params.append(pytest.param(entry, marks=[pytest.mark.requirement(*REQUIREMENT.values())],
                                   id=f"unreadable-{entry.name}"))
    if not params:
        params.append(pytest.param(None, marks=[pytest.mark.requirement(*REQUIREMENT.values())], id="none-declared"))
    metafunc.parametrize("golden_test", params)
