"""Cross-site protection for the management API (SPEC §14): pure ASGI, before any route runs.

A mutation (POST, PUT, PATCH, DELETE under ``/api/``) is refused when

- it carries an ``Origin`` (or ``Sec-Fetch-Site: cross-site``) that is not this server's own origin
  or one of ``SUBLANE_ALLOWED_ORIGINS``; or
- it has a body, or a ``Content-Type``, that is not JSON: every cross-site HTML form sends one of
  the three form content types, so requiring JSON shuts forms out even without an Origin; or
- its declared body is larger than the management API ever needs.

Together with the ``SameSite=Lax`` session cookie this closes CSRF without tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from sublane_core import ERROR_CATALOGUE
from sublane_gateway.pipeline._networks import in_networks, networks_of

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_MANAGEMENT_BODY = 1 << 20  # 1 MiB: credential files are a few KiB
#: The one upload (BULK-2, an account bundle): multipart, and only with this server's own
#: ``Origin`` — a cross-site form cannot send that, so the form content type opens no CSRF door.
UPLOAD_PATHS = frozenset({"/api/accounts/import-bundle"})
MAX_UPLOAD_BODY = 17 << 20


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def normalized_origin(origin: str) -> str | None:
    """``scheme://host:port`` with the default port made explicit; ``None`` for no usable origin."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    port = port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname.lower()}:{port}"


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _is_multipart(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == "multipart/form-data"


class MutationGuard:
    """Refuses cross-origin and non-JSON mutations of ``/api/`` with the JSON error shape."""

    def __init__(
        self, app: ASGIApp, allowed_origins: Iterable[str] = (), trusted_proxies: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.allowed = {normalized_origin(origin) for origin in allowed_origins} - {None}
        self.proxies = networks_of(tuple(trusted_proxies))

    def _own_origin(self, scope: Scope) -> str | None:
        """This server's origin as the client sees it: scheme, host and port (OPS-6)."""
        scheme = str(scope.get("scheme", "http"))
        host = _header(scope, b"host") or ""
        client = scope.get("client")
        if client and in_networks(client[0], self.proxies):
            proto = (_header(scope, b"x-forwarded-proto") or "").split(",")[-1].strip().lower()
            forwarded_host = (_header(scope, b"x-forwarded-host") or "").split(",")[-1].strip()
            scheme = proto if proto in ("http", "https") else scheme
            host = forwarded_host or host
        scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
        return normalized_origin(f"{scheme}://{host}") if host else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in MUTATING_METHODS
            and scope["path"].startswith("/api/")
        ):
            refusal = self._refusal(scope)
            if refusal is not None:
                await self._refuse(send, refusal)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> str | None:
        origin = _header(scope, b"origin")
        if origin is not None:
            sent = normalized_origin(origin)
            if sent is None or (sent != self._own_origin(scope) and sent not in self.allowed):
                return "cross_origin"
        elif _header(scope, b"sec-fetch-site") == "cross-site":
            return "cross_origin"
        content_type = _header(scope, b"content-type")
        length = _header(scope, b"content-length")
        has_body = _header(scope, b"transfer-encoding") is not None or (length not in (None, "0"))
        upload = scope["path"] in UPLOAD_PATHS and origin is not None and _is_multipart(content_type or "")
        if (content_type is not None or has_body) and not _is_json(content_type or "") and not upload:
            return "unsupported_media_type"
        if length is not None:
            try:
                too_large = int(length) > (MAX_UPLOAD_BODY if upload else MAX_MANAGEMENT_BODY)
            except ValueError:
                return "invalid_request"
            if too_large:
                return "body_too_large"
        return None

    @staticmethod
    async def _refuse(send: Send, code: str) -> None:
        spec = ERROR_CATALOGUE[code]
        body = json.dumps({"error": {"code": code, "message": spec.message}}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": spec.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
