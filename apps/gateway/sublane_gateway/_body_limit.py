"""OPS-1: request bodies outside the model routes are bounded, with or without ``Content-Length``.

The model routes (``/v1/…``, ``/v1beta/…``) read their bodies as streams and count as they read
(``routes/_bodies.py``, ``SUBLANE_MAX_BODY_MB``). Everything else — the management API, sign-in and
set-up included — is small: this pure ASGI middleware reads such a body before the app does, up to
``SUBLANE_MANAGEMENT_BODY_KB``, answers 413 ``body_too_large`` past it, and replays what it read.
The one upload, an account bundle (BULK-3), may be as large as export makes one; the mutation guard
lets it through only multipart and with this server's own ``Origin``.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sublane_core import ERROR_CATALOGUE
from sublane_gateway._mutation_guard import MAX_UPLOAD_BODY, UPLOAD_PATHS

MODEL_PREFIXES = ("/v1/", "/v1beta/")


class BodyLimit:
    """Bounds non-model request bodies to ``limit`` bytes, chunked ones included."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(MODEL_PREFIXES) or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        limit = max(self.limit, MAX_UPLOAD_BODY) if scope["path"] in UPLOAD_PATHS else self.limit
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break  # the client left: let the app see the disconnect
            size += len(message.get("body", b""))
            if size > limit:
                await _refuse(send)
                return
            if not message.get("more_body", False):
                break
        replay = iter(messages)

        async def replayed() -> Message:
            for message in replay:
                return message
            return await receive()

        await self.app(scope, replayed, send)


def _has_body(scope: Scope) -> bool:
    for key, value in scope.get("headers", ()):
        if key == b"transfer-encoding" or (key == b"content-length" and value not in (b"0", b"")):
            return True
    return False


async def _refuse(send: Send) -> None:
    spec = ERROR_CATALOGUE["body_too_large"]
    body = json.dumps({"error": {"code": "body_too_large", "message": spec.message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": spec.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
