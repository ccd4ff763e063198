"""Codex (ChatGPT backend) HTTP routes under `/backend-api` (PROTOCOLS.md 1)."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from ._accounts import Account
from ._codex_errors import auth_error, codex_error, rate_limit_headers, usage_payload
from ._codex_events import build_codex_plan, codex_sse_encoder
from ._codex_rules import codex_cache_key, codex_prefix_key, validate_codex_body
from ._codex_ws import codex_websocket
from ._content import estimate_tokens
from ._floors import below, codex_version
from ._http import bearer_token, parse_json_object, record_request, sim_of
from ._records import RequestRecord
from ._responses import DelayedResponse, EventStreamResponse, PacedJSONResponse
from ._turns import Turn

__all__ = ["codex_routes"]


def _json(status: int, body: dict[str, Any] | str, headers: dict[str, str]) -> Response:
    if isinstance(body, str):
        return HTMLResponse(body, status_code=status, headers=headers)
    return JSONResponse(body, status_code=status, headers=headers)


def _reject(
    record: RequestRecord, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> Response:
    record.status = status
    record.outcome = "rejected"
    return JSONResponse(body, status_code=status, headers=headers)


async def _authorize(request: Request, record: RequestRecord) -> Account | Response:
    """Authenticate and check `ChatGPT-Account-Id` (skipped for the account's API key)."""
    sim = sim_of(request)
    account, kind, problem = sim.authenticate(record, bearer_token(request), "codex")
    if account is None or problem is not None:
        status, body = auth_error(problem or "unknown")
        return _reject(record, status, body, {"x-openai-authorization-error": body["error"]["code"]})
    if kind == "access" and account.require_account_id:
        presented = request.headers.get("chatgpt-account-id")
        if presented is None:
            return _reject(
                record, 401, _account_error("Missing ChatGPT-Account-Id header", "missing_account_id")
            )
        if presented != account.account_id:
            detail = "ChatGPT-Account-Id does not match the authenticated user's workspace"
            return _reject(record, 403, _account_error(detail, "account_mismatch"))
    return account


def _account_error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code, "param": None}}


def _common_headers(request: Request, turn: Turn | None, account: Account) -> dict[str, str]:
    sim = sim_of(request)
    with sim.lock:
        headers = rate_limit_headers(account, sim.clock.now())
    seq = turn.record.seq if turn else 0
    request_id = f"req_sim_{seq:08d}"
    headers.update(
        {
            "x-request-id": request_id,
            "x-oai-request-id": request_id,
            "x-models-etag": _models_etag(account),
            "x-codex-turn-state": request.headers.get("x-codex-turn-state") or f"ts_sim_{seq:08d}",
            "openai-model": turn.model if turn else "",
        }
    )
    return headers


def _models_etag(account: Account) -> str:
    return 'W/"' + hashlib.sha256(",".join(account.models).encode()).hexdigest()[:16] + '"'


def error_response(request: Request, turn: Turn) -> Response:
    sim = sim_of(request)
    with sim.lock:
        status, body, extra = codex_error(turn.behaviour, turn.account, sim.clock.now(), turn.quota_window)
    headers = _common_headers(request, turn, turn.account)
    if status == 429 and isinstance(body, dict) and body["error"].get("type") == "usage_limit_reached":
        exhausted = turn.quota_window or "primary"
        headers[f"x-codex-{exhausted}-used-percent"] = "100"
    headers.update(extra)
    return DelayedResponse(_json(status, body, headers), turn.behaviour.header_delay_ms, turn)


async def _floor_refusal(request: Request, record: RequestRecord, model: object) -> Response | None:
    """The backend's 400 for a model above the request's Codex version (CLIENT-3, ``_floors``)."""
    floor = sim_of(request).floors.get("codex", model) if isinstance(model, str) else None
    if floor is None or not below(codex_version(request.headers), floor[0]):
        return None
    if floor[1] > 0:
        await asyncio.sleep(floor[1])
    detail = (
        f"The '{model}' model requires a newer version of Codex. "
        "Please upgrade to the latest app or CLI and try again."
    )
    return _reject(record, 400, {"detail": detail})


async def responses(request: Request) -> Response:
    record, raw = await record_request(request, "codex", "codex.responses")
    authorized = await _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    body = parse_json_object(raw)
    problem = validate_codex_body(body, account, websocket=False)
    if problem is not None or body is None:
        return _reject(record, 400, {"detail": problem})
    refused = await _floor_refusal(request, record, body.get("model"))
    if refused is not None:
        return refused
    sim = sim_of(request)
    turn = sim.begin_turn(
        record,
        account,
        body["model"],
        prompt_tokens=estimate_tokens(raw),
        cache_key=codex_prefix_key(body, codex_cache_key(body, record.headers)),
    )
    if turn.behaviour.kind == "error":
        return error_response(request, turn)
    response_id = f"resp_sim_{record.seq:08d}"
    record.response_id = response_id
    plan = build_codex_plan(turn, body, response_id, int(sim.clock.now()))
    headers = _common_headers(request, turn, account)
    if body.get("stream") is True:
        return EventStreamResponse(
            turn, plan.events, codex_sse_encoder(), plan.failure, headers, plan.success
        )
    failure = {"error": {"code": "server_is_overloaded", "message": "Overloaded", "type": "server_error"}}
    return PacedJSONResponse(turn, plan.final, headers, 503, failure, plan.success)


async def compact(request: Request) -> Response:
    record, raw = await record_request(request, "codex", "codex.compact")
    authorized = await _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    body = parse_json_object(raw)
    if body is None or not isinstance(body.get("model"), str) or not isinstance(body.get("input"), list):
        return _reject(record, 400, {"detail": "A compaction request needs 'model' and an 'input' array"})
    if body["model"] not in account.models:
        return _reject(record, 400, {"detail": f"The '{body['model']}' model is not supported."})
    refused = await _floor_refusal(request, record, body["model"])
    if refused is not None:
        return refused
    sim = sim_of(request)
    turn = sim.begin_turn(record, account, body["model"], prompt_tokens=estimate_tokens(raw), cache_key=None)
    if turn.behaviour.kind == "error":
        return error_response(request, turn)
    kept = [
        item
        for item in body["input"]
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user"
    ]
    summary = {
        "type": "compaction",
        "id": f"cmp_sim_{record.seq:08d}",
        "encrypted_content": f"gAAAAsimcompact{turn.rng.getrandbits(160):040x}",
    }
    usage = turn.usage
    assert usage is not None
    usage.output_tokens = 32
    result = {
        "output": [*kept, summary],
        "usage": {
            "input_tokens": usage.prompt_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.prompt_tokens + usage.output_tokens,
        },
    }
    failure = {"error": {"code": "server_is_overloaded", "message": "Overloaded", "type": "server_error"}}
    return PacedJSONResponse(turn, result, _common_headers(request, turn, account), 503, failure)


async def models(request: Request) -> Response:
    record, _ = await record_request(request, "codex", "codex.models")
    authorized = await _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    account = authorized
    floors = sim_of(request).floors
    entries = [
        {
            "slug": slug,
            "display_name": slug.upper().replace("GPT-", "GPT-"),
            "description": f"Simulated {slug}",
            "default_reasoning_level": "medium",
            "supported_reasoning_levels": [
                {"effort": effort, "description": f"{effort} reasoning"}
                for effort in ("low", "medium", "high", "xhigh")
            ],
            "visibility": "list",
            "supported_in_api": True,
            "priority": index,
            "context_window": 272000,
        }
        for index, slug in enumerate(account.models)
    ]
    for entry in entries:  # CLIENT-3: a scripted floor is listed as the backend lists it
        floor = floors.get("codex", str(entry["slug"]))
        if floor is not None:
            entry["minimal_client_version"] = floor[0]
    etag = _models_etag(account)
    record.status = 200
    record.outcome = "completed"
    return JSONResponse({"models": entries, "etag": etag}, headers={"etag": etag, "x-models-etag": etag})


async def wham_usage(request: Request) -> Response:
    record, _ = await record_request(request, "codex", "codex.usage")
    authorized = await _authorize(request, record)
    if isinstance(authorized, Response):
        return authorized
    sim = sim_of(request)
    outcome, account, now = sim.quota_read(authorized)
    if outcome.kind == "error":
        return _reject(record, outcome.status, {"detail": "Quota read failed (scripted)."})
    with sim.lock:
        payload = usage_payload(account, now)
    record.status = 200
    record.outcome = "completed"
    return JSONResponse(payload)


def codex_routes() -> list[BaseRoute]:
    return [
        Route("/backend-api/codex/responses", responses, methods=["POST"]),
        WebSocketRoute("/backend-api/codex/responses", codex_websocket),
        Route("/backend-api/codex/responses/compact", compact, methods=["POST"]),
        Route("/backend-api/codex/models", models, methods=["GET"]),
        Route("/backend-api/wham/usage", wham_usage, methods=["GET"]),
    ]
