"""Hook specifications for driver plugins (project name ``harness``).

A driver plugin is a module (or object) with functions marked ``@hookimpl`` whose
names are among the specs below.  Plugins are found through the entry-point group
``harness.plugins``, the modules of this repository's ``plugins`` package, and
``--driver=module:factory`` / ``--driver=path/file.py:factory``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # the declaration types, named for the signatures only (no import cycle at run time)
    from harness.api.custom_calls import CustomCallTarget
    from harness.api.expectations import Expectation
    from harness.api.packed import PackedFunctionLibrary
    from harness.api.drivers import DriverSpec

hookspec = pluggy.HookspecMarker("harness")
hookimpl = pluggy.HookimplMarker("harness")


@hookspec
def harness_register_drivers() -> list[DriverSpec]:
    """Return the drivers this plugin provides, as a list of `harness.DriverSpec`.

    Each spec names the driver, gives a zero-argument factory that returns an object
    implementing the Driver API (`harness.api.hal.Device`), a one-line description, and
    optionally the capabilities it declares (otherwise asked of the device).
    """
    raise NotImplementedError  # a specification: plugins implement it


@hookspec
def harness_expectations(driver_name: str) -> list[Expectation]:
    """Return known skips/xfails for ``driver_name`` (same meaning as an expectations file)."""
    raise NotImplementedError


@hookspec
def harness_custom_call_targets(driver_name: str) -> list[CustomCallTarget]:
    """Return the custom-call targets ``driver_name`` provides (SPEC section 5), as a list of
    `harness.api.custom_calls.CustomCallTarget`: name, platform, calling convention, library
    and symbol, a numpy reference function and the cases it accepts."""
    raise NotImplementedError


@hookspec
def harness_packed_functions(driver_name: str) -> list[PackedFunctionLibrary]:
    """Return the tvm-ffi libraries ``driver_name`` exports packed functions from (SPEC section 6),
    each registering the probe functions of `harness.api.packed` under its prefix."""
    raise NotImplementedError
