"""An OpenAI-compatible Chat Completions server (vLLM, llama.cpp, Ollama, a coding plan), under
``/compat/v1``: ``POST /compat/v1/chat/completions`` (a stream or one JSON answer) with an API key
as a bearer, and no model list.

Like vLLM started with ``--api-key``, the key is checked before anything else on every
``/compat/v1`` path, so ``GET /compat/v1/models`` answers 401 to a wrong key and 404 to a right one
(the server lists no models; a client must be told which it serves). Errors are OpenAI-shaped
(``{"error": {"message", "type", "param", "code"}}``); a 429 carries ``retry-after`` when scripted.
Accounts are ``compat`` sim accounts: ``sim.create_account("compat")``, their ``api_key`` the key.
"""

from __future__ import annotations

from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._accounts import Account
from ._catalog import Provider
from ._compat_events import build_compat_plan, compat_sse_encode
from ._content import estimate_tokens
from ._http import bearer_token, parse_json_object, record_request, sim_of
from ._records import RequestRecord
from ._responses import DelayedResponse, EventStreamResponse, PacedJSONResponse
from ._turns import Turn

__all__ = ["COMPAT_PREFIX", "compat_routes"]

COMPAT_PREFIX = "/compat/v1"
PROVIDER: Final[Provider] = "compat"

_TYPES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    429: "RateLimitError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}
_MESSAGES = {
    401: "Unauthorized",
    429: "Too many requests: the server's request limit was reached.",
    500: "Internal server error",
    502: "Bad gateway",
    503: "The engine is overloaded; please retry.",
}


def error_body(
    status: int, message: str, *, code: str | int | None = None, kind: str | None = None
) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": kind or _TYPES.get(status, "InternalServerError"),
            "param": None,
            "code": code if code is not None else status,
        }
    }


def _reject(record: RequestRecord, status: int, message: str, *, code: str | int | None = None) -> Response:
    record.status, record.outcome = status, "rejected"
    return JSONResponse(error_body(status, message, code=code), status_code=status)


def _authorize(request: Request, record: RequestRecord) -> Account | Response:
    account, _kind, problem = sim_of(request).authenticate(record, bearer_token(request), PROVIDER)
    if account is None or problem is not None:
        return _reject(record, 401, _MESSAGES[401])
    return account


def _validate(body: dict[str, Any] | None, account: Account) -> tuple[int, str, str | None] | None:
    if body is None:
        return 400, "The request body must be a JSON object.", None
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return 400, "'model' is required.", None
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, "'messages' must be a non-empty list.", None
    if not all(isinstance(message, dict) and isinstance(message.get("role"), str) for message in messages):
        return 400, "Each message needs a 'role'.", None
    if "stream" in body and not isinstance(body["stream"], bool):
        return 400, "'stream' must be a boolean.", None
    if model not in account.models:
        return 404, f"The model `{model}` does not exist.", "model_not_found"
    return None


def _error_response(turn: Turn) -> Response:
    behaviour = turn.behaviour
    status = behaviour.status
    headers: dict[str, str] = {}
    if behaviour.retry_after is not None:
        headers["retry-after"] = behaviour.retry_after
    message = behaviour.error_message or _MESSAGES.get(status, "Upstream error")
    body = error_body(status, message, code=behaviour.error_code)
    return DelayedResponse(
        JSONResponse(body, status_code=status, headers=headers), behaviour.header_delay_ms, turn
    )


async def chat_completions(request: Request) -> Response:
    record, raw = await record_request(request, PROVIDER, "compat.chat")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    body = parse_json_object(raw)
    problem = _validate(body, account)
    if problem is not None or body is None:
        status, message, code = problem or (400, "invalid body", None)
        return _reject(record, status, message, code=code)
    sim = sim_of(request)
    turn = sim.begin_turn(record, account, body["model"], prompt_tokens=estimate_tokens(raw), cache_key=None)
    if turn.behaviour.kind == "error":
        return _error_response(turn)
    completion_id = f"chatcmpl-sim{record.seq:020d}"
    record.response_id = completion_id
    plan = build_compat_plan(turn, body, completion_id, int(sim.clock.now()))
    if body.get("stream") is True:
        return EventStreamResponse(turn, plan.events, compat_sse_encode, plan.failure, {}, plan.success)
    failure = error_body(503, _MESSAGES[503])
    return PacedJSONResponse(turn, plan.completion, {}, 503, failure, plan.success)


async def models(request: Request) -> Response:
    """No model list: 404 once the key is known good (401 before that)."""
    record, _ = await record_request(request, PROVIDER, "compat.models")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    return _reject(record, 404, "Not Found", code=404)


def compat_routes() -> list[BaseRoute]:
    return [
        Route(f"{COMPAT_PREFIX}/chat/completions", chat_completions, methods=["POST"]),
        Route(f"{COMPAT_PREFIX}/models", models, methods=["GET"]),
    ]
