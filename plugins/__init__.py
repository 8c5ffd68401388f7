"""Driver plugins that ship with the harness (found by `harness.drivers.registry`)."""
