"""The requirement IDs, with a one-line summary each; docs/spec.md (shipped as harness/spec.md) is normative."""

from __future__ import annotations

from typing import Final

SPEC_REQUIREMENTS: Final[dict[str, str]] = {
    "POOL-1": "CONSTANT_COPY and CONSTANT_REFERENCE values give identical results",
    "POOL-2": "I/O travels through request pools at exact offsets/lengths/padding; bytes outside outputs untouched",
    "POOL-3": "ashmem, mmap_fd and hardware_buffer_blob are mapped; non-BLOB hardware buffers only for I/O",
    "POOL-4": "an unusable constant pool fails preparation, an unusable I/O pool fails execution",
    "POOL-5": "invalid handles are rejected with an error, never a crash, hang or stray access",
    "DOM-ALLOC-1": "allocation needs models and roles, indexes in range, 0 < probability <= 1, no duplicate role",
    "DOM-ALLOC-2": "role operands agree on type/scale/zeroPoint; dimensions combine; scalar roles have none",
    "DOM-ALLOC-3": "valid requests may be refused with GENERAL_FAILURE; tokens positive and unique",
    "DOM-STATE-1": "buffers start uninitialized; successful writes initialize, failed writes uninitialize",
    "DOM-STATE-2": "reading an uninitialized buffer is GENERAL_FAILURE",
    "DOM-COPY-1": "copies work with ashmem, mmap_fd, hardware_buffer_blob; size mismatch is INVALID_ARGUMENT",
    "DOM-COPY-2": "copyFrom dimensions must be complete, of the right rank and compatible",
    "DOM-ROLE-1": "a token pool names a live buffer of this driver",
    "DOM-ROLE-2": "every use of a buffer matches an allocation role: model, direction, ioIndex",
    "DOM-ROLE-3": "a token used as an output is not also another input or output of the request",
    "DOM-ROLE-4": "token arguments have offset, length and padding 0",
    "DOM-DYN-1": "buffers with unknown dimensions resize and read back the latest shape and contents",
    "DOM-DYN-2": "conflicting dimensions are INVALID_ARGUMENT; unrepresentable outputs GENERAL_FAILURE; "
    "short memory outputs OUTPUT_INSUFFICIENT_SIZE with the needed shape",
    "DOM-CONC-1": "concurrent reads of one buffer all succeed with the same bytes",
    "DOM-CONC-2": "concurrent writes never crash or block the service; it keeps serving",
    "REQ-1": "argument counts equal the model's",
    "REQ-2": "pool index, region, length, hasNoValue and dimension rules of request arguments",
    "CC-1": "custom-call targets registered by (name, platform); lookup and re-registration rules",
    "CC-2": "host convention f(out, ins) with nested tuple pointers",
    "CC-3": "device convention: flat buffers array, operand leaves then output leaves, pre-order",
    "CC-4": "opaque arrives byte-exact and length-delimited",
    "CC-5": "tuple output leaves may be scratch; nothing written outside outputs",
    "CC-6": "failures reported through a status reach the caller with the message",
    "FFI-1": "global registry: missing name gives none; duplicate registration needs override",
    "FFI-2": "type-erased arguments of the closed set, callbacks both ways",
    "FFI-3": "errors cross with kind and message; wrong arity/type is a TypeError naming the function",
    "FFI-4": "tensors cross by DLPack without copying, shape/dtype/strides/device preserved",
    "SVC-1": "the driver runs in its own service process; crashes are reported and the service replaced",
    "SVC-2": "every call has a deadline; hangs are reported with stacks and the service replaced",
    "SVC-3": "memory crosses as descriptors; a handle changed after handover cannot crash a correct driver",
}

#: Operation semantics (SPEC CHOICE-8: NNAPI's, from NeuralNetworks.h), checked on golden examples
#: (NNAPI CTS spec files, harness.cts) in VTS's test kinds.  The harness's own IDs, beside SPEC's.
OPERATION_REQUIREMENTS: Final[dict[str, str]] = {
    "OPS-1": "every declared operation gives NNAPI's golden outputs (CTS criteria), I/O in each declared memory kind",
    "OPS-2": "outputs of unknown shape: one byte short is OUTPUT_INSUFFICIENT_SIZE naming the shape; with room, "
    "the shapes are reported and the outputs golden",
    "OPS-3": "golden examples with every input and output in a driver-managed buffer",
}

#: Control flow (IF and WHILE with referenced subgraphs, NeuralNetworks.h HAL 1.3), the spec's
#: section after the operations'.
CONTROL_FLOW_REQUIREMENTS: Final[dict[str, str]] = {
    "FLOW-1": "IF runs its then branch for any non-zero condition byte, else its else branch, on its inputs in order",
    "FLOW-2": "WHILE checks its condition before each body run (zero runs possible); outputs are the last "
    "input-output values",
    "FLOW-3": "a WHILE still running after the execution's loop timeout (default 2 s) fails with MISSED_DEADLINE_*, "
    "within a second",
    "FLOW-4": "nested referenced subgraphs without a cycle are valid; mismatched or cyclic references are "
    "INVALID_ARGUMENT",
}

#: State between executions (SPEC §11): what a recurrent operation carries from one execution to the next.
STATE_REQUIREMENTS: Final[dict[str, str]] = {
    "STATE-1": "an execution's results depend only on its model and request; a recurrent operation's state passes "
    "only through its operands, nothing persists in the prepared model between executions",
}

REQUIREMENTS: Final[dict[str, str]] = {**SPEC_REQUIREMENTS, **OPERATION_REQUIREMENTS, **CONTROL_FLOW_REQUIREMENTS,
                                    **STATE_REQUIREMENTS}

#: The rule a wrong output value breaks when the operation computes it wrong however its operands
#: travel (CHOICE-7's bounds, CHOICE-8's semantics), whatever the theme of the test that saw it.
VALUE_RULE: Final = "OPS-1"
#: The rule a constant read wrong from its pool breaks.
CONSTANT_RULE: Final = "POOL-1"
#: The rule an output the driver does not deliver through its region breaks, and a byte written
#: outside every output region.
OUTPUT_RULE: Final = "POOL-2"
#: SPEC §7: the harness's own guarantees.  A failure carrying one of them (a crash is SVC-1, a
#: hang SVC-2) says which guarantee let the test end, not which rule of the driver's it broke.
HARNESS_GUARANTEES: Final = ("SVC-1", "SVC-2", "SVC-3")

#: Per section of requirements (an ID less its number), the capabilities that may excuse it.
_SECTION_EXCUSES: Final[dict[str, frozenset[str]]] = {
    "POOL": frozenset(), "REQ": frozenset(), "SVC": frozenset(),
    # a driver that declares neither IF nor WHILE (or not the operations inside them) has none to run
    "FLOW": frozenset({"operations", "operand_types"}),
    **{section: frozenset({"memory_domains"}) for section in ("DOM-ALLOC", "DOM-STATE", "DOM-COPY", "DOM-ROLE", "DOM-CONC")},
    "DOM-DYN": frozenset({"memory_domains", "dynamic_buffers"}),
    "CC": frozenset({"custom_call_targets"}),
    "FFI": frozenset({"packed_functions"}),
    # the golden examples of the operations, types and memory kinds a driver declares
    "OPS": frozenset({"operations", "operand_types", "memory_kinds", "memory_domains", "dynamic_buffers"}),
    # a driver without the recurrent operations (or their types) has no state to carry
    "STATE": frozenset({"operations", "operand_types"}),
}

#: What a driver may leave out by what it declares: per requirement, the capabilities
#: (`harness.integration.skips.CAPABILITIES`) whose declaration can make every test of it not
#: applicable.  Memory pools (SPEC §2), requests (§4) and the service (§7) bind every driver: the
#: declarations choose the models their tests build, never whether they apply.  Memory domains
#: (§3) are a driver's to leave out by declaring no support (and buffers of unknown shape, DOM-DYN,
#: by declaring it refuses them), custom calls (§5) and packed functions (§6) by declaring none.
#: A requirement whose every test the declarations ruled out for any other reason (a driver with
#: memory domains whose operations the memory-domain models cannot be built from) was checked by
#: nothing: the certificate says not-run, never not-applicable.
EXCUSED_BY: Final[dict[str, frozenset[str]]] = {r: _SECTION_EXCUSES[r.rsplit("-", 1)[0]] for r in REQUIREMENTS}

#: The requirements nothing a driver declares excuses.
BINDING_REQUIREMENTS: Final[frozenset[str]] = frozenset(r for r, excuses in EXCUSED_BY.items() if not excuses)


def core_requirements() -> list[str]:
    """Every requirement: the suites cover all of SPEC, §7 included (canary drivers, suites/service)."""
    return list(REQUIREMENTS)
