"""What the pipeline answers, without a web framework: one JSON body, or a stream of bytes.

Routes turn a reply into their framework's response; tests read it directly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sublane_core import SubLaneError, WireProtocol, immutable, json_dumps
from sublane_protocols import render_error

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


@immutable
class JsonReply:
    """A whole JSON answer (bytes as they will be sent)."""

    status: int
    content: bytes
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.content)


@dataclass(frozen=True, slots=True)
class StreamReply:
    """An event stream; iterating it relays the upstream (and finishes the call at its end)."""

    chunks: AsyncIterator[bytes]
    headers: dict[str, str] = field(default_factory=dict)
    media_type: str = "text/event-stream"


Reply = JsonReply | StreamReply


def json_reply(
    payload: Mapping[str, Any], *, status: int = 200, headers: Mapping[str, str] | None = None
) -> JsonReply:
    content = json_dumps(payload, allow_nan=False)
    return JsonReply(status, content, dict(headers or {}))


def error_reply(
    protocol: WireProtocol,
    status: int,
    code: str,
    message: str,
    *,
    request_id: str | None = None,
    retry_after: float | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JsonReply:
    """An error in ``protocol``'s shape, with ``headers`` besides its own (e.g. ``X-Token-Budget-Id``)."""
    answer = render_error(
        protocol, status, code, message, request_id=request_id, retry_after=retry_after, param=param
    )
    return JsonReply(answer.status, answer.content(), {**(headers or {}), **answer.headers})


def sublane_error_reply(
    protocol: WireProtocol, error: SubLaneError, request_id: str | None = None
) -> JsonReply:
    return error_reply(
        protocol,
        error.status,
        error.code,
        error.message,
        request_id=request_id,
        retry_after=error.retry_after,
        headers=error.headers,
    )
