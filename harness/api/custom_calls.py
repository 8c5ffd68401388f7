"""Custom-call targets as a driver declares them, and the registry they are looked up in (CC-1)."""

from __future__ import annotations

from collections.abc import Callable
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from harness.api.shapes import Shape
from harness.api.errors import DeclarationError, HarnessError

#: The directory of ``harness_custom_call.h``, the C header a target's source includes.
C_INCLUDE_DIR = Path(__file__).parent / "c"

class Convention(enum.StrEnum):
    """XLA's custom-call calling conventions (SPEC section 5); a declaration may give the value."""

    HOST = "host"  # void f(void *out, const void **in)
    HOST_UNIFIED = "host-unified"  # ... plus XlaCustomCallStatus *status
    DEVICE = "device"  # void f(stream, void **buffers, const char *opaque, size_t opaque_len)
    DEVICE_STATUS = "device-status"  # ... plus XlaCustomCallStatus *status


CONVENTIONS: tuple[Convention, ...] = tuple(Convention)
STATUS_CONVENTIONS: tuple[Convention, ...] = (Convention.HOST_UNIFIED, Convention.DEVICE_STATUS)


class CustomCallError(HarnessError):
    """A registry misuse (CC-1) or a target's reported failure (CC-6), with the exact message."""


@dataclass(frozen=True)
class CallCase:
    """One call: the operands' shapes, the output's shape, and the opaque bytes."""

    operands: tuple[Shape, ...]
    output: Shape
    opaque: bytes = b""


# --------------------------------------------------------------------------- case spaces
# What calls a target accepts, as data: the driver hands over a description and a pure function,
# the harness draws the values (with hypothesis, each draw labelled by the parameter's name).


@dataclass(frozen=True)
class Choice:
    """One of ``values``."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class Integers:
    """An integer from one of the inclusive ``ranges`` (a single value is a range of one)."""

    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Opaque:
    """Opaque bytes up to ``max_size``: empty, with embedded NULs, and large ones (CC-4)."""

    max_size: int


@dataclass(frozen=True)
class Text:
    """A string whose length (in characters) is in one of the inclusive ``lengths`` ranges."""

    lengths: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class OperandShapes:
    """A tuple of ``count`` (inclusive range) operand shapes: leaves of at most two dimensions of
    side up to ``max_side``, or tuples of them nested up to ``max_depth`` deep."""

    count: tuple[int, int]
    max_depth: int
    max_side: int


Parameter = Union[Choice, Integers, Opaque, Text, OperandShapes]
PARAMETER_TYPES = (Choice, Integers, Opaque, Text, OperandShapes)


@dataclass(frozen=True)
class CaseSpace:
    """The `CallCase`s a target accepts: ``build(**values)`` for every choice of one value per
    parameter (``CaseSpace.fixed(case)`` for a target that takes one case only)."""

    parameters: Mapping[str, Parameter]
    build: Callable[..., CallCase]

    @staticmethod
    def fixed(case: CallCase) -> CaseSpace:
        return CaseSpace({}, lambda: case)


@dataclass(frozen=True)
class CustomCallTarget:
    """A target a driver provides: where its code is, how it is called, and what it computes.

    ``library`` and ``symbol`` locate the function (``library`` may be a zero-argument
    callable that builds the library and returns its path, run where the target is
    called); ``xla_library`` and ``xla_symbol`` likewise locate a typed-FFI handler.  ``reference(operands, opaque)`` computes the same output with numpy (None
    for scratch leaves); ``cases`` describes the `CallCase`s the target
    accepts, as data (`CaseSpace`).  A target that always fails has ``error(opaque)`` give the exact
    message.
    """

    name: str
    platform: str
    convention: str
    library: Any
    symbol: str
    reference: Callable[[tuple, bytes], Any] | None = None
    cases: CaseSpace | None = None
    error: Callable[[bytes], str] | None = None
    description: str = ""
    scratch: tuple[tuple[int, ...], ...] = field(default=())
    # The same computation written against XLA's typed FFI (optional; run under jax):
    # operand leaves become arguments in pre-order, output leaves results, and opaque a
    # uint8 array attribute named "opaque" when xla_opaque is set.
    xla_library: Any = None
    xla_symbol: str = ""
    xla_opaque: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.platform)

    def library_path(self) -> str:
        return str(self.library() if callable(self.library) else self.library)

    def xla_library_path(self) -> str:
        return str(self.xla_library() if callable(self.xla_library) else self.xla_library)


def check_target(target: object, plugin: str = "?") -> None:
    """Early validation of a declaration: a plugin's typo is a one-line error at start-up that
    names the plugin, the field and what is allowed."""
    if not isinstance(target, CustomCallTarget):
        raise DeclarationError(plugin, "harness_custom_call_targets", "item", type(target).__name__,
                               "harness.api.custom_calls.CustomCallTarget instances")
    declared = f"custom-call target {target.name!r}"
    for name in ("name", "platform", "symbol"):
        value = getattr(target, name)
        if not isinstance(value, str) or not value:
            raise DeclarationError(plugin, declared, name, value, "a non-empty string")
    if target.convention not in CONVENTIONS:
        raise DeclarationError(plugin, declared, "convention", target.convention, ", ".join(CONVENTIONS))
    if target.error is not None and target.convention not in STATUS_CONVENTIONS:
        raise DeclarationError(plugin, declared, "convention", target.convention,
                               f"{', '.join(STATUS_CONVENTIONS)} (a target with 'error' reports through a status)")
    if target.error is None and target.reference is None:
        raise DeclarationError(plugin, declared, "reference", None, "a callable (required unless 'error' is set)")
    if target.error is None and target.cases is None:
        raise DeclarationError(plugin, declared, "cases", None,
                               "a harness.api.custom_calls.CaseSpace (required unless 'error' is set)")
    for name in ("reference", "error"):
        value = getattr(target, name)
        if value is not None and not callable(value):
            raise DeclarationError(plugin, declared, name, value, "a callable or None")
    if target.cases is not None:
        if not isinstance(target.cases, CaseSpace):
            raise DeclarationError(plugin, declared, "cases", type(target.cases).__name__, "a harness.api.custom_calls.CaseSpace")
        for name, parameter in target.cases.parameters.items():
            if not isinstance(parameter, PARAMETER_TYPES):
                raise DeclarationError(plugin, declared, f"cases.parameters[{name!r}]", type(parameter).__name__,
                                       ", ".join(t.__name__ for t in PARAMETER_TYPES))
            problem = _parameter_problem(parameter)
            if problem is not None:
                field_name, value, allowed = problem
                raise DeclarationError(plugin, declared, f"cases.parameters[{name!r}].{field_name}", value, allowed)
        if not callable(target.cases.build):
            raise DeclarationError(plugin, declared, "cases.build", target.cases.build, "a callable returning a CallCase")
    if target.library is None or target.library == "":
        raise DeclarationError(plugin, declared, "library", target.library,
                               "a path to a shared library, or a callable that builds one")


def _bad_pair(pair: object, least: int | None) -> bool:
    """Not an inclusive ``(low, high)`` integer range with low <= high (and ``least`` <= low)."""
    if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(v, int) for v in pair)):
        return True
    return pair[0] > pair[1] or (least is not None and pair[0] < least)


def _pairs(least: int | None) -> str:
    return f"(low, high) integer pairs, {'' if least is None else f'{least} <= '}low <= high"


def _parameter_problem(parameter: Parameter) -> tuple[str, object, str] | None:
    """(field, value, what is allowed) of a parameter no case can be drawn from; None when valid.
    Each is checked here, where a plugin's typo is one line, not an error from inside a draw."""
    if isinstance(parameter, Choice):
        if not isinstance(parameter.values, tuple) or not parameter.values:
            return "values", parameter.values, "a non-empty tuple"
    elif isinstance(parameter, (Integers, Text)):
        field_name, least = ("ranges", None) if isinstance(parameter, Integers) else ("lengths", 0)
        ranges = getattr(parameter, field_name)
        if not isinstance(ranges, tuple) or not ranges or any(_bad_pair(pair, least) for pair in ranges):
            return field_name, ranges, f"a non-empty tuple of {_pairs(least)}"
    elif isinstance(parameter, Opaque):
        if not isinstance(parameter.max_size, int) or parameter.max_size < 1:
            return "max_size", parameter.max_size, "an integer of 1 or more"
    else:
        if _bad_pair(parameter.count, 0):
            return "count", parameter.count, f"one of {_pairs(0)}"
        for field_name, least in (("max_depth", 0), ("max_side", 1)):
            value = getattr(parameter, field_name)
            if not isinstance(value, int) or value < least:
                return field_name, value, f"an integer of {least} or more"
    return None


class TargetRegistry:
    """Targets by (name, platform), as XLA's custom-call target registry keeps them (CC-1)."""

    def __init__(self) -> None:
        self._targets: dict[tuple[str, str], tuple[CustomCallTarget, Any]] = {}

    def register(self, target: CustomCallTarget, function: Any = None) -> None:
        """Register ``target`` (its resolved ``function`` address, when known).  The same
        function again under its key is accepted; a different one is an error."""
        identity = function if function is not None else (target.library_path(), target.symbol, target.convention)
        existing = self._targets.get(target.key)
        if existing is not None:
            if existing[1] != identity:
                raise CustomCallError(f"custom-call target {target.name!r} for platform {target.platform!r} is already "
                                      f"registered with a different function")
            return
        self._targets[target.key] = (target, identity)

    def lookup(self, name: str, platform: str) -> CustomCallTarget:
        found = self._targets.get((name, platform))
        if found is None:
            known = sorted(n for n, p in self._targets if p == platform)
            raise CustomCallError(f"no custom-call target {name!r} is registered for platform {platform!r}"
                                  f" (registered there: {', '.join(known) or 'none'})")
        return found[0]

    def __iter__(self):
        return (target for target, _ in self._targets.values())

    def __len__(self) -> int:
        return len(self._targets)
