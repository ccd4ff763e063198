"""An error answer in a client protocol's own shape, without a web framework.

Every client protocol renders SubLane's stable codes (SPEC §14) in the body its SDKs parse; the
status, ``X-Request-ID`` and a whole-second ``Retry-After`` are the same for all of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sublane_core import WireProtocol


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """A JSON error answer: status, body and headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def content(self) -> bytes:
        return json.dumps(self.body, separators=(",", ":"), ensure_ascii=False).encode()


def error_headers(request_id: str | None, retry_after: float | None) -> dict[str, str]:
    """``X-Request-ID`` and a whole-second ``Retry-After`` (at least 1) when known."""
    headers: dict[str, str] = {}
    if request_id:
        headers["x-request-id"] = request_id
    if retry_after is not None:
        headers["retry-after"] = str(max(1, round(retry_after)))
    return headers


#: ``(status, code, message, request_id, param) -> body`` of one protocol.
BodyRenderer = Callable[[int, str, str, "str | None", "str | None"], dict[str, Any]]
_RENDERERS: dict[WireProtocol, tuple[BodyRenderer, tuple[str, ...]]] = {}


def register_error_shape(
    protocol: WireProtocol, render: BodyRenderer, *, request_id_headers: tuple[str, ...] = ()
) -> None:
    """Say how ``protocol`` shapes an error body (and extra headers that repeat the request ID)."""
    _RENDERERS[protocol] = (render, request_id_headers)


def request_id_headers(protocol: WireProtocol, request_id: str) -> dict[str, str]:
    """The headers that carry the request ID on an answer of ``protocol``."""
    headers = {"x-request-id": request_id}
    for name in _RENDERERS[protocol][1]:
        headers[name] = request_id
    return headers


def render_error(
    protocol: WireProtocol,
    status: int,
    code: str,
    message: str,
    *,
    request_id: str | None = None,
    retry_after: float | None = None,
    param: str | None = None,
) -> ErrorAnswer:
    """The error answer of ``protocol`` for a SubLane (or relayed upstream) code."""
    render, id_headers = _RENDERERS[protocol]
    headers = error_headers(request_id, retry_after)
    if request_id:
        for name in id_headers:
            headers[name] = request_id
    return ErrorAnswer(status, render(status, code, message, request_id, param), headers)
