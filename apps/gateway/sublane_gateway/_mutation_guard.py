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

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_MANAGEMENT_BODY = 1 << 20  # 1 MiB: credential files are a few KiB


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class MutationGuard:
    """Refuses cross-origin and non-JSON mutations of ``/api/`` with the JSON error shape."""

    def __init__(self, app: ASGIApp, allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed = {self._netloc(origin) for origin in allowed_origins} - {""}

    @staticmethod
    def _netloc(origin: str) -> str:
        return urlsplit(origin.strip()).netloc.lower()

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
            host = (_header(scope, b"host") or "").lower()
            netloc = self._netloc(origin)
            if origin == "null" or (netloc != host and netloc not in self.allowed):
                return "cross_origin"
        elif _header(scope, b"sec-fetch-site") == "cross-site":
            return "cross_origin"
        content_type = _header(scope, b"content-type")
        length = _header(scope, b"content-length")
        has_body = _header(scope, b"transfer-encoding") is not None or (length not in (None, "0"))
        if (content_type is not None or has_body) and not _is_json(content_type or ""):
            return "unsupported_media_type"
        if length is not None:
            try:
                too_large = int(length) > MAX_MANAGEMENT_BODY
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
