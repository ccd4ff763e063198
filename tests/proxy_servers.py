"""Real egress proxies for the EGRESS tests, started on loopback in temporary folders: Debian's
``tinyproxy`` (HTTP, CONNECT) and ``microsocks`` (SOCKS5), each with or without a password.

Each proxy opens its upstream connections from an address of its own in 127.0.0.0/8 (tinyproxy's
``Bind``, microsocks' ``-b``), so the simulator's request log (``peer``) tells which calls came
through which proxy; each also logs the connections it made (``connections()``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ports import free_port

TINYPROXY = shutil.which("tinyproxy") or "/usr/bin/tinyproxy"
MICROSOCKS = shutil.which("microsocks") or "/usr/bin/microsocks"


def proxies_installed() -> bool:
    return Path(TINYPROXY).exists() and Path(MICROSOCKS).exists()


@dataclass
class ProxyServer:
    """One running proxy: its URL (with the password when it has one) and its outgoing address."""

    kind: str  # "http" | "socks5"
    port: int
    outgoing: str
    log: Path
    user: str | None = None
    password: str | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def url(self, scheme: str | None = None, password: str | None = None) -> str:
        secret = password if password is not None else self.password
        auth = f"{self.user}:{secret}@" if self.user else ""
        return f"{scheme or self.kind}://{auth}127.0.0.1:{self.port}"

    def connections(self) -> list[str]:
        """What the proxy logged about the connections it made (one line each)."""
        if not self.log.exists():
            return []
        lines = self.log.read_text(errors="replace").splitlines()
        marker = "connected to" if self.kind == "socks5" else "Established connection"
        return [line for line in lines if marker in line]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert process.poll() is None, "the proxy exited"
            assert time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.05)


def start_http_proxy(
    folder: Path, outgoing: str, user: str | None = None, password: str | None = None
) -> ProxyServer:
    """tinyproxy on a free port, its upstream connections from ``outgoing``."""
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "tinyproxy.log"
    config = folder / "tinyproxy.conf"
    lines = [
        f"Port {port}", "Listen 127.0.0.1", f"Bind {outgoing}", "Timeout 60", "MaxClients 200",
        "LogLevel Connect", f"LogFile \"{log}\"", "DisableViaHeader Yes",
    ]  # fmt: skip
    if user is not None:
        lines.append(f"BasicAuth {user} {password}")
    config.write_text("\n".join(lines) + "\n")
    process = subprocess.Popen(
        [TINYPROXY, "-d", "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    server = ProxyServer("http", port, outgoing, log, user, password, process)
    _wait_listening(port, process)
    return server


def start_socks_proxy(
    folder: Path, outgoing: str, user: str | None = None, password: str | None = None, port: int | None = None
) -> ProxyServer:
    """microsocks on ``port`` (else a free one), its upstream connections from ``outgoing``."""
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "microsocks.log"
    command = [MICROSOCKS, "-i", "127.0.0.1", "-p", str(port), "-b", outgoing]
    if user is not None:
        command += ["-u", user, "-P", password or ""]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    server = ProxyServer("socks5", port, outgoing, log, user, password, process)
    _wait_listening(port, process)
    return server
