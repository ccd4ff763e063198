"""Issue #49: a default ``sublane serve`` (embedded SQLite, no Redis, no OIDC, no tracing) loads
nothing that only another feature uses, and stays small once started.

A real ``sublane serve`` process on an empty data folder (so start-up also creates the schema);
``sitecustomize`` (on ``PYTHONPATH``, read by Python at start) writes a process's ``sys.modules``
when asked by ``SIGUSR1`` (the server) or when it exits (the migration's child), and ``/proc`` gives its resident memory while it serves.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from ports import free_port

SUBLANE = shutil.which("sublane", path=str(Path(sys.executable).parent)) or "sublane"

# What only another feature needs: schema upgrades (a child process runs them), OIDC sign-in,
# TOTP QR codes, PostgreSQL, Redis coordination (SCALE-2), OTLP export (OPS-12).
NOT_LOADED = (
    "alembic",
    "mako",
    "authlib",
    "joserfc",
    "segno",
    "redis",
    "psycopg",
    "asyncpg",
    "sqlalchemy.dialects.postgresql",
    "opentelemetry.sdk",
    "opentelemetry.exporter",
    "grpc",
    "sublane_gateway.pipeline._coordination",
    "sublane_scheduler._shared",
)

# Idle resident memory of a started default gateway, with this repository's development
# environment installed (its tools add modules a deployment lacks: rich, pygments). Measured
# 117–118 MB after issue #49's changes (132 MB before); the bound leaves room for the machine.
IDLE_RSS_MAX_MB = 125

_DUMP_MODULES = """
import atexit, os, signal, sys

def _write_modules(*_):
    path = os.path.join(os.environ["LEAN_START_MODULES"], f"{os.getpid()}.txt")
    with open(path + ".part", "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    os.replace(path + ".part", path)

atexit.register(_write_modules)  # the migration's child exits normally
signal.signal(signal.SIGUSR1, _write_modules)  # the server is asked while it serves
"""


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


def test_default_serve_loads_no_module_of_a_feature_it_does_not_use(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_DUMP_MODULES)
    modules_dir = tmp_path / "modules"
    modules_dir.mkdir()
    data_dir = tmp_path / "data"
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SUBLANE_", "OTEL_"))}
    env |= {
        "SUBLANE_DATA_DIR": str(data_dir),
        "SUBLANE_ADMIN_USERNAME": "admin",
        "SUBLANE_ADMIN_PASSWORD": "lean-start-password",
        "PYTHONPATH": str(hooks),
        "LEAN_START_MODULES": str(modules_dir),
    }
    log = tmp_path / "serve.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [SUBLANE, "serve", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        time.sleep(1.0)  # start-up's last steps (the freeze) are done
        rss = _rss_mb(process.pid)
        process.send_signal(signal.SIGUSR1)
        served = modules_dir / f"{process.pid}.txt"
        while not served.exists():
            assert time.monotonic() < deadline + 30, log.read_text()
            time.sleep(0.05)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "upgraded from empty" in log.read_text()  # the child made the schema
    loaded = set(served.read_text().split())
    assert "sublane_gateway._app" in loaded  # the hook saw the serving process
    child = [path for path in modules_dir.iterdir() if path.stem != str(process.pid)]
    assert len(child) == 1 and "alembic" in child[0].read_text().split()  # it migrated
    unexpected = sorted(
        name for name in loaded if any(name == bad or name.startswith(bad + ".") for bad in NOT_LOADED)
    )
    assert unexpected == []
    assert rss <= IDLE_RSS_MAX_MB, f"idle RSS {rss:.1f} MB"
