"""The Anthropic API with API keys (the ``anthropic`` provider), served under ``/anthropic``.

What differs from Claude subscriptions (``_claude.py``, whose Messages validation, caching and event
plans this reuses): the key travels in ``x-api-key`` (or, as newer API versions document, as a
bearer) and an OAuth access token is refused; answers carry the API's own rate-limit headers,
``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`` (resets
as RFC 3339 times), not the subscription's ``-unified-`` ones; a window used up answers 429
``rate_limit_error`` with ``retry-after``; 529 is ``overloaded_error``. ``GET /v1/models`` pages
with ``limit``/``after_id`` and answers ``has_more``/``first_id``/``last_id``.
"""

from __future__ import annotations

import math
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._accounts import Account
from ._catalog import Provider
from ._claude import (
    _TYPES,
    _cache_lifetime,
    _cache_parts,
    _one_hour_cache,
    _validate,
    error_body,
    listed_ids,
)
from ._claude_events import build_claude_plan, claude_sse_encode
from ._clock import iso_utc
from ._content import estimate_tokens
from ._http import bearer_token, parse_json_object, record_request, sim_of
from ._records import RequestRecord
from ._responses import DelayedResponse, EventStreamResponse, PacedJSONResponse
from ._turns import Turn

__all__ = ["PREFIX", "anthropic_api_routes", "rate_limit_headers"]

PROVIDER: Provider = "anthropic"
PREFIX = "/anthropic"
#: The limits of a key's rate-limit windows (a mid tier): requests and tokens per minute.
LIMITS: dict[str, int] = {
    "requests": 4000,
    "tokens": 2_000_000,
    "input_tokens": 2_000_000,
    "output_tokens": 400_000,
}
_MESSAGES = {
    "rate_limit_error": "This request would exceed your organization's rate limit. Please try again later.",
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "authentication_error": "invalid x-api-key",
    "timeout_error": "Request timed out",
}


def _request_id(record: RequestRecord) -> str:
    return f"req_sim{record.seq:020d}"


def _reject(record: RequestRecord, status: int, kind: str, message: str) -> Response:
    record.status, record.outcome = status, "rejected"
    rid = _request_id(record)
    return JSONResponse(error_body(kind, message, rid), status_code=status, headers={"request-id": rid})


def _authorize(request: Request, record: RequestRecord) -> Account | Response:
    """The key in ``x-api-key`` (or as a bearer); an OAuth token or an unknown key is a 401."""
    secret = request.headers.get("x-api-key") or bearer_token(request)
    account, kind, problem = sim_of(request).authenticate(record, secret, PROVIDER)
    if account is None or problem is not None or kind != "api_key":
        return _reject(record, 401, "authentication_error", "invalid x-api-key")
    return account


def rate_limit_headers(account: Account, now: float) -> dict[str, str]:
    """``anthropic-ratelimit-*`` of the account's windows: limit, what remains, when it resets."""
    headers: dict[str, str] = {}
    for name, limit in LIMITS.items():
        window = account.quota.get(name)
        if window is None:
            continue
        window.roll(now)
        remaining = max(0, math.floor(limit * (100.0 - window.used_percent) / 100.0))
        kind = name.replace("_", "-")
        headers[f"anthropic-ratelimit-{kind}-limit"] = str(limit)
        headers[f"anthropic-ratelimit-{kind}-remaining"] = str(remaining)
        headers[f"anthropic-ratelimit-{kind}-reset"] = iso_utc(window.reset_at).replace("+00:00", "Z")
    return headers


def _headers(request: Request, account: Account, record: RequestRecord) -> dict[str, str]:
    sim = sim_of(request)
    with sim.lock:
        headers = rate_limit_headers(account, sim.clock.now())
    headers["request-id"] = _request_id(record)
    return headers


def _error_response(request: Request, turn: Turn) -> Response:
    sim = sim_of(request)
    behaviour = turn.behaviour
    headers = _headers(request, turn.account, turn.record)
    if turn.quota_window is not None:
        with sim.lock:
            headers["retry-after"] = str(
                max(1, turn.account.quota[turn.quota_window].reset_after(sim.clock.now()))
            )
    if behaviour.retry_after is not None:
        headers["retry-after"] = behaviour.retry_after
    kind = behaviour.error_code or _TYPES.get(behaviour.status, "api_error")
    message = behaviour.error_message or _MESSAGES.get(kind, "Upstream error")
    inner = JSONResponse(
        error_body(kind, message, headers["request-id"]), status_code=behaviour.status, headers=headers
    )
    return DelayedResponse(inner, behaviour.header_delay_ms, turn)


async def messages(request: Request) -> Response:
    record, raw = await record_request(request, PROVIDER, "anthropic.messages")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    body = parse_json_object(raw)
    problem = _validate(request, body, account, count=False)
    if problem is not None or body is None:
        status, message = problem or (400, "invalid body")
        return _reject(record, status, _TYPES[status], message)
    cache_key, prefix_tokens = _cache_parts(body)
    sim = sim_of(request)
    turn = sim.begin_turn(
        record,
        account,
        body["model"],
        prompt_tokens=estimate_tokens(raw),
        cache_key=cache_key,
        cache_lifetime_s=_cache_lifetime(body),
    )
    if turn.behaviour.kind == "error":
        return _error_response(request, turn)
    usage = turn.usage
    assert usage is not None
    if usage.cached_tokens == 0 and turn.behaviour.cached_tokens is None:
        usage.cache_creation_tokens = min(prefix_tokens, max(0, usage.prompt_tokens - 1))
        if _one_hour_cache(body):
            usage.cache_creation_1h_tokens = usage.cache_creation_tokens
    elif usage.cached_tokens >= usage.prompt_tokens:
        usage.cached_tokens = max(0, usage.prompt_tokens - 1)
    message_id = f"msg_sim{record.seq:020d}"
    record.response_id = message_id
    plan = build_claude_plan(turn, body, message_id)
    headers = _headers(request, account, record)
    if body.get("stream") is True:
        return EventStreamResponse(turn, plan.events, claude_sse_encode, plan.failure, headers, plan.success)
    failure = error_body(turn.behaviour.error_code or "overloaded_error", "Overloaded", headers["request-id"])
    return PacedJSONResponse(turn, plan.message, headers, 529, failure, plan.success)


async def count_tokens(request: Request) -> Response:
    record, raw = await record_request(request, PROVIDER, "anthropic.count_tokens")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    body = parse_json_object(raw)
    problem = _validate(request, body, authorized, count=True)
    if problem is not None:
        return _reject(record, problem[0], _TYPES[problem[0]], problem[1])
    record.status, record.outcome = 200, "completed"
    return JSONResponse({"input_tokens": estimate_tokens(raw)}, headers=_headers(request, authorized, record))


async def list_models(request: Request) -> Response:
    """``GET /v1/models``: the key's models, in pages (``limit`` 1–1000, default 20; ``after_id``)."""
    record, _ = await record_request(request, PROVIDER, "anthropic.models")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    ids = listed_ids(authorized.models)
    try:
        limit = max(1, min(int(request.query_params.get("limit", "20")), 1000))
    except ValueError:
        return _reject(record, 400, "invalid_request_error", "limit: must be an integer")
    after = request.query_params.get("after_id")
    start = ids.index(after) + 1 if after in ids else 0
    page = ids[start : start + limit]
    record.status, record.outcome = 200, "completed"
    data: list[dict[str, Any]] = [
        {"type": "model", "id": model, "display_name": model, "created_at": "2025-01-01T00:00:00Z"}
        for model in page
    ]
    return JSONResponse(
        {
            "data": data,
            "has_more": start + limit < len(ids),
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
        }
    )


def anthropic_api_routes() -> list[BaseRoute]:
    return [
        Route(f"{PREFIX}/v1/messages", messages, methods=["POST"]),
        Route(f"{PREFIX}/v1/messages/count_tokens", count_tokens, methods=["POST"]),
        Route(f"{PREFIX}/v1/models", list_models, methods=["GET"]),
    ]
