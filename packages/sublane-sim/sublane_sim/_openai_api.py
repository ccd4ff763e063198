"""The OpenAI API with API keys under ``/openai/v1`` (``Simulator.openai_base_url``): Responses
(``POST /responses``, a stream or one JSON answer), compaction (``POST /responses/compact``) and
the model list (``GET /models``), with ``Authorization: Bearer sk-…``.

The Responses events are the Codex backend's (``_codex_events``: both are OpenAI Responses); what
differs is the API's: keys instead of ChatGPT tokens, ``store``/``stream`` as the client chooses,
``x-ratelimit-*`` headers, the API's error bodies (``_openai_limits``).
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._accounts import Account
from ._codex_events import build_codex_plan, codex_sse_encoder
from ._codex_rules import codex_prefix_key
from ._content import estimate_tokens
from ._field_types import CODEX_TYPES, type_problem
from ._http import bearer_token, parse_json_object, record_request, sim_of
from ._openai_limits import LIMITS, api_error, invalid_key, openai_error, rate_limit_headers
from ._records import RequestRecord
from ._responses import DelayedResponse, EventStreamResponse, PacedJSONResponse
from ._turns import Turn

__all__ = ["openai_api_routes"]

PREFIX = "/openai/v1"
_OVERLOADED = api_error("The server is overloaded or not ready yet.", "server_error", "server_is_overloaded")
#: The top-level fields ``POST /v1/responses`` takes (the API reference's create parameters, as the
#: official ``openai`` SDK 3.57 declares them); any other field is a 400 ``unknown_parameter`` naming
#: it (``param``) — Chat Completions' ``stop``/``messages``/``max_tokens``/``n`` as much as the
#: Codex backend's ``client_metadata`` or its WebSocket's ``generate``.
RESPONSES_PARAMETERS = frozenset(
    {
        "access_programs", "background", "background_options", "context_management", "conversation",
        "image", "include", "input", "instructions", "max_output_tokens", "max_tool_calls", "metadata",
        "model", "moderation", "parallel_tool_calls", "previous_response_id", "prompt",
        "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "reasoning",
        "safety_identifier", "service_tier", "store", "stream", "stream_options", "temperature", "text",
        "tool_choice", "tools", "top_logprobs", "top_p", "truncation", "user",
    }
)  # fmt: skip
#: What ``POST /v1/responses/compact`` takes (its reference's parameters; no ``stream``).
COMPACT_PARAMETERS = frozenset(
    {
        "model", "image", "input", "instructions", "previous_response_id", "prompt_cache_key",
        "prompt_cache_options", "prompt_cache_retention", "service_tier",
    }
)  # fmt: skip
#: The smallest ``max_output_tokens`` the API takes (400 ``integer_below_min_value`` below it).
MIN_OUTPUT_TOKENS = 16


def _reject(
    record: RequestRecord, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Response:
    record.status = status
    record.outcome = "rejected"
    return JSONResponse(body, status_code=status, headers=headers)


def _authorize(request: Request, record: RequestRecord) -> Account | Response:
    """Only a live API key of an ``openai`` account passes (a ChatGPT token is no API key)."""
    token = bearer_token(request)
    account, kind, problem = sim_of(request).authenticate(record, token, "openai")
    if account is None or problem is not None or kind != "api_key" or account.api_key_revoked:
        return _reject(record, 401, invalid_key(token))
    return account


def _headers(request: Request, account: Account, seq: int) -> dict[str, str]:
    sim = sim_of(request)
    with sim.lock:
        headers = rate_limit_headers(account, sim.clock.now())
    headers.update(
        {"x-request-id": f"req_sim{seq:08d}", "openai-version": "2020-10-01", "openai-processing-ms": "42"}
    )
    return headers


def _problem(
    body: dict[str, Any] | None, account: Account, known: frozenset[str] = RESPONSES_PARAMETERS
) -> tuple[str, str | None, str | None] | None:
    """``(message, code, param)`` of the 400 the real API answers, or ``None``."""
    if body is None:
        return "We could not parse the JSON body of your request.", None, None
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return "Missing required parameter: 'model'.", "missing_required_parameter", "model"
    for name in body:
        if name not in known:
            return f"Unknown parameter: '{name}'.", "unknown_parameter", name
    if model not in account.models:
        return (
            f"The model `{model}` does not exist or you do not have access to it.",
            "model_not_found",
            "model",
        )
    cap = body.get("max_output_tokens")
    if isinstance(cap, int) and not isinstance(cap, bool) and cap < MIN_OUTPUT_TOKENS:
        message = (
            "Invalid 'max_output_tokens': integer below minimum value. "
            f"Expected a value >= {MIN_OUTPUT_TOKENS}, but got {cap} instead."
        )
        return message, "integer_below_min_value", "max_output_tokens"
    if "input" in body and not isinstance(body["input"], list | str):
        return "Invalid type for 'input': expected a string or an array.", "invalid_type", "input"
    problem = type_problem(body, CODEX_TYPES)
    if problem is not None:
        name, expected, got = problem
        return f"Invalid type for '{name}': expected {expected}, but got {got} instead.", "invalid_type", name
    return None


def _error_response(request: Request, turn: Turn) -> Response:
    sim = sim_of(request)
    with sim.lock:
        status, body, extra = openai_error(
            turn.behaviour, turn.account, turn.model, sim.clock.now(), turn.quota_window
        )
    headers = {**_headers(request, turn.account, turn.record.seq), **extra}
    return DelayedResponse(
        JSONResponse(body, status_code=status, headers=headers), turn.behaviour.header_delay_ms, turn
    )


def _spend(request: Request, account: Account, turn: Turn) -> None:
    """An accepted request takes one request and its prompt's tokens from the minute's limits (the
    real API counts the prompt and the output cap up front; the prompt stands in for both)."""
    sim = sim_of(request)
    prompt = turn.usage.prompt_tokens if turn.usage is not None else 0
    with sim.lock:
        now = sim.clock.now()
        for name, spent in (("requests", 1), ("tokens", prompt)):
            window = account.quota.get(name)
            if window is not None:
                window.roll(now)
                window.charge(100.0 * spent / LIMITS[name])


async def responses(request: Request) -> Response:
    record, raw = await record_request(request, "openai", "openai.responses")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    body = parse_json_object(raw)
    problem = _problem(body, account)
    if problem is not None or body is None:
        message, code, param = problem or ("", None, None)
        status = 404 if code == "model_not_found" else 400  # the API's unknown model is a 404
        return _reject(record, status, api_error(message, "invalid_request_error", code, param))
    sim = sim_of(request)
    key = body.get("prompt_cache_key")
    turn = sim.begin_turn(
        record,
        account,
        body["model"],
        prompt_tokens=estimate_tokens(raw),
        # OpenAI caches any prompt's exact prefix; prompt_cache_key only steers which server holds it
        cache_key=codex_prefix_key(body, key if isinstance(key, str) and key else "auto"),
    )
    if turn.behaviour.kind == "error":
        return _error_response(request, turn)
    _spend(request, account, turn)
    response_id = f"resp_sim{record.seq:08d}"
    record.response_id = response_id
    plan = build_codex_plan(turn, body, response_id, int(sim.clock.now()))
    headers = _headers(request, account, record.seq)
    if body.get("stream") is True:
        return EventStreamResponse(
            turn, plan.events, codex_sse_encoder(), plan.failure, headers, plan.success
        )
    final = dict(plan.final, store=body.get("store", True) is not False)
    return PacedJSONResponse(turn, final, headers, 503, _OVERLOADED, plan.success)


async def compact(request: Request) -> Response:
    record, raw = await record_request(request, "openai", "openai.compact")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    body = parse_json_object(raw)
    problem = _problem(body, account, COMPACT_PARAMETERS)
    if problem is not None or body is None:
        message, code, param = problem or ("", None, None)
        status = 404 if code == "model_not_found" else 400  # the API's unknown model is a 404
        return _reject(record, status, api_error(message, "invalid_request_error", code, param))
    sim = sim_of(request)
    turn = sim.begin_turn(record, account, body["model"], prompt_tokens=estimate_tokens(raw), cache_key=None)
    if turn.behaviour.kind == "error":
        return _error_response(request, turn)
    items = body.get("input")
    items = [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else items or []
    kept = [
        item
        for item in items
        if isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") == "user"
    ]
    summary = {
        "type": "compaction",
        "id": f"cmp_sim{record.seq:08d}",
        "encrypted_content": f"gAAAAsimcompact{turn.rng.getrandbits(160):040x}",
    }
    usage = turn.usage
    assert usage is not None
    usage.output_tokens = 32
    result = {
        "id": f"resp_sim{record.seq:08d}",
        "object": "response.compaction",
        "created_at": int(sim.clock.now()),
        "output": [*kept, summary],
        "usage": {
            "input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.prompt_tokens + usage.output_tokens,
        },
    }
    return PacedJSONResponse(turn, result, _headers(request, account, record.seq), 503, _OVERLOADED)


async def models(request: Request) -> Response:
    record, _ = await record_request(request, "openai", "openai.models")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    created = int(time.time()) - 86400
    data = [
        {"id": model, "object": "model", "created": created, "owned_by": "system"}
        for model in authorized.models
    ]
    record.status = 200
    record.outcome = "completed"
    return JSONResponse({"object": "list", "data": data})


def openai_api_routes() -> list[BaseRoute]:
    return [
        Route(f"{PREFIX}/responses", responses, methods=["POST"]),
        Route(f"{PREFIX}/responses/compact", compact, methods=["POST"]),
        Route(f"{PREFIX}/models", models, methods=["GET"]),
    ]
