"""Antigravity (`cloudcode-pa` `v1internal:*`) routes (PROTOCOLS.md 3)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._accounts import Account
from ._antigravity_events import build_antigravity_plan, sse_encode
from ._content import estimate_tokens
from ._field_types import GEMINI_TYPES, type_problem
from ._google_errors import google_error, rfc3339_z, rpc_error
from ._http import bearer_token, parse_json_object, record_request, sim_of
from ._records import RequestRecord
from ._responses import DelayedResponse, EventStreamResponse, PacedJSONResponse
from ._turns import Turn

__all__ = ["antigravity_routes"]

_INFERENCE = ("streamGenerateContent", "generateContent")


def _reject(record: RequestRecord, status: int, message: str) -> Response:
    record.status, record.outcome = status, "rejected"
    return JSONResponse(rpc_error(status, message), status_code=status)


def _authorize(request: Request, record: RequestRecord) -> Account | Response:
    sim = sim_of(request)
    token = bearer_token(request) or request.headers.get("x-goog-api-key")
    account, _, problem = sim.authenticate(record, token, "antigravity")
    if account is None or problem is not None:
        return _reject(
            record,
            401,
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
            "other valid authentication credential.",
        )
    return account


def _check_project(
    record: RequestRecord, body: dict[str, Any], account: Account, *, required: bool
) -> Response | None:
    project = body.get("project")
    if project is None or project == "":
        if required:
            return _reject(record, 400, "Invalid project resource name: project is required")
        return None
    if project != account.project_id or not account.onboarded:
        return _reject(record, 403, f"Permission denied on resource project {project}.")
    return None


async def v1internal(request: Request) -> Response:
    method = request.path_params["method"]
    record, raw = await record_request(request, "antigravity", f"antigravity.{method}")
    authorized = _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    body = parse_json_object(raw)
    if body is None:
        body = {} if not raw else None
    if body is None:
        return _reject(record, 400, "Invalid JSON payload received.")
    if method in _INFERENCE:
        return await _generate(request, record, raw, body, account, stream=method == "streamGenerateContent")
    if method == "countTokens":
        record.status, record.outcome = 200, "completed"
        return JSONResponse({"totalTokens": estimate_tokens(raw)})
    if method == "fetchAvailableModels":
        denied = _check_project(record, body, account, required=False)
        return denied or _models(request, record, account)
    if method == "loadCodeAssist":
        return _load_code_assist(record, account)
    if method == "onboardUser":
        return _onboard(request, record, account)
    return _reject(record, 404, f"Method not found: v1internal:{method}")


async def _generate(
    request: Request,
    record: RequestRecord,
    raw: bytes,
    body: dict[str, Any],
    account: Account,
    *,
    stream: bool,
) -> Response:
    denied = _check_project(record, body, account, required=True)
    if denied is not None:
        return denied
    model = body.get("model")
    inner = body.get("request")
    if (
        not isinstance(model, str)
        or not isinstance(inner, dict)
        or not isinstance(inner.get("contents"), list)
    ):
        return _reject(record, 400, "Request must name a model and carry request.contents.")
    problem = type_problem(inner, GEMINI_TYPES)
    if problem is not None:
        name, _expected, got = problem
        return _reject(record, 400, f"Invalid value at 'request.{name}', {got}: not {_expected}.")
    if model not in account.models:
        record.model = model
        return _reject(record, 404, f"Requested entity was not found: model {model}.")
    if stream and request.query_params.get("alt") != "sse":
        return _reject(record, 400, "streamGenerateContent is served here with alt=sse only.")
    sim = sim_of(request)
    session = inner.get("sessionId")
    turn = sim.begin_turn(
        record,
        account,
        model,
        prompt_tokens=estimate_tokens(raw),
        cache_key=session if isinstance(session, str) else None,
    )
    if turn.behaviour.kind == "error":
        return _error_response(request, turn)
    response_id = f"sim{record.seq:012d}"
    record.response_id = response_id
    plan = build_antigravity_plan(turn, body, response_id, rfc3339_z(sim.clock.now()))
    if stream:
        return EventStreamResponse(turn, plan.events, sse_encode, plan.failure, {}, plan.success)
    failure = rpc_error(503, "The model is overloaded. Please try again later.")
    return PacedJSONResponse(turn, plan.aggregate, {}, 503, failure, plan.success)


def _error_response(request: Request, turn: Turn) -> Response:
    sim = sim_of(request)
    with sim.lock:
        now = sim.clock.now()
        reset_in = turn.account.quota[turn.quota_window].reset_after(now) if turn.quota_window else None
    status, body = google_error(turn.behaviour, turn.model, reset_in_s=reset_in, now=now)
    headers = {} if turn.behaviour.retry_after is None else {"retry-after": turn.behaviour.retry_after}
    inner: Response
    if isinstance(body, str):
        inner = HTMLResponse(body, status_code=status, headers=headers)
    else:
        inner = JSONResponse(body, status_code=status, headers=headers)
    return DelayedResponse(inner, turn.behaviour.header_delay_ms, turn)


def _pretty(model: str) -> str:
    return " ".join(part.capitalize() for part in model.replace("-", " ").split())


def _models(request: Request, record: RequestRecord, account: Account) -> Response:
    sim = sim_of(request)
    models: dict[str, Any] = {}
    outcome, account, now = sim.quota_read(account)
    if outcome.kind == "error":
        return _reject(record, outcome.status, "Quota read failed (scripted).")
    with sim.lock:
        for model in account.models:
            window = account.quota.get(model)
            entry: dict[str, Any] = {
                "displayName": _pretty(model),
                "supportsThinking": "thinking" in model or model.startswith("gemini"),
                "maxTokens": 1048576,
            }
            if window is not None:
                window.roll(now)
                entry["quotaInfo"] = {
                    "remainingFraction": round(1 - window.used_percent / 100, 6),
                    "resetTime": rfc3339_z(window.reset_at),
                }
            models[model] = entry
    record.status, record.outcome = 200, "completed"
    return JSONResponse(
        {"models": models, "webSearchModelIds": [m for m in account.models if "flash" in m][:1]}
    )


def _tier(account: Account) -> dict[str, Any]:
    return {
        "id": account.plan,
        "name": "Gemini Code Assist",
        "description": "Simulated tier",
        "isDefault": True,
    }


def _load_code_assist(record: RequestRecord, account: Account) -> Response:
    payload: dict[str, Any] = {
        "currentTier": _tier(account),
        "allowedTiers": [_tier(account)],
        "gcpManaged": False,
    }
    if account.onboarded:
        payload["cloudaicompanionProject"] = account.project_id
    record.status, record.outcome = 200, "completed"
    return JSONResponse(payload)


def _onboard(request: Request, record: RequestRecord, account: Account) -> Response:
    """A long-running operation: `done: false` for `onboarding_polls` calls, then the project."""
    sim = sim_of(request)
    with sim.lock:
        if not account.onboarded and account.onboarding_polls > 0:
            account.onboarding_polls -= 1
            payload: dict[str, Any] = {"name": f"operations/sim-onboard-{account.id}", "done": False}
        else:
            account.onboarded = True
            payload = {
                "name": f"operations/sim-onboard-{account.id}",
                "done": True,
                "response": {
                    "@type": "type.googleapis.com/google.internal.cloud.code.v1internal.OnboardUserResponse",
                    "cloudaicompanionProject": {"id": account.project_id, "name": account.project_id},
                },
            }
    record.status, record.outcome = 200, "completed"
    return JSONResponse(payload)


def antigravity_routes() -> list[BaseRoute]:
    return [Route("/v1internal:{method}", v1internal, methods=["POST"])]
