"""Headers every client-API error carries, whatever the protocol's body shape."""

from __future__ import annotations


def error_headers(
    request_id: str | None, retry_after: float | None, *, anthropic: bool = False
) -> dict[str, str]:
    """``X-Request-ID`` (and Anthropic's ``request-id``) and a whole-second ``Retry-After`` when known."""
    headers: dict[str, str] = {}
    if request_id:
        headers["x-request-id"] = request_id
        if anthropic:
            headers["request-id"] = request_id
    if retry_after is not None:
        headers["retry-after"] = str(max(1, round(retry_after)))
    return headers
