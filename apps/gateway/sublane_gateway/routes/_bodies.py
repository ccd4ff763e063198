"""Reading client request bodies: size-bounded JSON objects, with errors in the client's protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from sublane_core import NotStrictJson, SubLaneError, json_loads_strict, json_problem

MAX_BODY_BYTES = 32 * 1024 * 1024  # OPS-1 default (SUBLANE_MAX_BODY_MB); long histories and images


def body_limit(request: Request) -> int:
    """The largest model-route body, in bytes (SUBLANE_MAX_BODY_MB)."""
    try:  # by key: an attribute of Starlette's ``State`` costs an exception (``client_runtime``)
        settings = request.app.state["gateway"].settings
    except KeyError:
        return MAX_BODY_BYTES
    return int(settings.max_body_mb) * 1024 * 1024


async def read_json_object(
    request: Request, headers: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], bytes]:
    """The body as a JSON object and its raw bytes; 413/400/415 otherwise.

    ``headers``: the request's, by lower-case name, when the caller has them already.
    """
    if headers is None:
        headers = request.headers
    content_type = headers.get("content-type", "application/json").split(";", 1)[0].strip().lower()
    if content_type not in ("application/json", "") and not content_type.endswith("+json"):
        raise SubLaneError("unsupported_media_type")
    encoding = headers.get("content-encoding")
    if encoding is not None and encoding.strip().lower() not in ("", "identity"):
        raise SubLaneError(
            "unsupported_media_type",
            f"Content-Encoding {encoding.strip()!r} is not accepted; send the body as is.",
        )
    limit = body_limit(request)
    length = headers.get("content-length")
    if length is not None and length.isascii() and length.isdigit() and int(length) > limit:
        raise SubLaneError("body_too_large")
    chunks: list[bytes] = []
    size = 0
    receive = request.receive
    while True:  # the ASGI messages, as the spec hands them (no async generator per request, #19)
        message = await receive()
        kind = message["type"]
        if kind == "http.request":
            chunk = message.get("body", b"")
            if chunk:  # chunked bodies are counted too (OPS-1)
                size += len(chunk)
                if size > limit:
                    raise SubLaneError("body_too_large")
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        elif kind == "http.disconnect":  # the client left before sending its body: nothing to answer
            raise SubLaneError("invalid_request", "The client closed the connection.")
    raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return parse_json_object(raw), raw  # the caller keeps ``raw``: nothing reads the body again


def parse_json_object(raw: bytes | str) -> dict[str, Any]:
    """``raw`` as a JSON object that can be served: 400 for bad, too deep or non-Unicode JSON, and
    for what RFC 8259 does not allow (text that is not UTF-8, ``NaN``, infinities) (OPS-1)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    try:
        body = json_loads_strict(data)
    except NotStrictJson as error:
        raise SubLaneError("invalid_json", str(error)) from None
    except (ValueError, RecursionError):  # RecursionError: nested far beyond any real request
        raise SubLaneError("invalid_json") from None
    if not isinstance(body, dict):
        raise SubLaneError("invalid_request", "The body must be a JSON object.")
    # Two byte scans (C speed) keep the walk off the hot path: a lone surrogate can only arrive as
    # an escape (encoded surrogate bytes are not UTF-8, refused above), and nesting deeper than the
    # limit needs at least that many brackets.
    surrogates = data.find(b"\\ud") != -1 or data.find(b"\\uD") != -1
    if surrogates or data.count(b"[") + data.count(b"{") > _DEEP_HINT:
        problem = json_problem(body, text=surrogates)
        if problem is not None:
            raise SubLaneError("invalid_request", problem)
    return body


_DEEP_HINT = 256
