"""Seeded-bug drivers (``mutant-<name>``), registered like any vendor driver.

They prove the suites catch what they claim to: `tests/meta/test_mutants.py` runs the
suites against each and requires a failure naming the mutant's requirement.
"""

from __future__ import annotations

from harness import DriverSpec, hookimpl

from . import (control_flow, custom_calls, detection, functions, layout, lookup, native, normalization, numerics, operations,  # noqa: F401
               packed_functions, pools, reach, recurrent, reduction, robustness, roles, state, vision)  # (each module registers its mutants on import)
from ._registry import MUTANTS


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    return [
        DriverSpec(f"mutant-{m.name}", m.factory, f"{m.description} (breaks {m.requirement})", breaks=m.requirement,
                   breaks_operations=tuple(op.name for op in m.operations))
        for m in MUTANTS.values()
    ]
