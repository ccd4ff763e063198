"""``POST /v1/messages`` and ``/v1/messages/count_tokens``: Anthropic Messages, as Claude Code speaks it."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from sublane_core import UpstreamOperation, WireProtocol
from sublane_gateway.routes._http import serve_http

router = APIRouter(tags=["client: Anthropic Messages"])


@router.post("/v1/messages", response_model=None)
async def create_message(request: Request) -> Response:
    """Messages, streamed (``stream: true``) or not; ``?beta=true`` is accepted as Claude Code sends it."""
    return await serve_http(
        request, WireProtocol.MESSAGES, record_protocol="messages", record_operation="messages"
    )


@router.post("/v1/messages/count_tokens", response_model=None)
async def count_tokens(request: Request) -> Response:
    """Token counting on an account of the key's group (the conversation's, when bound)."""
    return await serve_http(
        request,
        WireProtocol.MESSAGES,
        operation=UpstreamOperation.COUNT_TOKENS,
        record_protocol="messages",
        record_operation="count_tokens",
    )
