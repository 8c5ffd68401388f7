"""What every memory-domain test builds its models from: an operation and a type the driver declares."""

from __future__ import annotations

import pytest

from harness.api.hal import Capabilities
from harness.integration.skips import not_applicable
from harness.strategies.domains import BINARY_OPS, DOMAIN_TYPES, FALLBACK_DOMAIN_TYPES, Flavor, declared_flavor


@pytest.fixture
def flavor(memory_domains: None, capabilities: Capabilities) -> Flavor:
    """A declared binary operation on a declared memory-domain type; not applicable without one."""
    found = declared_flavor(capabilities)
    if found is None:
        ops = ", ".join(op.name for op in BINARY_OPS)
        types = ", ".join(t.name for t in (*DOMAIN_TYPES, *FALLBACK_DOMAIN_TYPES))
        missing = "operations" if not any(op in capabilities.operations for op in BINARY_OPS) else "operand_types"
        not_applicable(missing, f"the memory-domain models need one of {ops} (with the INT32 scalar of its activation) "
                                f"on one of {types}, and the driver declares none")
    return found
