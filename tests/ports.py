"""Free loopback ports for the servers the tests start (receivers, proxies, databases, gateways)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port nothing listens on now (the OS's choice), on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
