"""A real PostgreSQL server for tests: Debian's binaries, a cluster in a temporary folder, loopback.

``PostgresServer.start()`` runs ``initdb`` and ``pg_ctl`` (as the ``postgres`` system user when the
tests run as root, which PostgreSQL refuses to run as), listening on 127.0.0.1 on a free port with
trust authentication for the test role; ``new_database()`` gives each test an empty database of
its own. ``.ci/run`` installs the ``postgresql`` package; without it the tests that need a server
are skipped.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ports import free_port as _free_port

ROLE = "sublane"
START_TIMEOUT_S = 30.0
_numbers = itertools.count(1)


def postgres_bin() -> Path | None:
    """The folder of ``initdb``/``pg_ctl``: Debian keeps them under /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(versions[-1]).parent if versions else None


class PostgresServer:
    """One cluster, started and stopped by the tests."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="sublane-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as_postgres = os.geteuid() == 0
        self._template: str | None = None

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    def start(self) -> None:
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self.root.chmod(0o700)
        done = self._run(
            "initdb", "-D", str(self.data), "-U", ROLE, "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr[-2000:]}")
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"
        started = self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start"
        )
        if started.returncode != 0:
            log = (self.root / "log").read_text(errors="replace") if (self.root / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {started.stderr[-1000:]} {log[-2000:]}")
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 1):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("PostgreSQL did not start in time")
            time.sleep(0.05)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{database}"

    def new_database(self, template: str | None = None) -> str:
        """An empty database of its own (or a copy of ``template``'s); its URL."""
        import psycopg

        name = f"test_{os.getpid()}_{next(_numbers)}"
        copy = f' TEMPLATE "{template}"' if template is not None else ""
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"{copy}')
        return self.url(name)

    def migrated_database(self) -> str:
        """A database at the schema's head, copied from one migrated once (migrating takes seconds)."""
        if self._template is None:
            from sublane_core import create_db_engine, upgrade_database

            url = self.new_database()
            engine = create_db_engine(url)
            try:
                upgrade_database(engine)
            finally:
                engine.dispose()
            self._template = url.rsplit("/", 1)[1]
        return self.new_database(self._template)


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """A started server for the block (the tests that need one skip when it is not installed)."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (.ci/run installs Debian's postgresql package)")
    server = PostgresServer(bin_dir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
