"""The generated suites draw what the reference computes: every operation of the reference's table
is drawn by a family of models (or a strategy of its own), and every family has a seeded bug that
its tests must catch."""

from __future__ import annotations

from harness.api.hal import OperationType
from harness.plugins.mutants import MUTANTS
from harness.strategies.models import FAMILIES
from reference_driver.ops import KERNELS

Op = OperationType
#: Drawn by a strategy of its own rather than a family (`harness.strategies.sampling`,
#: `harness.strategies.control_flow`).
OWN_STRATEGY = frozenset({Op.RANDOM_MULTINOMIAL, Op.IF, Op.WHILE})


def test_every_operation_the_reference_computes_is_drawn() -> None:
    drawn = {op for ops in FAMILIES.values() for op in ops} | OWN_STRATEGY
    computed = set(KERNELS)
    assert sorted(op.name for op in computed - drawn) == [], "computed by the reference, drawn by no strategy"
    assert sorted(op.name for op in drawn - computed) == [], "drawn, but not in the reference's table"


def test_every_family_has_a_seeded_bug() -> None:
    broken = {op for mutant in MUTANTS.values() for op in mutant.operations}
    unbroken = sorted(name for name, ops in FAMILIES.items() if not broken & set(ops))
    assert unbroken == [], "families no seeded bug breaks"
    assert broken >= OWN_STRATEGY
