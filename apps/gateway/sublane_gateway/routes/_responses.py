"""``POST /v1/responses`` (JSON and SSE) and ``POST /v1/responses/compact``: OpenAI Responses."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from sublane_core import UpstreamOperation, WireProtocol
from sublane_gateway.routes._http import serve_http

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_RESPONSES = WireProtocol.RESPONSES

router = APIRouter(tags=["client: OpenAI Responses"])


@router.post("/v1/responses", response_model=None)
async def create_response(request: Request) -> Response:
    """OpenAI Responses as the Codex CLI speaks it: SSE when ``stream`` is true, else one JSON object."""
    return await serve_http(request, _RESPONSES, record_protocol="responses", record_operation="responses")


@router.post("/v1/responses/compact", response_model=None)
async def compact_response(request: Request) -> Response:
    """Remote compaction: plain JSON in, plain JSON out."""
    return await serve_http(
        request,
        _RESPONSES,
        operation=UpstreamOperation.COMPACT,
        record_protocol="responses",
        record_operation="compact",
    )
