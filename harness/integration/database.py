"""Where failing examples are kept: a local directory, or Redis shared with a local directory.

Examples are kept per driver.  Hypothesis keys its database by test, and in its reuse
phase deletes a stored example that no longer fails; in a database shared by several
drivers (a nightly farm fuzzing many drivers, or seeded-bug drivers next to the real one)
replaying one driver would then delete what another driver's run found.  So every key is
prefixed with the driver's name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, MultiplexedDatabase

from harness.api.errors import UsageError
from harness.integration.inputs import directory_problem

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


def database_problem(location: str, writable: bool = True, option: str = "--harness-db") -> str | None:
    """Why ``location`` cannot be the example database (None when it can), named with ``option``:
    a directory it can write into, or make (hypothesis makes it at the first example it keeps, and
    would drop every example unsaid where it cannot); read only, any directory, or none yet; or a
    Redis URL (reached when opened).  Hypothesis writes its examples in files of its own there."""
    if location.startswith("redis://"):
        return None
    if "://" in location:
        return f"{option}={location}: not a directory or a redis:// URL (only Redis URLs are supported)"
    if not location:
        return f"{option}=: empty; give a directory or a redis://HOST:PORT/N URL"
    if writable:
        problem = directory_problem(location)
    else:
        problem = f"{location} is a file, not a directory" if os.path.exists(location) and not os.path.isdir(location) else None
    return f"{option}={location}: {problem} (give a directory or a redis://HOST:PORT/N URL)" if problem else None


def reach_redis(location: str, option: str = "--harness-db"):
    """A client of the Redis server at ``location``, which answered a ping; a usage error naming
    ``option`` when the redis package is missing or the server does not answer."""
    try:
        import redis
    except ImportError:
        raise UsageError(f"{option}={location}: the redis package is not installed "
                         f"(pip install 'driver-harness[redis]')") from None
    try:
        client = redis.Redis.from_url(location, socket_connect_timeout=5)
        client.ping()
    except (ValueError, redis.exceptions.RedisError) as error:
        raise UsageError(f"{option}={location}: cannot reach Redis: {error}") from None
    return client


def open_database(location: str) -> ExampleDatabase:
    """A directory database, or Redis multiplexed with the local directory (what one
    machine finds, all see; what Redis holds is also kept locally)."""
    if not location.startswith("redis://"):
        return DirectoryBasedExampleDatabase(location)
    client = reach_redis(location)
    from hypothesis.extra.redis import RedisExampleDatabase

    return MultiplexedDatabase(DirectoryBasedExampleDatabase(LOCAL_DIRECTORY), RedisExampleDatabase(client))
