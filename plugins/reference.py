"""Registers the numpy reference driver as ``reference``."""

from __future__ import annotations

from harness import DriverSpec, hookimpl
from reference_driver import ReferenceDevice


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    return [DriverSpec("reference", ReferenceDevice, "numpy reference driver: the definition of correct behaviour")]


@hookimpl
def harness_custom_call_targets(driver_name: str) -> list:
    if driver_name != "reference":
        return []
    from reference_driver.custom_calls import reference_targets

    return reference_targets()


@hookimpl
def harness_packed_functions(driver_name: str) -> list:
    if driver_name != "reference":
        return []
    from reference_driver.packed_functions import packed_library

    return [packed_library("reference")]
