"""A driver as a plugin declares it: a name and a factory (what ``harness_register_drivers`` returns)."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.api.errors import DriverLoadError
from harness.api.hal import Capabilities, Device

__all__ = ["DriverSpec"]


@dataclass(frozen=True)
class DriverSpec:
    """A named driver a plugin provides.

    ``breaks`` is set by seeded-bug drivers: the SPEC requirement their bug violates;
    ``breaks_operations``, where the bug is in some operations' results: their names (of
    `OperationType`), whose tests the suites' score runs first.
    ``exercises`` is set by correct variant drivers: the SPEC §8 CHOICE they differ from the
    reference by (they must pass everything).
    ``deep_bug`` is set by drivers whose seeded bugs the ``ci`` profile does not catch, kept for
    measuring fuzzing (``benchmarks/bench_fuzz.py --bugs``), not scored.
    """

    name: str
    factory: Callable[[], Device]
    description: str = ""
    capabilities: Capabilities | None = None
    breaks: str = ""
    breaks_operations: tuple[str, ...] = ()
    exercises: str = ""
    deep_bug: bool = False
    plugin: str = field(default="", compare=False)

    def create(self) -> Device:
        """Call the factory; a failure becomes a `DriverLoadError` naming the driver and plugin."""
        try:
            device = self.factory()
        except Exception as error:
            raise DriverLoadError(
                f"driver {self.name!r} (plugin {self.plugin or '?'}): its factory raised "
                f"{type(error).__name__}: {error} ({where(error)})"
            ) from None
        missing = [m for m in ("capabilities", "prepare_model", "allocate", "get_supported_operations") if not hasattr(device, m)]
        if missing:
            raise DriverLoadError(
                f"driver {self.name!r} (plugin {self.plugin or '?'}): the factory returned {type(device).__name__}, "
                f"which lacks {', '.join(missing)} of the Driver API (harness.api.hal.Device)"
            )
        return device


def where(error: BaseException) -> str:
    """Where an exception was raised, as file:line of the innermost frame."""
    frames = traceback.extract_tb(error.__traceback__)
    return f"at {frames[-1].filename}:{frames[-1].lineno}" if frames else "no traceback"
