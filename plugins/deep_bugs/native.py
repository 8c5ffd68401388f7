"""Deep bugs in native code: the sample C++ driver (`harness.plugins.native_sample`) built with
``-DNATIVE_DEEP_...`` flags, each a bug behind a conjunction of conditions tested in branches of
their own (`plugins/native_sample/driver.cc`), so that a fuzzer guided by the native edges of an
instrumented build (`harness.tooling.coverage`) sees each condition met.

Each is a ``deep-<name>`` driver of its own; ``deep-native-bugs`` is the sample with all of them
at once, one target for a fuzzing budget.  Their failures are told apart by rule, operation and
type: an output's padding (REQ-2), a FLOAT32 ADD, an INT32 MUL, a FLOAT32 MUL's constant.
"""

from __future__ import annotations

import functools

from harness import DriverSpec, hookimpl
from harness.api.hal import Device

from ._registry import DEEP_BUGS, Reach, deep_bug_driver

#: The driver with every native deep bug at once.
COMBINED = "deep-native-bugs"
#: Deep bug name -> the flag that seeds it.
FLAGS: dict[str, str] = {}


def _sample(flags: tuple[str, ...]) -> Device:
    from harness.plugins.native_sample import sample_device

    return sample_device(flags)


def _native_bug(name: str, requirement: str, description: str, flag: str) -> None:
    FLAGS[name] = flag
    deep_bug_driver(name, requirement, description, Reach.NATIVE, functools.partial(_sample, (f"-D{flag}",)))


_native_bug("native-output-padding-unchecked", "REQ-2",
            "the native sample leaves out the padding of an output of rank 3 or more in an mmap_fd pool after the "
            "first when it checks the region against its pool", "NATIVE_DEEP_OUTPUT_PADDING_UNCHECKED")
_native_bug("native-broadcast-tail-dropped", "OPS-1",
            "the native sample's FLOAT32 ADD of rank 3 or more, its second operand of the same rank broadcast along "
            "the first axis, rows of 5 or more, writes 0 as its last element", "NATIVE_DEEP_BROADCAST_TAIL_DROPPED")
_native_bug("native-int-mul-saturates", "OPS-1",
            "the native sample's INT32 MUL of rank 4 and 16 elements or more, without broadcasting, "
            "saturates the product of two negative numbers instead of wrapping it", "NATIVE_DEEP_INT_MUL_SATURATES")
_native_bug("native-reference-constant-shifted", "POOL-1",
            "the native sample reads a FLOAT32 constant by reference of rank 3 or more and 8 elements or more, "
            "past the first 4 bytes of an mmap_fd pool and the first operand of a MUL, from 4 bytes before its "
            "offset",
            "NATIVE_DEEP_REFERENCE_CONSTANT_SHIFTED")


def combined_device() -> Device:
    """The native sample with every native deep bug."""
    return _sample(tuple(f"-D{FLAGS[name]}" for name in sorted(FLAGS)))


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    names = sorted(FLAGS)
    return [DriverSpec(COMBINED, combined_device, f"every native deep seeded bug at once ({len(names)} of them: "
                                                  f"{', '.join(DEEP_BUGS[name].driver for name in names)}), for fuzzing",
                       deep_bug=True)]
