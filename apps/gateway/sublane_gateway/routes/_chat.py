"""``POST /v1/chat/completions``: OpenAI Chat Completions (translated for upstreams of other protocols)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from sublane_core import WireProtocol
from sublane_gateway.routes._http import serve_http

router = APIRouter(tags=["client: OpenAI Chat Completions"])


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(request: Request) -> Response:
    """Chat Completions, streamed (``stream: true``) or not, with tools and usage."""
    return await serve_http(
        request, WireProtocol.CHAT_COMPLETIONS, record_protocol="chat_completions", record_operation="chat"
    )
