"""Failing examples are kept per driver, so drivers sharing one database do not erase each other's."""

from __future__ import annotations

from hypothesis.database import InMemoryExampleDatabase

from harness.integration.database import DriverExamples


def test_each_driver_sees_only_its_own_examples() -> None:
    shared = InMemoryExampleDatabase()
    vendor, mutant = DriverExamples(shared, "vendor-npu"), DriverExamples(shared, "mutant-offset-ignored")
    vendor.save(b"test-key", b"failing example")
    assert list(vendor.fetch(b"test-key")) == [b"failing example"]
    assert list(mutant.fetch(b"test-key")) == []
    # Hypothesis deletes a stored example that passes on replay; another driver's replay must not.
    mutant.delete(b"test-key", b"failing example")
    assert list(vendor.fetch(b"test-key")) == [b"failing example"]
    vendor.move(b"test-key", b"test-key.secondary", b"failing example")
    assert list(vendor.fetch(b"test-key")) == [] and list(vendor.fetch(b"test-key.secondary")) == [b"failing example"]
    assert list(DriverExamples(shared, "vendor-npu").fetch(b"test-key.secondary")) == [b"failing example"]
