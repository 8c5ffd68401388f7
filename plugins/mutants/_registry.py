"""The seeded-bug family: each driver is the reference with exactly one realistic bug."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.api.hal import Device, OperationType
from reference_driver import ReferenceDevice
from reference_driver.ops import KERNELS, Kernel
from reference_driver.validation import Rules


@dataclass(frozen=True)
class Mutant:
    name: str
    requirement: str
    description: str
    factory: Callable[[], Device]
    operations: tuple[OperationType, ...] = ()  # whose results the bug gets wrong, where it is in some


MUTANTS: dict[str, Mutant] = {}


def mutant(name: str, requirement: str, description: str, operations: tuple[OperationType, ...] = ()):
    """Register ``factory`` as driver ``mutant-<name>`` breaking ``requirement`` (in the results of
    ``operations``, where the bug is in some operations' kernels)."""

    def register(factory: Callable[[], Device]) -> Callable[[], Device]:
        if name in MUTANTS:
            raise ValueError(f"mutant {name!r} is defined twice")

        def named() -> Device:
            device = factory()
            device.name = f"mutant-{name}"
            return device

        MUTANTS[name] = Mutant(name, requirement, description, named, tuple(operations))
        return factory

    return register


def broken_rules(name: str, replacement: Callable) -> Rules:
    """The reference's rules with rule ``name`` (a method of `Rules`) replaced."""
    if not callable(getattr(Rules, name, None)):
        raise AttributeError(f"the reference has no rule {name!r}")
    return type(f"Broken_{name}", (Rules,), {name: staticmethod(replacement)})()


def with_kernels(runs: Mapping[OperationType, Callable]) -> ReferenceDevice:
    """A reference device whose kernels for these operations compute with ``runs`` (their
    operand validation unchanged)."""
    return ReferenceDevice(kernels={**KERNELS, **{op: Kernel(KERNELS[op].validate, run) for op, run in runs.items()}})


def with_rule(name: str, replacement: Callable, **parts: Any) -> ReferenceDevice:
    """A reference device whose validation rule ``name`` is replaced (and ``parts``, other
    constructor parameters of `ReferenceDevice`, given)."""
    return ReferenceDevice(rules=broken_rules(name, replacement), **parts)


def flagged_mutant(flags: dict[str, str], name: str, requirement: str, description: str, flag: str) -> None:
    """A mutant whose bug is in native code the reference ships, built with ``-D<flag>``:
    the device is the reference, and ``flags`` (driver name -> flag) tells the plugin's hook
    which build to declare."""
    flags[f"mutant-{name}"] = flag
    mutant(name, requirement, description)(ReferenceDevice)
