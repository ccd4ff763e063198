"""The `/_sim/` HTTP control API: the same operations as the Python `Simulator` methods."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ._http import sim_of
from ._script import Behaviour, QuotaReadOutcome, RefreshOutcome
from ._simulator import SimAccount, Simulator

__all__ = ["control_routes"]

Handler = Callable[[Request], Awaitable[Response]]


def _guarded(handler: Callable[[Request, Simulator], Awaitable[Any]]) -> Handler:
    """Run a control handler; bad input becomes a 400/404 JSON error instead of a 500."""

    async def endpoint(request: Request) -> Response:
        try:
            result = await handler(request, sim_of(request))
        except KeyError as exc:
            return JSONResponse({"error": str(exc.args[0]) if exc.args else "not found"}, status_code=404)
        except (ValueError, TypeError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        if isinstance(result, Response):
            return result
        return JSONResponse(result)

    return endpoint


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise ValueError("body must be JSON") from None
    if not isinstance(data, dict):
        raise ValueError("body must be a JSON object")
    return data


def _account_json(sim: Simulator, account: SimAccount) -> dict[str, Any]:
    return sim.account_state(account.id)


async def health(request: Request, sim: Simulator) -> Any:
    return {"ok": True, "now": sim.clock.now(), "urls": sim.env()}


async def create_account(request: Request, sim: Simulator) -> Any:
    options = await _body(request)
    provider = options.pop("provider", None)
    if not isinstance(provider, str):
        raise ValueError("'provider' is required: codex, claude, antigravity or gemini")
    account = sim.create_account(provider, **options)  # type: ignore[arg-type]
    return JSONResponse(_account_json(sim, account), status_code=201)


async def list_accounts(request: Request, sim: Simulator) -> Any:
    return {"accounts": [sim.account_state(a.id) for a in sim.accounts()]}


async def get_account(request: Request, sim: Simulator) -> Any:
    return sim.account_state(request.path_params["account_id"])


async def patch_account(request: Request, sim: Simulator) -> Any:
    account = sim.update_account(request.path_params["account_id"], **(await _body(request)))
    return _account_json(sim, account)


async def credentials(request: Request, sim: Simulator) -> Any:
    return sim.credentials(request.path_params["account_id"])


async def push_script(request: Request, sim: Simulator) -> Any:
    body = await _body(request)
    raw = body.get("behaviours")
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise ValueError("'behaviours' must be a list of objects")
    behaviours = [Behaviour.from_dict(item) for item in raw]
    account_id = request.path_params["account_id"]
    sim.script(account_id, *behaviours, model=body.get("model"))
    return sim.account_state(account_id)["script"]


async def clear_script(request: Request, sim: Simulator) -> Any:
    sim.clear_script(request.path_params["account_id"])
    return {"ok": True}


async def set_default(request: Request, sim: Simulator) -> Any:
    behaviour = Behaviour.from_dict(await _body(request))
    sim.set_default(request.path_params["account_id"], behaviour)
    return behaviour.as_dict()


async def push_refresh(request: Request, sim: Simulator) -> Any:
    raw = (await _body(request)).get("outcomes")
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise ValueError("'outcomes' must be a list of objects")
    sim.script_refresh(request.path_params["account_id"], *(RefreshOutcome.from_dict(item) for item in raw))
    return {"ok": True}


async def push_quota_reads(request: Request, sim: Simulator) -> Any:
    raw = (await _body(request)).get("outcomes")
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise ValueError("'outcomes' must be a list of objects")
    account_id = request.path_params["account_id"]
    sim.script_quota_reads(account_id, *(QuotaReadOutcome.from_dict(item) for item in raw))
    return {"ok": True, "quota_reads": sim.quota_reads(account_id)}


async def set_quota(request: Request, sim: Simulator) -> Any:
    body = await _body(request)
    window = body.get("window")
    if not isinstance(window, str):
        raise ValueError("'window' is required")
    return sim.set_quota(
        request.path_params["account_id"],
        window,
        used_percent=body.get("used_percent"),
        reset_in_s=body.get("reset_in_s"),
    )


async def get_quota(request: Request, sim: Simulator) -> Any:
    return sim.quota(request.path_params["account_id"])


def _token_action(action: Callable[[Simulator, str], None]) -> Handler:
    async def handler(request: Request, sim: Simulator) -> Any:
        action(sim, request.path_params["account_id"])
        return sim.account_state(request.path_params["account_id"])

    return _guarded(handler)


async def account_counters(request: Request, sim: Simulator) -> Any:
    sim.account(request.path_params["account_id"])
    return sim.counters(request.path_params["account_id"]).as_dict()


async def all_counters(request: Request, sim: Simulator) -> Any:
    return sim.all_counters()


async def list_requests(request: Request, sim: Simulator) -> Any:
    query = request.query_params
    limit = query.get("limit")
    records = sim.requests(
        account_id=query.get("account_id"),
        provider=query.get("provider"),
        endpoint=query.get("endpoint"),
        limit=int(limit) if limit else None,
    )
    return {"requests": [r.as_dict() for r in records]}


async def clear_requests(request: Request, sim: Simulator) -> Any:
    sim.clear_requests()
    return {"ok": True}


async def clock(request: Request, sim: Simulator) -> Any:
    if request.method == "POST":
        body = await _body(request)
        if "set" in body:
            sim.clock.set(float(body["set"]))
        else:
            sim.clock.advance(float(body.get("seconds", 0)))
    return {"now": sim.clock.now()}


async def prepare_login(request: Request, sim: Simulator) -> Any:
    body = await _body(request)
    sim.prepare_login(body["provider"], body["account_id"])
    return {"ok": True}


async def reset(request: Request, sim: Simulator) -> Any:
    sim.reset()
    return {"ok": True}


def control_routes() -> list[BaseRoute]:
    account = "/_sim/accounts/{account_id}"
    return [
        Route("/_sim/health", _guarded(health), methods=["GET"]),
        Route("/_sim/accounts", _guarded(create_account), methods=["POST"]),
        Route("/_sim/accounts", _guarded(list_accounts), methods=["GET"]),
        Route(account, _guarded(get_account), methods=["GET"]),
        Route(account, _guarded(patch_account), methods=["PATCH"]),
        Route(f"{account}/credentials", _guarded(credentials), methods=["GET"]),
        Route(f"{account}/script", _guarded(push_script), methods=["POST"]),
        Route(f"{account}/script", _guarded(clear_script), methods=["DELETE"]),
        Route(f"{account}/default", _guarded(set_default), methods=["PUT"]),
        Route(f"{account}/refresh-script", _guarded(push_refresh), methods=["POST"]),
        Route(f"{account}/quota", _guarded(set_quota), methods=["PUT"]),
        Route(f"{account}/quota", _guarded(get_quota), methods=["GET"]),
        Route(f"{account}/quota-reads", _guarded(push_quota_reads), methods=["POST"]),
        Route(f"{account}/expire-access", _token_action(Simulator.expire_access_tokens), methods=["POST"]),
        Route(f"{account}/revoke-access", _token_action(Simulator.revoke_access_tokens), methods=["POST"]),
        Route(f"{account}/revoke-refresh", _token_action(Simulator.revoke_refresh_token), methods=["POST"]),
        Route(f"{account}/expire-refresh", _token_action(Simulator.expire_refresh_token), methods=["POST"]),
        Route(f"{account}/counters", _guarded(account_counters), methods=["GET"]),
        Route("/_sim/counters", _guarded(all_counters), methods=["GET"]),
        Route("/_sim/requests", _guarded(list_requests), methods=["GET"]),
        Route("/_sim/requests", _guarded(clear_requests), methods=["DELETE"]),
        Route("/_sim/clock", _guarded(clock), methods=["GET", "POST"]),
        Route("/_sim/logins", _guarded(prepare_login), methods=["POST"]),
        Route("/_sim/reset", _guarded(reset), methods=["POST"]),
    ]
