"""Process isolation for the driver under test (SPEC §7): the only room that knows processes exist."""

from harness.service.proxies import BufferProxy, DeviceProxy, PreparedModelProxy
from harness.service.supervisor import DEFAULT_CALL_DEADLINE_S, AttachedClient, DriverService

__all__ = ["DEFAULT_CALL_DEADLINE_S", "AttachedClient", "BufferProxy", "DeviceProxy", "DriverService", "PreparedModelProxy"]
