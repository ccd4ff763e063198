"""A real Redis server for tests: Debian's ``redis-server`` on a free loopback port, in a temporary
folder, without persistence. ``.ci/run`` installs the ``redis-server`` package; without it the
tests that need one are skipped."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ports import free_port

REDIS_SERVER = shutil.which("redis-server")


class RedisServer:
    """One server process, started and stopped by the tests (also stopped and started again, for
    the outage tests: the same port and folder)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sublane-redis-"))
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        assert REDIS_SERVER is not None
        command = [
            REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
            "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as probe:
                    probe.sendall(b"PING\r\n")
                    if probe.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            assert self.process.poll() is None, "redis-server exited"
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def running_redis() -> Iterator[RedisServer]:
    """A Redis server for the ``with`` block."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.remove()
