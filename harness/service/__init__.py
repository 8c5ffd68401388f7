"""Process isolation for the driver under test (SPEC §7): the only room that knows processes exist."""

from harness.service.proxies import BufferProxy, DeviceProxy, PreparedModelProxy
from harness.service.supervisor import AttachedClient, DriverService

__all__ = ["AttachedClient", "BufferProxy", "DeviceProxy", "DriverService", "PreparedModelProxy"]
