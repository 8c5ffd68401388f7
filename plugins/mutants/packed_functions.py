"""Packed-function mutants: the reference's tvm-ffi probe library built with one seeded bug."""

from __future__ import annotations

import functools

from harness import hookimpl

from ._registry import flagged_mutant

# mutant name -> the compile-time flag that seeds its bug into reference_driver/packed_functions/sample.cc
FLAGS: dict[str, str] = {}
_packed_function_mutant = functools.partial(flagged_mutant, FLAGS)


_packed_function_mutant("ffi-int-truncated", "FFI-2", "carries integers across the boundary as 32 bits",
                        "FFI_MUTANT_INT_TRUNCATED")
_packed_function_mutant("ffi-error-kind-lost", "FFI-3", "turns every error into a RuntimeError",
                        "FFI_MUTANT_ERROR_KIND_LOST")
_packed_function_mutant("ffi-strides-assumed-compact", "FFI-4", "reports compact strides for every tensor it receives",
                        "FFI_MUTANT_STRIDES_ASSUMED_COMPACT")

_packed_function_mutant("ffi-strides-sign-dropped", "FFI-4", "reports a reversed view's negative strides as positive "
                        "(strides taken as distances)", "FFI_MUTANT_STRIDES_SIGN_DROPPED")

_packed_function_mutant("ffi-scalar-as-rank-1", "FFI-4", "describes a tensor of rank 0 (a scalar) as one of shape "
                        "[1] (its tensors have one axis at least)", "FFI_MUTANT_SCALAR_AS_RANK_1")

_packed_function_mutant("ffi-byte-offset-ignored", "FFI-4", "takes a DLPack tensor's data pointer as its first "
                        "element, ignoring byte_offset (which numpy always leaves at zero)", "FFI_MUTANT_BYTE_OFFSET_IGNORED")

_packed_function_mutant("ffi-echo-objects-dropped", "FFI-2", "echo hands back numbers, strings and bytes, and None "
                        "for a function, module or tensor (its own value type has no room for objects)",
                        "FFI_MUTANT_ECHO_OBJECTS_DROPPED")
_packed_function_mutant("ffi-device-assumed-cpu", "FFI-4", "describes every tensor as a CPU tensor (device 1, 0), "
                        "whatever device it was sent on (numpy only ever sends CPU tensors)", "FFI_MUTANT_DEVICE_ASSUMED_CPU")
_packed_function_mutant("ffi-echo-rewrapped-on-cpu", "FFI-4", "hands a tensor back as a new view of the same memory "
                        "made as a CPU tensor, losing the device it was sent on", "FFI_MUTANT_ECHO_REWRAPPED_ON_CPU")

_packed_function_mutant("ffi-callback-result-dropped", "FFI-2", "calls a callback but returns its own argument",
                        "FFI_MUTANT_CALLBACK_RESULT_DROPPED")
_packed_function_mutant("ffi-message-cut-at-200", "FFI-3", "cuts error messages to 200 bytes", "FFI_MUTANT_MESSAGE_CUT")
_packed_function_mutant("ffi-segfault-on-empty-message", "FFI-3", "raise_error dereferences a bad pointer when the "
                        "message is empty", "FFI_MUTANT_SEGFAULT_ON_EMPTY_MESSAGE")
_packed_function_mutant("ffi-crash-on-load", "FFI-1", "the library's static initializer, which registers the probes, "
                        "dereferences a bad pointer", "FFI_MUTANT_CRASH_ON_LOAD")
_packed_function_mutant("ffi-probe-unregistered", "FFI-1", "never registers tensor_echo (its registration list lost "
                        "the entry)", "FFI_MUTANT_PROBE_UNREGISTERED")


@hookimpl
def harness_packed_functions(driver_name: str) -> list:
    flag = FLAGS.get(driver_name)
    if flag is None:
        return []
    from reference_driver.packed_functions import packed_library

    return [packed_library(driver_name, (f"-D{flag}",))]
