"""Seeded-bug drivers (``mutant-<name>``), registered like any vendor driver.

They prove the suites catch what they claim to: `tests/meta/test_mutants.py` runs the
suites against each and requires a failure naming the mutant's requirement.
"""

from __future__ import annotations

from harness import DriverSpec, hookimpl

from . import custom_calls, functions, native, numerics, operations, packed_functions, pools, reach, robustness, roles, state, vision  # noqa: F401  (each module registers its mutants on import)
from . import normalization, reduction  # noqa: F401  (issue 87: the normalizations and reductions)
from ._registry import MUTANTS


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    return [
        DriverSpec(f"mutant-{m.name}", m.factory, f"{m.description} (breaks {m.requirement})", breaks=m.requirement)
        for m in MUTANTS.values()
    ]
