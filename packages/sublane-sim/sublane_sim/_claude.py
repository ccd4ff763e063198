"""Claude (Anthropic API with Pro/Max OAuth) routes (PROTOCOLS.md 2)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._accounts import Account
from ._cache import CACHE_LIFETIME_S
from ._claude_events import build_claude_plan, claude_sse_encode
from ._claude_limits import unified_headers, usage_payload
from ._content import estimate_tokens
from ._field_types import CLAUDE_TYPES, type_problem
from ._floors import below, claude_code_version
from ._http import bearer_token, parse_json_object, record_request, sim_of
from ._records import RequestRecord
from ._responses import DelayedResponse, EventStreamResponse, PacedJSONResponse
from ._turns import Turn

__all__ = ["claude_routes", "error_body"]

OAUTH_BETA = "oauth-2025-04-20"

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}
_MESSAGES = {
    "rate_limit_error": "This request would exceed your account's rate limit. Please try again later.",
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "permission_error": "Your account does not have permission to use this resource.",
    "timeout_error": "Request timed out",
}
_HTML = "<html><head><title>{0}</title></head><body><center><h1>{0}</h1></center></body></html>"


def error_body(kind: str, message: str, request_id: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def _request_id(record: RequestRecord) -> str:
    return f"req_sim{record.seq:020d}"


def _reject(record: RequestRecord, status: int, kind: str, message: str) -> Response:
    record.status = status
    record.outcome = "rejected"
    rid = _request_id(record)
    return JSONResponse(error_body(kind, message, rid), status_code=status, headers={"request-id": rid})


async def _authorize(
    request: Request, record: RequestRecord, *, oauth_only: bool = False
) -> Account | Response:
    """An OAuth access token as a bearer (needs the `oauth-2025-04-20` beta), or the account's API
    key in `x-api-key` or as a bearer (newer SDKs send API keys that way)."""
    sim = sim_of(request)
    api_key = request.headers.get("x-api-key")
    token = bearer_token(request)
    secret = token if token is not None else api_key
    account, kind, problem = sim.authenticate(record, secret, "claude")
    if token is None:
        if account is None or problem is not None or kind != "api_key" or oauth_only:
            return _reject(record, 401, "authentication_error", "invalid x-api-key")
        return account
    if account is None or problem == "unknown":
        return _reject(record, 401, "authentication_error", "Invalid bearer token")
    if kind == "api_key":
        if oauth_only:
            return _reject(record, 401, "authentication_error", "OAuth token required")
        return account
    betas = {b.strip() for b in request.headers.get("anthropic-beta", "").split(",")}
    if OAUTH_BETA not in betas:
        message = "OAuth authentication is currently not supported."
        return _reject(record, 401, "authentication_error", message)
    if problem == "expired":
        message = "OAuth token has expired. Please obtain a new token or refresh your existing token."
        return _reject(record, 401, "authentication_error", message)
    if problem is not None:
        return _reject(record, 401, "authentication_error", "OAuth token has been revoked.")
    return account


def _validate(
    request: Request, body: dict[str, Any] | None, account: Account, *, count: bool
) -> tuple[int, str] | None:
    if not request.headers.get("anthropic-version"):
        return 400, "anthropic-version: header is required"
    if body is None:
        return 400, "Request body must be a JSON object"
    model = body.get("model")
    if not isinstance(model, str):
        return 400, "model: Field required"
    if not count and not isinstance(body.get("max_tokens"), int):
        return 400, "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, "messages: at least one message is required"
    problem = type_problem(body, CLAUDE_TYPES)
    if problem is not None:
        name, expected, got = problem
        return 400, f"{name}: Input should be {expected}, not {got}"
    if not serves(account.models, model):
        return 404, f"model: {model}"
    return None


def serves(models: tuple[str, ...], model: str) -> bool:
    """Whether the API takes ``model`` for an account of ``models``: a listed id, or an alias of a
    dated one (``claude-sonnet-4-5`` and ``claude-sonnet-4-5-latest`` for ``…-20250929``)."""
    if model in models:
        return True
    base = model.removesuffix("-latest")
    return any(other.startswith(f"{base}-20") for other in models)


def _cache_lifetime(body: dict[str, Any]) -> float:
    """An hour when a breakpoint asks ``"ttl": "1h"`` (Anthropic's extended cache), else 5 minutes."""
    blocks: list[Any] = []
    for part in (body.get("system"), body.get("tools")):
        blocks += part if isinstance(part, list) else []
    for message in body["messages"]:
        content = message.get("content") if isinstance(message, dict) else None
        blocks += content if isinstance(content, list) else []
    for block in blocks:
        control = block.get("cache_control") if isinstance(block, dict) else None
        if isinstance(control, dict) and control.get("ttl") == "1h":
            return 3600.0
    return CACHE_LIFETIME_S


def _one_hour_cache(body: dict[str, Any]) -> bool:
    """Whether the request's first cache breakpoint asks for the one-hour cache (``ttl: "1h"``);
    the simulator keeps all of a turn's writes for that breakpoint's lifetime."""
    blocks: list[Any] = []
    for part in (body.get("tools"), body.get("system"), body.get("messages")):
        if isinstance(part, list):
            for item in part:
                blocks.append(item)
                if isinstance(item, dict) and isinstance(item.get("content"), list):
                    blocks.extend(item["content"])
    for block in blocks:
        control = block.get("cache_control") if isinstance(block, dict) else None
        if isinstance(control, dict):
            return control.get("ttl") == "1h"
    return False


def _cache_parts(body: dict[str, Any]) -> tuple[str, int]:
    """Affinity key and size of the cacheable prefix: the system prompt plus the first message."""
    prefix = json.dumps([body.get("system"), body["messages"][0]], sort_keys=True).encode()
    return hashlib.sha256(prefix).hexdigest(), estimate_tokens(prefix)


def _headers(request: Request, account: Account, record: RequestRecord) -> dict[str, str]:
    sim = sim_of(request)
    with sim.lock:
        headers = unified_headers(account, sim.clock.now())
    headers["request-id"] = _request_id(record)
    return headers


def _error_response(request: Request, turn: Turn) -> Response:
    sim = sim_of(request)
    behaviour = turn.behaviour
    status = behaviour.status
    headers = _headers(request, turn.account, turn.record)
    if turn.quota_window is not None:
        window = turn.account.quota[turn.quota_window]
        with sim.lock:
            headers["retry-after"] = str(window.reset_after(sim.clock.now()))
        headers["anthropic-ratelimit-unified-status"] = "rejected"
        headers["anthropic-ratelimit-unified-representative-claim"] = turn.quota_window
    if behaviour.retry_after is not None:
        headers["retry-after"] = behaviour.retry_after
    if status in (502, 504) and behaviour.error_code is None:
        title = f"{status} {'Bad Gateway' if status == 502 else 'Gateway Timeout'}"
        inner: Response = HTMLResponse(_HTML.format(title), status_code=status, headers=headers)
    else:
        kind = behaviour.error_code or _TYPES.get(status, "api_error")
        message = behaviour.error_message or _MESSAGES.get(kind, "Upstream error")
        inner = JSONResponse(
            error_body(kind, message, headers["request-id"]), status_code=status, headers=headers
        )
    return DelayedResponse(inner, behaviour.header_delay_ms, turn)


async def _floor_refusal(request: Request, record: RequestRecord, model: str) -> Response | None:
    """Anthropic's 400 for a model above the request's Claude Code version (CLIENT-3, ``_floors``):
    an ``invalid_request_error`` with ``details.error_code: claude_code_version_too_old`` and the
    message Claude Code 2.1.332 itself recognizes ("Claude Code X does not support this model;
    version Y or newer is required")."""
    floor = sim_of(request).floors.get("claude", model)
    version = claude_code_version(request.headers)
    if floor is None or not below(version, floor[0]):
        return None
    if floor[1] > 0:
        await asyncio.sleep(floor[1])
    record.status, record.outcome = 400, "rejected"
    rid = _request_id(record)
    message = (
        f"Claude Code {version or 'unknown'} does not support this model; "
        f"version {floor[0]} or newer is required"
    )
    body = error_body("invalid_request_error", message, rid)
    body["error"]["details"] = {"error_code": "claude_code_version_too_old"}
    return JSONResponse(body, status_code=400, headers={"request-id": rid})


async def messages(request: Request) -> Response:
    record, raw = await record_request(request, "claude", "claude.messages")
    authorized = await _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    body = parse_json_object(raw)
    problem = _validate(request, body, account, count=False)
    if problem is not None or body is None:
        status, message = problem or (400, "invalid body")
        return _reject(record, status, _TYPES[status], message)
    refused = await _floor_refusal(request, record, str(body["model"]))
    if refused is not None:
        return refused
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
    record, raw = await record_request(request, "claude", "claude.count_tokens")
    authorized = await _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    body = parse_json_object(raw)
    problem = _validate(request, body, authorized, count=True)
    if problem is not None:
        return _reject(record, problem[0], _TYPES[problem[0]], problem[1])
    record.status, record.outcome = 200, "completed"
    return JSONResponse({"input_tokens": estimate_tokens(raw)}, headers=_headers(request, authorized, record))


async def oauth_usage(request: Request) -> Response:
    record, _ = await record_request(request, "claude", "claude.usage")
    authorized = await _authorize(request, record, oauth_only=True)
    if isinstance(authorized, Response):
        return authorized
    sim = sim_of(request)
    outcome, account, now = sim.quota_read(authorized)
    if outcome.kind == "error":
        return _reject(record, outcome.status, "api_error", "Quota read failed (scripted).")
    with sim.lock:
        payload = usage_payload(account, now)
    record.status, record.outcome = 200, "completed"
    return JSONResponse(payload)


async def oauth_profile(request: Request) -> Response:
    record, _ = await record_request(request, "claude", "claude.profile")
    authorized = await _authorize(request, record, oauth_only=True)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    record.status, record.outcome = 200, "completed"
    name = account.email.split("@")[0]
    return JSONResponse(
        {
            "account": {
                "uuid": account.account_id,
                "email": account.email,
                "full_name": name,
                "display_name": name,
                "has_claude_max": account.plan == "max",
                "has_claude_pro": account.plan == "pro",
            },
            "organization": {
                "uuid": account.organization_id,
                "name": f"{name}'s Organization",
                "organization_type": f"claude_{account.plan}",
                "billing_type": "stripe_subscription",
                "rate_limit_tier": account.rate_limit_tier,
            },
        }
    )


def listed_ids(models: tuple[str, ...]) -> list[str]:
    """What the Anthropic API's model list shows: dated ids, not the undated aliases of them
    (``claude-sonnet-4-5`` is accepted by the Messages API but listed as its dated id)."""
    return [model for model in models if not any(other.startswith(f"{model}-20") for other in models)]


async def list_models(request: Request) -> Response:
    """``GET /v1/models``: the account's models, newest first, in pages (``limit``, ``after_id``)."""
    record, _ = await record_request(request, "claude", "claude.models")
    authorized = await _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    if not authorized.models_listable:
        return _reject(record, 403, "permission_error", "This token may not list models.")
    ids = listed_ids(authorized.models)
    try:
        limit = max(1, min(int(request.query_params.get("limit", "20")), 1000))
    except ValueError:
        return _reject(record, 400, "invalid_request_error", "limit: must be an integer")
    after = request.query_params.get("after_id")
    start = ids.index(after) + 1 if after in ids else 0
    page = ids[start : start + limit]
    record.status, record.outcome = 200, "completed"
    data = [
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


async def root(request: Request) -> Response:
    """Claude Code probes `HEAD /` for connectivity before its first call."""
    return Response(status_code=200)


def claude_routes() -> list[BaseRoute]:
    return [
        Route("/", root, methods=["GET", "HEAD"]),
        Route("/v1/messages", messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/api/oauth/usage", oauth_usage, methods=["GET"]),
        Route("/api/oauth/profile", oauth_profile, methods=["GET"]),
    ]
