"""Which egress an account's upstream calls leave through (EGRESS-1).

Every upstream call is made on behalf of one account (or, for a sign-in, of the workspace), and the
proxy it must leave through belongs to that account. The gateway runs the account's work inside
:func:`use_egress` with the account's proxy URL (its own, else ``SUBLANE_EGRESS_PROXY``); the
transport reads :func:`current_egress` when it opens a connection — model requests, WebSockets and
metadata calls alike — so an adapter never handles proxies and a provider package never knows of
them. ``None`` means the process's environment decides (``HTTPS_PROXY``/``NO_PROXY``, else direct).

A context variable rather than a parameter: it follows the awaits of one request or one background
read and no further, and the adapters' calls (refresh, quota, model lists, sessions) keep their
signatures.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

_current: ContextVar[str | None] = ContextVar("sublane_egress", default=None)


@contextmanager
def use_egress(proxy_url: str | None) -> Iterator[None]:
    """Upstream calls inside the block leave through ``proxy_url`` (``None``: the environment's)."""
    token = _current.set(proxy_url)
    try:
        yield
    finally:
        _current.reset(token)


def current_egress() -> str | None:
    """The proxy the current upstream call must use, or ``None`` (the environment decides)."""
    return _current.get()


class EgressFailed(Exception):
    """The egress proxy could not be reached or refused the tunnel (EGRESS-2): nothing was sent."""


@dataclass(frozen=True, slots=True)
class SocksAddress:
    """A ``socks5://`` or ``socks5h://`` egress as python-socks takes it (``rdns``: the proxy
    resolves the upstream's name, ``socks5h``)."""

    host: str
    port: int
    username: str | None
    password: str | None
    rdns: bool

    @classmethod
    def of(cls, url: str) -> SocksAddress:
        parsed = urllib.parse.urlsplit(url)
        user = urllib.parse.unquote(parsed.username) if parsed.username is not None else None
        return cls(
            host=parsed.hostname or "",
            port=parsed.port or 1080,
            username=user,
            password=urllib.parse.unquote(parsed.password or "") if user is not None else None,
            rdns=parsed.scheme == "socks5h",
        )
