"""Codex Responses over WebSocket (PROTOCOLS §1.6): one upstream socket per client socket and account.

The socket is kept for the conversation's next turn on the same account, because
``previous_response_id`` only resolves on the socket that produced it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sublane_provider_codex._failures import classify_failure
from sublane_provider_codex._request import responses_body, upstream_headers
from sublane_providers import SessionRefused, UpstreamSession
from sublane_providers.kit import WebSocket, WebSocketRefused, connect_websocket

OPENAI_BETA = "responses_websockets=2026-02-06"
MAX_FRAME_BYTES = 64 * 1024 * 1024


class CodexSession(UpstreamSession):
    """An open upstream socket of one account."""

    __slots__ = ("_socket",)

    def __init__(self, socket: WebSocket) -> None:
        self._socket = socket

    async def send_turn(self, body: Mapping[str, Any], *, model: str) -> None:
        payload = responses_body(body, model=model, websocket=True)
        payload["type"] = "response.create"
        await self._socket.send(json.dumps(payload, separators=(",", ":")))

    async def recv(self) -> str:
        return await self._socket.recv()

    async def close(self) -> None:
        await self._socket.close()


async def open_codex_session(
    url: str,
    *,
    access_token: str,
    account_id: str | None,
    client_headers: Mapping[str, str],
    open_timeout: float,
    now: float,
) -> CodexSession:
    """Open the socket; a refused handshake raises :class:`SessionRefused` with its classification."""
    headers = upstream_headers(client_headers, access_token=access_token, account_id=account_id, bound=True)
    headers.setdefault("openai-beta", client_headers.get("openai-beta", OPENAI_BETA))
    try:
        socket = await connect_websocket(
            url, headers, open_timeout=open_timeout, max_frame_bytes=MAX_FRAME_BYTES
        )
    except WebSocketRefused as refused:
        raise SessionRefused(classify_failure(refused.status, refused.headers, refused.body, now)) from None
    return CodexSession(socket)
