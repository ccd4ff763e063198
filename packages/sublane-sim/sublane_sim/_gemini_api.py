"""The Gemini API with API keys (``generativelanguage.googleapis.com``), served under ``/gemini``.

A test imports an account with ``base_url`` = the sim URL + ``/gemini`` (the bare host, as the
google-genai SDK takes it). Routes: ``GET /gemini/v1beta/models`` (paged: ``pageSize``,
``pageToken``/``nextPageToken``; names ``models/<id>``), ``POST /gemini/v1beta/models/{model}:
generateContent``, ``:streamGenerateContent?alt=sse``, ``:countTokens`` (also under ``v1``). The key comes in
``x-goog-api-key`` (or ``?key=``). What the real API answers, and so the simulator:

- a wrong, deleted or revoked key: **400** ``INVALID_ARGUMENT`` with the ``ErrorInfo`` reason
  ``API_KEY_INVALID`` ("API key not valid. Please pass a valid API key."); no key at all: 403
  ``PERMISSION_DENIED`` ("Method doesn't allow unregistered callers …");
- a 429 ``RESOURCE_EXHAUSTED`` carries a ``QuotaFailure`` (per project and model) and a
  ``RetryInfo`` ``retryDelay`` (a scripted ``retry_after`` or ``retry_delay`` lands there), and no
  ``Retry-After`` header;
- no rate-limit headers on any answer (the Gemini API sends none);
- usage in ``usageMetadata``, with ``cachedContentTokenCount`` from implicit caching (keyed here by
  the request's prefix: system instruction, tools and first content; prompts under 1024 tokens are
  never cached); zero counts are left out, as proto3 JSON leaves them out.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._accounts import Account
from ._antigravity_events import build_antigravity_plan, sse_encode
from ._content import estimate_tokens
from ._field_types import GEMINI_TYPES, type_problem
from ._google_errors import rfc3339_z, rpc_error
from ._http import parse_json_object, record_request, sim_of
from ._records import RequestRecord
from ._responses import DelayedResponse, EventStreamResponse, PacedJSONResponse
from ._script import Behaviour
from ._stream import Event
from ._turns import Turn

__all__ = ["gemini_api_routes"]

PREFIX = "/gemini"
SERVICE = "generativelanguage.googleapis.com"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_METHODS = ("generateContent", "streamGenerateContent", "countTokens")
#: The fields of a ``GenerateContentRequest`` the public API takes in its body (the model is the path).
REQUEST_FIELDS = frozenset(
    {
        "contents",
        "tools",
        "toolConfig",
        "safetySettings",
        "systemInstruction",
        "generationConfig",
        "cachedContent",
    }
)
#: How the simulated Gemini API's thought signatures begin (opaque bytes, base64 on the wire).
SIGNATURE_PREFIX = b"sim-gemini-thought"
#: Implicit caching's floor: shorter prompts are never cached (Google documents 1024 tokens for
#: Flash models and more for Pro).
MIN_CACHED_TOKENS = 1024
#: Models the Gemini API lists that do not serve generateContent (filtered by clients).
EMBEDDING_MODEL = "gemini-embedding-001"
INVALID_KEY = "API key not valid. Please pass a valid API key."
NO_KEY = (
    "Method doesn't allow unregistered callers (callers without established identity). Please use API "
    "Key or other form of API consumer identity to call this API."
)
_MESSAGES = {
    400: "Request contains an invalid argument.",
    401: (
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
        "other valid authentication credential."
    ),
    403: "The caller does not have permission",
    404: "Requested entity was not found.",
    500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
    504: "The request timed out. Please try again.",
}


def _reject(record: RequestRecord, status: int, body: dict[str, Any]) -> Response:
    record.status, record.outcome = status, "rejected"
    return JSONResponse(body, status_code=status)


def key_invalid() -> dict[str, Any]:
    """The real API's answer to a key it does not know (a 400, not a 401)."""
    details: list[dict[str, Any]] = [
        {
            "@type": ERROR_INFO,
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": SERVICE},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": INVALID_KEY,
        },
    ]
    return rpc_error(400, INVALID_KEY, details)


def _authorize(request: Request, record: RequestRecord) -> Account | Response:
    sim = sim_of(request)
    key = request.headers.get("x-goog-api-key") or request.query_params.get("key")
    if not key:
        return _reject(record, 403, rpc_error(403, NO_KEY))
    account, kind, problem = sim.authenticate(record, key, "gemini")
    if account is None or problem is not None or kind != "api_key" or key in account.revoked_access:
        return _reject(record, 400, key_invalid())
    return account


def rate_limited(model: str, delay: str) -> dict[str, Any]:
    """A 429 as the Gemini API words it: the quota broken, per project and model, and when to retry."""
    seconds = delay.removesuffix("s")
    message = (
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. "
        f"Please retry in {seconds}s."
    )
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": f"{SERVICE}/generate_content_paid_tier_requests",
                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
                    "quotaDimensions": {"location": "global", "model": model},
                    "quotaValue": "150",
                }
            ],
        },
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [
                {
                    "description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                }
            ],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
    ]
    return rpc_error(429, message, details)


def error_body(behaviour: Behaviour, model: str) -> dict[str, Any]:
    """The body of a scripted error answer."""
    status = behaviour.status
    if status == 429:
        delay = behaviour.retry_delay or (f"{behaviour.retry_after}s" if behaviour.retry_after else "43s")
        return rate_limited(model, delay)
    if status == 400 and behaviour.error_code == "API_KEY_INVALID":
        return key_invalid()
    message = behaviour.error_message or _MESSAGES.get(status, "Upstream error.")
    details = None
    if behaviour.error_code:
        details = [{"@type": ERROR_INFO, "reason": behaviour.error_code, "domain": "googleapis.com"}]
    return rpc_error(status, message, details)


async def models_route(request: Request) -> Response:
    record, _ = await record_request(request, "gemini", "gemini.models")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    listed = [*authorized.models, EMBEDDING_MODEL]
    try:
        size = max(1, min(int(request.query_params.get("pageSize", "50")), 1000))
        start = int(request.query_params.get("pageToken") or 0)
    except ValueError:
        return _reject(record, 400, rpc_error(400, "Invalid page token or size."))
    page: dict[str, Any] = {"models": [_entry(model) for model in listed[start : start + size]]}
    if start + size < len(listed):
        page["nextPageToken"] = str(start + size)
    record.status, record.outcome = 200, "completed"
    return JSONResponse(page)


def _entry(model: str) -> dict[str, Any]:
    embedding = model == EMBEDDING_MODEL
    return {
        "name": f"models/{model}",
        "version": "001",
        "displayName": model.replace("-", " ").title(),
        "inputTokenLimit": 2048 if embedding else 1048576,
        "outputTokenLimit": 1 if embedding else 65536,
        "supportedGenerationMethods": (
            ["embedContent", "countTextTokens", "countTokens"]
            if embedding
            else ["generateContent", "countTokens", "createCachedContent", "batchGenerateContent"]
        ),
    }


async def model_route(request: Request) -> Response:
    target = request.path_params["target"]
    model, _, method = target.rpartition(":")
    record, raw = await record_request(request, "gemini", f"gemini.{method or 'unknown'}")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    if method not in _METHODS or not model:
        return _reject(record, 404, rpc_error(404, f"Method not found: {target}"))
    body = parse_json_object(raw)
    if body is None:
        return _reject(record, 400, rpc_error(400, "Invalid JSON payload received."))
    record.model = model
    if model not in account.models:
        version = request.url.path.removeprefix(PREFIX + "/").split("/", 1)[0]
        message = (
            f"models/{model} is not found for API version {version}, or is not supported for {method}. "
            "Call ListModels to see the list of available models and their supported methods."
        )
        return _reject(record, 404, rpc_error(404, message))
    if method == "countTokens":
        extra = sorted(set(body) - {"contents", "generateContentRequest"})
        if extra:
            name = extra[0]
            return _reject(
                record,
                400,
                rpc_error(400, f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.'),
            )
        record.status, record.outcome = 200, "completed"
        return JSONResponse({"totalTokens": estimate_tokens(raw)})
    unknown = sorted(key for key in body if _camel(key) not in REQUEST_FIELDS)
    if unknown:  # the real API refuses any field GenerateContentRequest lacks (an envelope's too)
        name = unknown[0]
        return _reject(
            record,
            400,
            rpc_error(400, f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.'),
        )
    if not isinstance(body.get("contents"), list):
        return _reject(
            record, 400, rpc_error(400, "* GenerateContentRequest.contents: contents is not specified")
        )
    problem = type_problem(body, GEMINI_TYPES)
    if problem is not None:
        name, expected, got = problem
        return _reject(record, 400, rpc_error(400, f"Invalid value at '{name}', {got}: not {expected}."))
    stream = method == "streamGenerateContent"
    if stream and request.query_params.get("alt") != "sse":
        return _reject(record, 400, rpc_error(400, "streamGenerateContent is served here with alt=sse only."))
    sim = sim_of(request)
    prompt = estimate_tokens(raw)
    cache_key = _prefix_key(body) if prompt >= MIN_CACHED_TOKENS else None
    turn = sim.begin_turn(record, account, model, prompt_tokens=prompt, cache_key=cache_key)
    if turn.behaviour.kind == "error":
        return _error_response(turn)
    response_id = f"sim{record.seq:012d}"
    record.response_id = response_id
    plan = build_antigravity_plan(turn, {"request": body}, response_id, rfc3339_z(sim.clock.now()))
    events = [_unwrapped(event) for event in plan.events]

    def failure() -> list[Event]:
        return plan.failure()

    if stream:
        return EventStreamResponse(turn, events, sse_encode, failure, {}, plan.success)
    overloaded = rpc_error(503, _MESSAGES[503])
    return PacedJSONResponse(turn, _bare(plan.aggregate["response"]), {}, 503, overloaded, plan.success)


def _camel(name: str) -> str:
    """A field's JSON name from its proto name (``system_instruction`` → ``systemInstruction``)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _unwrapped(event: Event) -> Event:
    """The bare ``GenerateContentResponse`` of a chunk (the Gemini API has no envelope)."""
    inner = event.data.get("response")
    return Event(
        _bare(inner) if isinstance(inner, dict) else event.data, event.name, event.delta, event.terminal
    )


def _bare(response: dict[str, Any]) -> dict[str, Any]:
    """A response as the Gemini API writes it: its own thought signatures (not Antigravity's: a test
    tells them apart), and proto3 JSON leaving out zero counts (a miss of the implicit cache has no
    ``cachedContentTokenCount``, a turn without thoughts no ``thoughtsTokenCount``)."""
    for candidate in response.get("candidates") or ():
        for part in (candidate.get("content") or {}).get("parts") or ():
            if isinstance(part.get("thoughtSignature"), str):
                part["thoughtSignature"] = _own_signature(part["thoughtSignature"])
    usage = response.get("usageMetadata")
    if not isinstance(usage, dict):
        return response
    return {**response, "usageMetadata": {name: value for name, value in usage.items() if value != 0}}


def _own_signature(signature: str) -> str:
    raw = base64.b64decode(signature)
    return base64.b64encode(SIGNATURE_PREFIX + raw.removeprefix(b"sim-thought-")).decode("ascii")


def _prefix_key(body: dict[str, Any]) -> str:
    """What implicit caching keys a prompt's prefix by: its instructions, tools and first turn."""
    contents = body.get("contents") or []
    prefix = [
        body.get("systemInstruction") or body.get("system_instruction"),
        body.get("tools"),
        contents[:1],
    ]
    return hashlib.sha256(json.dumps(prefix, sort_keys=True, default=str).encode()).hexdigest()


def _error_response(turn: Turn) -> Response:
    body = error_body(turn.behaviour, turn.model)
    inner = JSONResponse(body, status_code=turn.behaviour.status)
    return DelayedResponse(inner, turn.behaviour.header_delay_ms, turn)


def gemini_api_routes() -> list[BaseRoute]:
    """Both API versions the real API serves (``v1beta``, which SubLane calls, and ``v1``, which the
    google-genai SDK calls when given a base URL)."""
    return [
        route
        for version in ("v1beta", "v1")
        for route in (
            Route(f"{PREFIX}/{version}/models", models_route, methods=["GET"]),
            Route(f"{PREFIX}/{version}/models/{{target:path}}", model_route, methods=["POST"]),
        )
    ]
