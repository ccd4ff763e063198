"""Webhook URLs (ALERT-1): usable as given, never toward a link-local or unspecified address, and
shown only masked.

A URL is judged by the HTTP client that delivers it (httpx, through its public API): what httpx
cannot build a request for (an IDNA failure, a port that is not a number, a control character,
an unclosed ``[``) is refused when the webhook is registered, not discovered by the deliverer
later. What httpx builds but no connection can use is refused too: a port outside 1–65535, a host
name with characters no resolver takes. Link-local (169.254.0.0/16, fe80::/10) and unspecified
(0.0.0.0, ::) addresses are refused in every spelling the system resolver reads as one (an IPv6
literal mapping an IPv4 address, ``2852039166``, ``169.254.43518``, ``0``): a cloud's instance
metadata service lives at 169.254.169.254. The deliverer checks again what a host name resolves to
before each send (:func:`refused_resolution`).

A URL's user-info and its path (and query) are secrets — a Slack or Discord webhook's token is its
path — so answers and audit entries show :func:`masked_url`, and logs never hold the URL.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Final
from urllib.parse import urlsplit

import anyio

MASK: Final = "***"
_LABEL: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_LEGACY_IPV4: Final = re.compile(r"[0-9A-Fa-fXx.]+")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def refused(address: Address) -> bool:
    """Whether a webhook may not reach ``address``: link-local or unspecified (an IPv4 address
    mapped into IPv6 is judged as itself)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_link_local or address.is_unspecified


def literal_address(host: str) -> Address | None:
    """The address ``host`` names without a DNS lookup — an IP literal, or an IPv4 address in one
    of the older forms the system resolver still reads (``127.1``, ``0x7f.1``, ``2130706433``) —
    or ``None`` for a host name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _LEGACY_IPV4.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def url_problem(url: str) -> str | None:
    """Why the deliverer could not use ``url`` as given, or ``None`` when it can."""
    import httpx  # here, not at import: a default start judges no webhook URL (issue #49)

    try:
        # the request the deliverer sends, built by the same client library: every way httpx
        # refuses a URL (InvalidURL, idna's UnicodeError, …) counts, whatever its type
        request = httpx.Request("POST", url)
    except Exception:
        return "httpx cannot send to it (a bad host, port or character)"
    parsed = request.url
    if parsed.scheme not in ("http", "https"):
        return "a webhook URL is http:// or https://"
    if not parsed.host:
        return "it has no host"
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        return "its port is not between 1 and 65535"
    host = parsed.raw_host.decode("ascii")  # IDNA-encoded, as it is sent
    address = literal_address(host)
    if address is None:
        labels = host.removesuffix(".").split(".")
        if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
            return "its host is not a host name or an IP address"
    elif refused(address):
        return "link-local and unspecified addresses are refused"
    return None


async def refused_resolution(url: str) -> bool:
    """Whether the URL's host resolves to an address a webhook may not reach (checked before each
    send: a host name may point at 169.254.169.254). A name that does not resolve is left to the
    send, which fails on it."""
    import httpx  # here, not at import: a default start judges no webhook URL (issue #49)

    parsed = httpx.URL(url)
    host = parsed.raw_host.decode("ascii")
    if literal_address(host) is not None:
        return False  # judged when the URL was accepted, and before each send by url_problem
    try:
        found = await anyio.getaddrinfo(host, parsed.port or 443, type=socket.SOCK_STREAM)
    except OSError:
        return False
    for _family, _type, _proto, _name, sockaddr in found:
        try:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        except ValueError:
            continue
        if refused(address):
            return True
    return False


def masked_url(url: str) -> str:
    """``url`` as answers and audit entries show it: user-info, path, query and fragment as ``***``
    (``https://***@hooks.example/***``); the scheme, host and port stay, to tell webhooks apart."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:
        return MASK
    _user, at, host = netloc.rpartition("@")
    shown = f"{parts.scheme}://{MASK + '@' if at else ''}{host}"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return f"{shown}/{MASK}"
    return shown + parts.path
