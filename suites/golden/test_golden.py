"""NNAPI golden examples (CTS/VTS spec files) on the driver under test: OPS-1, OPS-2, OPS-3.

Golden outputs need no reference implementation, so every operation a driver declares is
checked, in VTS's test kinds: general (each declared memory kind), dynamic output shape and
memory domain.  Outputs are judged with CTS's accuracy criteria (relaxed ones for relaxed models).
"""

from __future__ import annotations

from harness.api.hal import Capabilities, Device
from harness.cts.check import GoldenTest, ReportedUnsupported, check_example
from harness.cts.corpus import Unexpressed
from harness.cts.kinds import AllocationRefused, GoldenKind
from harness.integration.skips import not_applicable, not_run, refused_allocation


def test_golden_example(driver: Device, capabilities: Capabilities, golden_test: GoldenTest | Unexpressed | None) -> None:
    if golden_test is None:
        not_applicable("operations", "the driver declares none of the corpus's operations with all their operand types")
    if isinstance(golden_test, Unexpressed):
        not_run(f"the harness could not read this spec: {golden_test.reason}",
                f"correct the spec file, {golden_test.reason} (or, when it is valid NNAPI spec DSL, report the gap "
                f"to the harness's maintainers)")
    if golden_test.kind is GoldenKind.MEMORY_DOMAIN and not capabilities.memory_domains:
        not_applicable("memory_domains", "the driver declares no memory-domain support")
    try:
        check_example(driver, golden_test)
    except ReportedUnsupported:
        # CHOICE-5: declared (operation, type) pairs are coarse; a driver may report one
        # signature (a layout, a dilation) unsupported, and VTS then skips the example too.
        not_applicable("operations", f"get_supported_operations reports {golden_test.id} unsupported")
    except AllocationRefused as refused:
        refused_allocation(refused.error)
