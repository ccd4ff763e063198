"""Issue #49: a default ``sublane serve`` (embedded SQLite, no Redis, no OIDC, no tracing) loads
nothing that only another feature uses, stays small once started, and lets its event loop take the
GIL back quickly.

One real ``sublane serve`` process on an empty data folder (so start-up also creates the schema);
``sitecustomize`` (on ``PYTHONPATH``, read by Python at start) writes a process's ``sys.modules``
and switch interval when asked by ``SIGUSR1`` (the server) or when it exits (the migration's
child), and ``/proc`` gives the server's resident memory while it serves.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from ports import free_port

SUBLANE = shutil.which("sublane", path=str(Path(sys.executable).parent)) or "sublane"

# What only another feature needs: schema upgrades (a child process runs them), OIDC sign-in,
# TOTP QR codes, SOCKS egress and upstream WebSockets, PostgreSQL, Redis coordination (SCALE-2),
# OTLP export (OPS-12), the built-in price data (the first priced record reads it, COST-2), the AES
# library (nothing sealed or opened yet: OPS-3's key check runs in a forked child).
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
    "python_socks",
    "httpx_socks",
    "websockets.asyncio.client",
    "opentelemetry.exporter",
    "grpc",
    "sublane_gateway.pipeline._coordination",
    "sublane_scheduler._shared",
    "genai_prices",  # the price data: read by the first priced call when no metered account exists
    "prometheus_client",  # the text of /metrics: imported by its first scrape
    "sublane_gateway._metrics_exposition",
    "cryptography",  # AES for sealed values: the first one sealed or opened (OPS-3's check: a child)
    # The metadata calls' HTTP client (token refresh, quota reads, model lists, logins, webhooks,
    # OIDC, the account check): imported by the first of them. httpx imports its command line's
    # rich and pygments when they are installed (4.5 MB resident with them; click is uvicorn's).
    "httpx",
    "httpcore",
    "h11",
    "certifi",
    "rich",
    "pygments",
)

# Idle resident memory of a started default gateway. Measured 106.2-106.4 MB after issue #49's
# third pass (131.6 MB before the first); 89.1-89.2 MB once the AES library waited for the first
# sealed value and httpx (which brought this repository's rich and pygments in) for the first
# metadata call (BENCHMARKS.md); the bound leaves room for another machine, under the goal's 100.
IDLE_RSS_MAX_MB = 95

_DUMP_MODULES = """
import atexit, gc, os, signal, sys, threading

def _ca_certificates():
    ssl = sys.modules.get("ssl")
    if ssl is None:
        return 0
    gc.unfreeze()  # start-up's objects are frozen, out of get_objects' sight (the test ends it next)
    contexts = [o for o in gc.get_objects() if isinstance(o, ssl.SSLContext)]
    return sum(context.cert_store_stats()["x509_ca"] for context in contexts)

def _write_modules(*_):
    path = os.path.join(os.environ["LEAN_START_MODULES"], f"{os.getpid()}.txt")
    with open(path + ".part", "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
        out.write(f"\\nswitch-interval={sys.getswitchinterval()}")
        out.write(f"\\nca-certificates={_ca_certificates()}")
        for thread in threading.enumerate():  # each thread's own nice (Linux keeps one per thread)
            nice = os.getpriority(os.PRIO_PROCESS, thread.native_id)
            out.write(f"\\nnice:{thread.name.replace(' ', '-')}={nice}")
    os.replace(path + ".part", path)

atexit.register(_write_modules)  # the migration's child exits normally
signal.signal(signal.SIGUSR1, _write_modules)  # the server is asked while it serves
"""


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


@dataclass(frozen=True)
class Started:
    """What a default ``sublane serve`` showed once started: its modules, its idle RSS, the
    modules of the schema's child process, its log."""

    loaded: frozenset[str]
    rss_mb: float
    child_loaded: tuple[frozenset[str], ...]
    log: str


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Started:
    tmp_path = tmp_path_factory.mktemp("lean-start")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_DUMP_MODULES)
    modules_dir = tmp_path / "modules"
    modules_dir.mkdir()
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SUBLANE_", "OTEL_"))}
    env |= {
        "SUBLANE_DATA_DIR": str(tmp_path / "data"),
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
    served = modules_dir / f"{process.pid}.txt"
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
        # A client's call without a key is answered without any upstream or metadata call.
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10).status_code == 401
        process.send_signal(signal.SIGUSR1)
        while not served.exists():
            assert time.monotonic() < deadline + 30, log.read_text()
            time.sleep(0.05)
    finally:
        process.terminate()
        process.wait(timeout=30)
    children = tuple(
        frozenset(path.read_text().split()) for path in modules_dir.glob("*.txt") if path != served
    )
    return Started(frozenset(served.read_text().split()), rss, children, log.read_text())


def test_default_serve_loads_no_module_of_a_feature_it_does_not_use(started: Started) -> None:
    assert "sublane_gateway._app" in started.loaded  # the hook saw the serving process
    unexpected = sorted(
        name
        for name in started.loaded
        if any(name == bad or name.startswith(bad + ".") for bad in NOT_LOADED)
    )
    assert unexpected == []


def test_default_serve_upgrades_an_empty_schema_in_a_child_process(started: Started) -> None:
    assert "upgraded from empty" in started.log
    assert len(started.child_loaded) == 1
    (child,) = started.child_loaded
    assert "alembic" in child and "sublane_gateway._app" not in child  # the core and Alembic only


def test_default_serve_idle_rss_stays_under_its_bound(started: Started) -> None:
    assert started.rss_mb <= IDLE_RSS_MAX_MB, f"idle RSS {started.rss_mb:.1f} MB"


def test_default_serve_reads_no_ca_bundle_until_a_tls_call_needs_one(started: Started) -> None:
    """The upstream TLS context reads the system's CA certificates at its first handshake, the alert
    deliverer makes its client (certifi's bundle) with its first delivery: an idle default start
    holds no CA certificate (each bundle is 1.2 MB resident, issue #49)."""
    assert "ca-certificates=0" in started.loaded


def test_serve_takes_the_gil_back_for_its_loop_within_half_a_millisecond(started: Started) -> None:
    """The loop waits for another thread's stretch of Python (the history writer's batch) at most
    half a millisecond, not Python's default 5 ms (the p99 at concurrency 1, issue #49)."""
    assert "switch-interval=0.0005" in started.loaded


def test_serve_runs_its_background_threads_below_its_event_loop(started: Started) -> None:
    """Where the loop and the history writer share a core, the writer waking for its batch must not
    take the core from a call in progress (the p99 at concurrency 1, issue #49): it runs ten
    ``nice`` steps below the loop's thread."""
    threads = [token.removeprefix("nice:") for token in started.loaded if token.startswith("nice:")]
    nice = dict(token.split("=") for token in threads)
    loop = int(nice["MainThread"])
    assert int(nice["sublane-history-writer"]) == min(19, loop + 10)
