"""Egress proxy addresses (EGRESS-1): which forms are accepted, and how they are shown.

A proxy URL is ``http://``, ``https://``, ``socks5://`` or ``socks5h://`` with a host and a port, and
optionally ``user:password@``. It is a secret (the password): stored sealed, shown with the password
replaced by ``***``, never logged.
"""

from __future__ import annotations

import urllib.parse
from typing import Final

PROXY_SCHEMES: Final = frozenset({"http", "https", "socks5", "socks5h"})
MASK: Final = "***"


def checked_proxy_url(url: str) -> str:
    """``url`` when it is a usable proxy address; ``ValueError`` (without the URL) otherwise."""
    if len(url) > 2048:
        raise ValueError("a proxy URL is at most 2048 characters")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError("the proxy URL cannot be read") from None
    if parts.scheme not in PROXY_SCHEMES:
        raise ValueError("a proxy URL starts with http://, https://, socks5:// or socks5h://")
    if not parts.hostname or port is None:
        raise ValueError("a proxy URL names a host and a port")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("a proxy URL has no path, query or fragment")
    return url


def masked_proxy_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (the user name stays: it tells proxies apart)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:{MASK}@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
