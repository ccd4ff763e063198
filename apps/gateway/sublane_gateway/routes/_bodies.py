"""Reading client request bodies: size-bounded JSON objects, with errors in the client's protocol."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import ClientDisconnect, Request

from sublane_core import SubLaneError

MAX_BODY_BYTES = 64 * 1024 * 1024  # coding agents send long histories and images


async def read_json_object(request: Request) -> tuple[dict[str, Any], bytes]:
    """The body as a JSON object and its raw bytes; 413/400/415 otherwise."""
    content_type = request.headers.get("content-type", "application/json").split(";", 1)[0].strip().lower()
    if content_type not in ("application/json", "") and not content_type.endswith("+json"):
        raise SubLaneError("unsupported_media_type")
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise SubLaneError("body_too_large")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise SubLaneError("body_too_large")
            chunks.append(chunk)
    except ClientDisconnect:  # the client left before sending its body: nothing to answer
        raise SubLaneError("invalid_request", "The client closed the connection.") from None
    raw = b"".join(chunks)
    try:
        body = json.loads(raw)
    except ValueError:
        raise SubLaneError("invalid_json") from None
    if not isinstance(body, dict):
        raise SubLaneError("invalid_request", "The body must be a JSON object.")
    return body, raw
