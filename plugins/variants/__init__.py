"""Correct variant drivers (``variant-<name>``): the suites' specificity, SPEC §8.

Each differs from the reference only in a way a CHOICE of SPEC §8 allows, so each must pass
every suite in every profile: `harness score` fails on any variant that does not.
"""

from __future__ import annotations

from harness import DriverSpec, hookimpl

from . import detection, drivers, functions, recurrent

#: name -> (factory, the CHOICE it exercises, or the rule whose allowance it takes)
VARIANTS = {
    "handle-defects-invalid-argument": (drivers.handle_defects_invalid_argument, "CHOICE-1"),
    "handle-defects-device-unavailable": (drivers.handle_defects_device_unavailable, "CHOICE-1"),
    "validates-unused-pools": (drivers.validates_unused_pools, "CHOICE-2"),
    "chunked-padding-writes": (drivers.chunked_padding_writes, "CHOICE-3"),
    "empty-output-shapes": (drivers.empty_output_shapes, "CHOICE-4"),
    "add-only": (drivers.add_only, "CHOICE-5"),
    "quantized-only": (drivers.quantized_only, "CHOICE-5"),
    "integer-arithmetic-only": (drivers.integer_arithmetic_only, "CHOICE-5"),
    "signed-quantized-only": (drivers.signed_quantized_only, "CHOICE-5"),
    "float-tensors-only": (drivers.float_tensors_only, "CHOICE-5"),
    "no-memory-domains": (drivers.no_memory_domains, "CHOICE-5"),
    "refuses-dynamic-buffers": (drivers.refuses_dynamic_buffers, "CHOICE-5"),
    "required-memory-kinds-only": (drivers.required_memory_kinds_only, "CHOICE-5"),
    "random-reused-tokens": (drivers.random_reused_tokens, "CHOICE-6"),
    "bounded-mapping-cache": (drivers.bounded_mapping_cache, "CHOICE-6"),
    "threaded-slow": (drivers.threaded_slow, "CHOICE-6"),
    "bounded-buffer-memory": (drivers.bounded_buffer_memory, "CHOICE-6"),
    "busy-buffers-refuse-reads": (drivers.busy_buffers_refuse_reads, "DOM-CONC-2"),
    "forgets-shape-of-failed-writes": (drivers.forgets_shape_of_failed_writes, "DOM-STATE-1"),
    "float32-fma-reordered": (drivers.float32_fma_reordered, "CHOICE-7"),
    "float16-in-float16": (drivers.float16_in_float16, "CHOICE-7"),
    "quantized-in-float32": (drivers.quantized_in_float32, "CHOICE-7"),
    "fixed-point-quantized": (drivers.fixed_point_quantized, "CHOICE-7"),
    "functions-in-float32": (functions.functions_in_float32, "CHOICE-7"),
    "detection-in-float32": (detection.detection_in_float32, "CHOICE-7"),
    "recurrent-in-own-precision": (recurrent.recurrent_in_own_precision, "CHOICE-7"),
    "nnapi-quantization-rules": (drivers.nnapi_quantization_rules, "CHOICE-8"),
    "concatenation-axis-from-the-end": (drivers.concatenation_axis_from_the_end, "CHOICE-8"),
    "conv-padding-past-the-filter": (drivers.conv_padding_past_the_filter, "CHOICE-8"),
    "true-as-0xff": (drivers.true_as_0xff, "CHOICE-8"),
    "random-multinomial-own-stream": (drivers.random_multinomial_own_stream, "CHOICE-8"),
    "relaxed-float32-in-float16": (drivers.relaxed_float32_in_float16, "CHOICE-8"),
    "custom-call-scratch-left-dirty": (drivers.custom_call_scratch_left_dirty, "CC-5"),
}

#: variant name -> the compile-time flag its custom-call targets are built with (the reference's C
#: targets, reference_driver/custom_calls/targets.c, differing only as the flag says)
CUSTOM_CALL_FLAGS = {"custom-call-scratch-left-dirty": "CC_VARIANT_SCRATCH_LEFT_DIRTY"}


def _named(name: str, factory):
    def create():
        device = factory()
        device.name = f"variant-{name}"
        return device
    return create


@hookimpl
def harness_register_drivers() -> list[DriverSpec]:
    specs = []
    for name, (factory, choice) in VARIANTS.items():
        summary = (factory.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        specs.append(DriverSpec(f"variant-{name}", _named(name, factory), summary, exercises=choice))
    return specs


@hookimpl
def harness_custom_call_targets(driver_name: str) -> list:
    flag = CUSTOM_CALL_FLAGS.get(driver_name.removeprefix("variant-")) if driver_name.startswith("variant-") else None
    if flag is None:
        return []
    from reference_driver.custom_calls import reference_targets

    return reference_targets((f"-D{flag}",))
