"""A seed means the same examples in every process that runs the same tests.

Hypothesis draws a share of its integers, floats, strings and bytes (5 %, floats 15 %) from
constants it finds in the source of the "local" modules imported at the time: every module
outside site-packages and the standard library.  In an editable install that is the harness, its
suites and the reference; in any install, the vendor's plugin.  Which of them are imported differs
between a run and the script that reruns one of its tests (which collects one file, not every
suite), and within a run (a module first imported when a test fails): with the same seed, the
examples then differ.  Measured (seed 2, memory_pools and requests, 840 scenarios): collected
alone or among every suite, the scenarios part at the 257th; with the constants pinned, none do.
A rerun reproducer could then pass on the very bug it was written for.

Hypothesis has no setting for this.  `pin_local_constants` replaces the one function its provider
asks for them with one that finds none; the constants hypothesis tries everywhere (0, -1, the
ends of the ranges, NaN, ...) stay.  ``tests/unit/test_generation.py`` checks that the pin still
holds on the installed hypothesis.
"""

from __future__ import annotations


def pin_local_constants() -> None:
    """From now on, no constants from local modules' source reach generation."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # a hypothesis that draws no local constants: nothing to pin
        return
    if not hasattr(providers, "_get_local_constants"):
        return
    none = Constants()
    providers._get_local_constants = lambda: none
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if cache is not None:  # what was drawn with local constants before, per kind of draw
        cache.cache.clear()
