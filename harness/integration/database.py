"""Where failing examples are kept: a local directory, or Redis shared with a local directory.

Examples are kept per driver.  Hypothesis keys its database by test, and in its reuse
phase deletes a stored example that no longer fails; in a database shared by several
drivers (a nightly farm fuzzing many drivers, or seeded-bug drivers next to the real one)
replaying one driver would then delete what another driver's run found.  So every key is
prefixed with the driver's name.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, MultiplexedDatabase

from harness.api.errors import UsageError

LOCAL_DIRECTORY = ".hypothesis/examples"


class DriverExamples(ExampleDatabase):
    """``database`` seen through the keys of one driver."""

    def __init__(self, database: ExampleDatabase, driver: str) -> None:
        super().__init__()
        self.database = database
        self.driver = driver
        self._prefix = b"driver-harness/" + driver.encode("utf-8") + b"/"

    def __repr__(self) -> str:
        return f"DriverExamples({self.database!r}, driver={self.driver!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DriverExamples) and (other.database, other.driver) == (self.database, self.driver)

    def __hash__(self) -> int:
        return hash((type(self), self.driver))

    def save(self, key: bytes, value: bytes) -> None:
        self.database.save(self._prefix + key, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.database.fetch(self._prefix + key)

    def delete(self, key: bytes, value: bytes) -> None:
        self.database.delete(self._prefix + key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.database.move(self._prefix + src, self._prefix + dest, value)


def open_database(location: str) -> ExampleDatabase:
    """A directory database, or Redis multiplexed with the local directory (what one
    machine finds, all see; what Redis holds is also kept locally)."""
    if not location.startswith("redis://"):
        return DirectoryBasedExampleDatabase(location)
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        raise UsageError(f"--harness-db={location}: the redis package is not installed "
                         f"(pip install 'driver-harness[redis]')") from None
    try:
        client = redis.Redis.from_url(location, socket_connect_timeout=5)
        client.ping()
    except (ValueError, redis.exceptions.RedisError) as error:
        raise UsageError(f"--harness-db={location}: cannot reach Redis: {error}") from None
    return MultiplexedDatabase(DirectoryBasedExampleDatabase(LOCAL_DIRECTORY), RedisExampleDatabase(client))
