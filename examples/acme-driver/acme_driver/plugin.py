"""What the harness loads through the ``harness.plugins`` entry point: the driver's name and factory."""

from __future__ import annotations

from harness import DriverSpec, hookimpl

from acme_driver.device import AcmeDevice


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    return [DriverSpec("acme", AcmeDevice, "Acme example driver: float32 ADD, MUL and RELU in numpy; no memory domains")]
