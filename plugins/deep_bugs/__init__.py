"""Deep seeded bugs (``deep-<name>``, and ``deep-bugs`` with every Python-level one at once).

Unlike the mutants (`harness.plugins.mutants`, which the ``ci`` profile must catch and ``harness
score`` measures), these are bugs a short run misses: rare structure, state over several calls,
limits, dtypes, native code.  ``benchmarks/bench_fuzz.py --bugs`` measures how long fuzzing takes
to find each, blind and coverage-guided.  They declare no ``breaks``, so the score never runs
them; `_registry` says how to add one.
"""

from __future__ import annotations

import functools

from harness import DriverSpec, hookimpl

from . import dtypes, kernels, native, reach, requests, state  # noqa: F401  (each module registers its bugs on import)
from ._device import DeepDevice
from ._registry import DEEP_BUGS, DeepBug, composable

#: The driver with every Python-level deep bug at once: one target for a fuzzing budget.
COMPOSED = "deep-bugs"


def _single(bug: DeepBug) -> DeepDevice:
    assert bug.fault is not None
    return DeepDevice(bug.driver, (bug.fault,))


def _composed() -> DeepDevice:
    return DeepDevice(COMPOSED, tuple(bug.fault for bug in composable() if bug.fault is not None))


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    specs = [DriverSpec(bug.driver, bug.factory or functools.partial(_single, bug),
                        f"deep seeded bug: {bug.description} (breaks {bug.requirement}; {bug.reach})", deep_bug=True)
             for bug in DEEP_BUGS.values()]
    specs.append(DriverSpec(COMPOSED, _composed,
                            f"every Python-level deep seeded bug at once ({len(composable())} of them), for fuzzing",
                            deep_bug=True))
    return specs
