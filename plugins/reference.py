"""Registers the numpy reference driver as ``reference``."""

from __future__ import annotations

from harness import DriverSpec, hookimpl
from reference_driver import ReferenceDevice


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    return [DriverSpec("reference", ReferenceDevice, "numpy reference driver: the definition of correct behaviour")]
