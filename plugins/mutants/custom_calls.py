"""Custom-call mutants: the reference's C targets built with one seeded bug (a -D flag)."""

from __future__ import annotations

import functools

from harness import hookimpl

from ._registry import flagged_mutant

# mutant name -> the compile-time flag that seeds its bug into reference_driver/custom_calls/targets.c (or, for
# XLA_MUTANT_ flags, into xla_ffi_targets.cc alone)
FLAGS: dict[str, str] = {}
_custom_call_mutant = functools.partial(flagged_mutant, FLAGS)


_custom_call_mutant("cc-leaf-order", "CC-3", "the device-style add target takes its two operand leaves in the wrong order",
                    "CC_MUTANT_LEAF_ORDER")
_custom_call_mutant("cc-tuple-post-order", "CC-2", "tuple targets flatten nested tuples before the leaves beside them",
                    "CC_MUTANT_POSTORDER")
_custom_call_mutant("cc-opaque-truncated-at-nul", "CC-4", "reads opaque as a C string, cut at the first NUL byte",
                    "CC_MUTANT_OPAQUE_NUL")
_custom_call_mutant("cc-writes-past-output", "CC-5", "the device-style add target writes one element past its output",
                    "CC_MUTANT_WRITE_PAST")
_custom_call_mutant("cc-input-modified", "CC-5", "the device-style add target also stores its result into an input",
                    "CC_MUTANT_INPUT_IN_PLACE")
_custom_call_mutant("cc-status-swallowed", "CC-6", "the failing target reports success with a made-up output",
                    "CC_MUTANT_STATUS_SWALLOWED")
_custom_call_mutant("cc-segfault-on-empty-message", "CC-6", "the failing target dereferences a bad pointer when its "
                    "message would be empty", "CC_MUTANT_SEGFAULT")

_custom_call_mutant("cc-message-cut-at-200", "CC-6", "the failing target keeps its message in a 200-byte buffer",
                    "CC_MUTANT_MESSAGE_CUT")
_custom_call_mutant("cc-symbol-hidden", "CC-1", "builds the device-style add target with hidden visibility, so the "
                    "symbol it declares is not exported", "CC_MUTANT_SYMBOL_HIDDEN")
_custom_call_mutant("cc-count-16-bit", "CC-3", "the device-style add target keeps its element count in 16 bits "
                    "(wraps above 65535 elements)", "CC_MUTANT_SHORT_COUNT")
_custom_call_mutant("xla-one-byte-opaque-dropped", "CC-4", "the typed-FFI echo handler (run under XLA) copies its opaque "
                    "bytes only when there are two or more (an off-by-one in its check for none): a one-byte opaque "
                    "leaves its output byte as XLA allocated it; the C targets are the reference's",
                    "XLA_MUTANT_ONE_BYTE_OPAQUE_DROPPED")
_custom_call_mutant("xla-input-modified", "CC-5", "the typed-FFI add handler (run under XLA) also stores its result into "
                    "its second operand, which XLA hands it in place; the C targets are the reference's",
                    "XLA_MUTANT_INPUT_IN_PLACE")


@hookimpl
def harness_custom_call_targets(driver_name: str) -> list:
    flag = FLAGS.get(driver_name)
    if flag is None:
        return []
    from reference_driver.custom_calls import reference_targets

    return reference_targets((f"-D{flag}",))
