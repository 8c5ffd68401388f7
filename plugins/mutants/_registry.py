"""The seeded-bug family: each driver is the reference with exactly one realistic bug."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.hal import Device
from reference_driver import ReferenceDevice


@dataclass(frozen=True)
class Mutant:
    name: str
    requirement: str
    description: str
    factory: Callable[[], Device]


MUTANTS: dict[str, Mutant] = {}


def mutant(name: str, requirement: str, description: str):
    """Register ``factory`` as driver ``mutant-<name>`` breaking ``requirement``."""

    def register(factory: Callable[[], Device]) -> Callable[[], Device]:
        if name in MUTANTS:
            raise ValueError(f"mutant {name!r} is defined twice")

        def named() -> Device:
            device = factory()
            device.name = f"mutant-{name}"
            return device

        MUTANTS[name] = Mutant(name, requirement, description, named)
        return factory

    return register


def with_rule(name: str, replacement: Callable) -> ReferenceDevice:
    """A reference device whose validation rule ``name`` is replaced."""
    device = ReferenceDevice()
    if not hasattr(device.rules, name):
        raise AttributeError(f"the reference has no rule {name!r}")
    setattr(device.rules, name, replacement)
    return device


def with_parts(**parts) -> ReferenceDevice:
    """A reference device with some of its parts (classes, hooks) replaced by buggy ones."""
    device = ReferenceDevice()
    for name, part in parts.items():
        if not hasattr(device, name):
            raise AttributeError(f"the reference device has no part {name!r}")
        setattr(device, name, part)
    return device


def flagged_mutant(flags: dict[str, str], name: str, requirement: str, description: str, flag: str) -> None:
    """A mutant whose bug is in native code the reference ships, built with ``-D<flag>``:
    the device is the reference, and ``flags`` (driver name -> flag) tells the plugin's hook
    which build to declare."""
    flags[f"mutant-{name}"] = flag
    mutant(name, requirement, description)(ReferenceDevice)
