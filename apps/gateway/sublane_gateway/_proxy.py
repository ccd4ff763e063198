"""OPS-6: who and where a request came from, believing ``X-Forwarded-*`` only from trusted proxies.

``SUBLANE_TRUSTED_PROXIES`` lists the addresses (or CIDR networks) of the TLS proxies in front of
SubLane. From them, ``X-Forwarded-For`` gives the client address (the nearest address that is not
a trusted proxy), ``X-Forwarded-Proto`` the scheme (``https`` makes cookies ``Secure``) and
``X-Forwarded-Host`` the host the client addressed. From anyone else these headers are ignored.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection

from sublane_gateway.pipeline._networks import Network, in_networks, networks_of


def _settings_proxies(connection: HTTPConnection) -> tuple[Network, ...]:
    try:  # by key: an attribute of Starlette's ``State`` makes and drops an AttributeError (issue #49)
        gateway = connection.app.state["gateway"]
    except KeyError:  # an app without SubLane's state (a test's)
        return ()
    trusted = getattr(getattr(gateway, "settings", None), "trusted_proxies", None) or ()
    return networks_of(tuple(trusted))


def from_trusted_proxy(connection: HTTPConnection) -> bool:
    """Whether the peer is a trusted proxy (its ``X-Forwarded-*`` headers are believed)."""
    client = connection.client  # a property that builds a new named tuple each time: read once
    peer = client.host if client else None
    return in_networks(peer, _settings_proxies(connection))


def _last(connection: HTTPConnection, name: str) -> str | None:
    values = connection.headers.getlist(name)
    if not values:
        return None
    return values[-1].split(",")[-1].strip().lower() or None


def client_address(connection: HTTPConnection) -> str | None:
    """The client's address: the peer, or behind trusted proxies the nearest untrusted hop."""
    client = connection.client  # a property that builds a new named tuple each time: read once
    peer = client.host if client else None
    networks = _settings_proxies(connection)
    if not in_networks(peer, networks):
        return peer
    hops = [
        hop.strip() for value in connection.headers.getlist("x-forwarded-for") for hop in value.split(",")
    ]
    for hop in reversed(hops):
        if hop and not in_networks(hop, networks):
            return hop
    return peer


def external_scheme(connection: HTTPConnection) -> str:
    """``https`` or ``http``: as the client sees SubLane."""
    if from_trusted_proxy(connection):
        proto = _last(connection, "x-forwarded-proto")
        if proto in ("http", "https"):
            return proto
    return connection.url.scheme


def external_host(connection: HTTPConnection) -> str:
    """``host[:port]`` as the client addressed it."""
    if from_trusted_proxy(connection):
        host = _last(connection, "x-forwarded-host")
        if host:
            return host
    return (connection.headers.get("host") or "").lower()
