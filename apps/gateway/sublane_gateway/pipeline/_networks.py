"""Client networks: parsing CIDR lists once and asking whether an address is inside one.

Shared by OPS-6 (which peers are trusted proxies) and AUTH-3 (where a key may be used from).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection
from functools import lru_cache

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=256)
def networks_of(entries: tuple[str, ...]) -> tuple[Network, ...]:
    """The networks of ``entries`` (addresses or CIDR texts, v4 or v6); unreadable ones are left out."""
    networks: list[Network] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            continue
    return tuple(networks)


def in_networks(address: str | None, networks: Collection[Network]) -> bool:
    """Whether ``address`` is in one of ``networks`` (an IPv4-mapped IPv6 address counts as its IPv4).

    With no networks (no trusted proxies, the default) the address is not parsed (issue #49: two
    ``ip_address`` parses were most of a call's cost for OPS-6)."""
    if not address or not networks:
        return False
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in networks)
