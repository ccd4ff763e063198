"""OAuth endpoints of the three identity providers (PROTOCOLS.md 1.9, 2.6, 3.8).

All three live on one server without colliding: OpenAI `/oauth/token`, Claude `/v1/oauth/token`,
Google `/token`. `/oauth/authorize` is shared by OpenAI and Claude and tells them apart by the
public `client_id` (or an explicit `provider` query parameter).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ._accounts import Account
from ._catalog import Provider
from ._http import bearer_token, record_request, sim_of
from ._logins import CODE_TTL_S, AuthorizationCode
from ._records import RequestRecord
from ._responses import DelayedResponse
from ._script import RefreshOutcome

__all__ = ["CLAUDE_CLIENT_ID", "GOOGLE_CLIENT_ID", "OPENAI_CLIENT_ID", "oauth_routes"]

OPENAI_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
CLAUDE_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
GOOGLE_CLIENT_ID = "1071006060591-tmhssin2h21lcre235vtolojh4g403ep.apps.googleusercontent.com"

_OPENAI_REFRESH_ERRORS = {
    "refresh_token_reused": "Your refresh token has already been used to generate a new access token. "
    "Please try signing in again.",
    "refresh_token_invalidated": "Your refresh token has been invalidated. Please try signing in again.",
    "refresh_token_expired": "Your refresh token has expired. Please try signing in again.",
}


def _params(request: Request, raw: bytes) -> dict[str, str]:
    """Token-endpoint parameters from a JSON or a form body."""
    if "json" in request.headers.get("content-type", ""):
        try:
            data = json.loads(raw)
        except ValueError:
            return {}
        return {k: str(v) for k, v in data.items() if v is not None} if isinstance(data, dict) else {}
    return dict(parse_qsl(raw.decode("utf-8", "replace")))


def _done(
    record: RequestRecord, status: int, body: dict[str, Any], delay_ms: float = 0.0, **headers: str
) -> Response:
    record.status = status
    record.outcome = "completed" if status == 200 else "error"
    response = JSONResponse(
        body, status_code=status, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )
    return DelayedResponse(response, delay_ms) if delay_ms > 0 else response


# == authorize ====================================================================================


def _authorize_provider(request: Request) -> Provider:
    explicit = request.query_params.get("provider")
    if explicit in ("codex", "claude", "antigravity"):
        return explicit  # type: ignore[return-value]
    client_id = request.query_params.get("client_id", "")
    if client_id == CLAUDE_CLIENT_ID or "user:inference" in request.query_params.get("scope", ""):
        return "claude"
    return "codex"


async def _issue_code(request: Request, provider: Provider, endpoint: str) -> Response:
    record, _ = await record_request(request, "oauth", endpoint)
    query = request.query_params
    redirect_uri = query.get("redirect_uri")
    if not redirect_uri or query.get("response_type", "code") != "code":
        return _done(
            record, 400, {"error": "invalid_request", "error_description": "redirect_uri is required"}
        )
    sim = sim_of(request)
    with sim.lock:
        prepared = sim.logins.next_prepared(provider)
        account = sim.get_account(prepared) if prepared else sim.create_login_account(provider)
        code = AuthorizationCode(
            code=f"ac_sim_{sim.mint.text(32)}",
            provider=provider,
            account_id=account.id,
            redirect_uri=redirect_uri,
            state=query.get("state", ""),
            code_challenge=query.get("code_challenge"),
            challenge_method=query.get("code_challenge_method"),
            expires_at=sim.clock.now() + CODE_TTL_S,
        )
        sim.logins.issue(code)
    sim.attribute(record, account, None, "login")
    record.status, record.outcome = 302, "completed"
    separator = "&" if "?" in redirect_uri else "?"
    params = {"code": code.code, "state": code.state}
    if provider == "antigravity":
        params["scope"] = " ".join(account.scopes)
    return RedirectResponse(f"{redirect_uri}{separator}{urlencode(params)}", status_code=302)


async def authorize(request: Request) -> Response:
    provider = _authorize_provider(request)
    return await _issue_code(request, provider, f"{'claude' if provider == 'claude' else 'openai'}.authorize")


async def google_authorize(request: Request) -> Response:
    return await _issue_code(request, "antigravity", "google.authorize")


def _redeem(request: Request, params: dict[str, str], provider: Provider) -> Account | str:
    """Exchange an authorization code: the account, or the reason it is refused."""
    sim = sim_of(request)
    raw_code = params.get("code", "")
    code_value = raw_code.split("#", 1)[0]
    with sim.lock:
        code = sim.logins.find(code_value)
        if code is None or code.provider != provider:
            return "unknown authorization code"
        if code.used:
            return "authorization code already used"
        if code.expires_at <= sim.clock.now():
            return "authorization code expired"
        if params.get("redirect_uri") and params["redirect_uri"] != code.redirect_uri:
            return "redirect_uri does not match"
        if not code.verifier_matches(params.get("code_verifier")):
            return "code_verifier does not match the code_challenge"
        code.used = True
        account = sim.get_account(code.account_id)
    sim.rotate_tokens(account, rotate_refresh=True)
    return account


# == OpenAI =======================================================================================


def _openai_tokens(account: Account, outcome: RefreshOutcome) -> dict[str, Any]:
    body: dict[str, Any] = {
        "access_token": account.access_token,
        "token_type": "Bearer",
        "expires_in": account.access_ttl_s,
        "scope": "openid profile email offline_access",
    }
    if not outcome.omit_id_token:
        body["id_token"] = account.id_token
    if not outcome.omit_refresh_token:
        body["refresh_token"] = account.refresh_token
    return body


def _openai_error(code: str) -> dict[str, Any]:
    message = _OPENAI_REFRESH_ERRORS.get(code, "Invalid refresh token.")
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


async def openai_token(request: Request) -> Response:
    record, raw = await record_request(request, "oauth", "openai.token")
    params = _params(request, raw)
    grant = params.get("grant_type")
    if grant == "authorization_code":
        redeemed = _redeem(request, params, "codex")
        if isinstance(redeemed, str):
            return _done(record, 400, {"error": "invalid_grant", "error_description": redeemed})
        sim_of(request).attribute(record, redeemed, None, "code")
        return _done(record, 200, _openai_tokens(redeemed, RefreshOutcome()))
    if grant != "refresh_token":
        return _done(record, 400, {"error": "unsupported_grant_type", "error_description": f"{grant!r}"})
    sim = sim_of(request)
    token = params.get("refresh_token", "")
    account = sim.find_refresh(token)
    if account is None or account.provider != "codex":
        return _done(record, 401, _openai_error("refresh_token_invalidated"))
    sim.attribute(record, account, token, "refresh")
    if token in account.used_refresh_tokens:
        return _done(record, 401, _openai_error("refresh_token_reused"))
    if account.refresh_state == "revoked":
        return _done(record, 401, _openai_error("refresh_token_invalidated"))
    if account.refresh_state == "expired":
        return _done(record, 401, _openai_error("refresh_token_expired"))
    outcome = sim.take_refresh_outcome(account.id)
    if outcome.kind == "ok":
        sim.rotate_tokens(account, rotate_refresh=not outcome.omit_refresh_token)
        return _done(record, 200, _openai_tokens(account, outcome), outcome.delay_ms)
    if outcome.kind == "error":
        return _transient(record, outcome)
    if outcome.kind == "invalid_grant":
        body = {"error": "invalid_grant", "error_description": "Invalid refresh token"}
        return _done(record, 400, body, outcome.delay_ms)
    return _done(record, 401, _openai_error(outcome.kind), outcome.delay_ms)


def _transient(record: RequestRecord, outcome: RefreshOutcome) -> Response:
    body = {"error": {"message": "The server had an error processing your request.", "type": "server_error"}}
    if outcome.status == 429:
        body = {"error": {"message": "Too many requests", "type": "rate_limit_error"}}
    headers = {} if outcome.retry_after is None else {"retry_after": outcome.retry_after}
    return _done(record, outcome.status, body, outcome.delay_ms, **headers)


# == Claude =======================================================================================


def _claude_tokens(account: Account, outcome: RefreshOutcome) -> dict[str, Any]:
    body: dict[str, Any] = {
        "token_type": "Bearer",
        "access_token": account.access_token,
        "expires_in": account.access_ttl_s,
        "scope": " ".join(account.scopes),
        "organization": {"uuid": account.organization_id, "name": f"{account.email}'s Organization"},
        "account": {"uuid": account.account_id, "email_address": account.email},
    }
    if not outcome.omit_refresh_token:
        body["refresh_token"] = account.refresh_token
    return body


async def claude_token(request: Request) -> Response:
    record, raw = await record_request(request, "oauth", "claude.token")
    params = _params(request, raw)
    grant = params.get("grant_type")
    invalid = {"error": "invalid_grant", "error_description": "Refresh token not found or invalid"}
    if grant == "authorization_code":
        redeemed = _redeem(request, params, "claude")
        if isinstance(redeemed, str):
            return _done(record, 400, {"error": "invalid_grant", "error_description": redeemed})
        sim_of(request).attribute(record, redeemed, None, "code")
        return _done(record, 200, _claude_tokens(redeemed, RefreshOutcome()))
    if grant != "refresh_token":
        return _done(record, 400, {"error": "unsupported_grant_type", "error_description": f"{grant!r}"})
    sim = sim_of(request)
    token = params.get("refresh_token", "")
    account = sim.find_refresh(token)
    if account is None or account.provider != "claude":
        return _done(record, 400, invalid)
    sim.attribute(record, account, token, "refresh")
    if token in account.used_refresh_tokens or account.refresh_state == "revoked":
        return _done(record, 400, invalid)
    if account.refresh_state == "expired":
        return _done(record, 400, {"error": "invalid_grant", "error_description": "Refresh token expired"})
    outcome = sim.take_refresh_outcome(account.id)
    if outcome.kind == "ok":
        sim.rotate_tokens(account, rotate_refresh=not outcome.omit_refresh_token)
        return _done(record, 200, _claude_tokens(account, outcome), outcome.delay_ms)
    if outcome.kind == "error":
        body = {"error": "rate_limited" if outcome.status == 429 else "server_error",
                "error_description": "Try again later"}  # fmt: skip
        headers = {} if outcome.retry_after is None else {"retry_after": outcome.retry_after}
        return _done(record, outcome.status, body, outcome.delay_ms, **headers)
    if outcome.kind == "refresh_token_expired":
        body = {"error": "invalid_grant", "error_description": "Refresh token expired"}
        return _done(record, 400, body, outcome.delay_ms)
    return _done(record, 400, invalid, outcome.delay_ms)


# == Google =======================================================================================


def _google_tokens(account: Account, *, with_refresh: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "access_token": account.access_token,
        "expires_in": account.access_ttl_s,
        "scope": " ".join(account.scopes),
        "token_type": "Bearer",
    }
    if with_refresh:
        body["refresh_token"] = account.refresh_token
    return body


async def google_token(request: Request) -> Response:
    record, raw = await record_request(request, "oauth", "google.token")
    params = _params(request, raw)
    grant = params.get("grant_type")
    revoked = {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
    if grant == "authorization_code":
        redeemed = _redeem(request, params, "antigravity")
        if isinstance(redeemed, str):
            return _done(record, 400, {"error": "invalid_grant", "error_description": "Malformed auth code."})
        sim_of(request).attribute(record, redeemed, None, "code")
        return _done(record, 200, _google_tokens(redeemed, with_refresh=True))
    if grant != "refresh_token":
        return _done(
            record, 400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type"}
        )
    sim = sim_of(request)
    token = params.get("refresh_token", "")
    account = sim.find_refresh(token)
    if account is None or account.provider != "antigravity":
        return _done(record, 400, revoked)
    sim.attribute(record, account, token, "refresh")
    if account.refresh_state != "live" or token != account.refresh_token:
        return _done(record, 400, revoked)
    outcome = sim.take_refresh_outcome(account.id)
    if outcome.kind == "ok":
        # Google does not rotate refresh tokens: only a new access token is minted.
        sim.rotate_tokens(account, rotate_refresh=False)
        return _done(record, 200, _google_tokens(account, with_refresh=False), outcome.delay_ms)
    if outcome.kind == "error":
        body = {"error": "internal_failure", "error_description": "Backend error"}
        headers = {} if outcome.retry_after is None else {"retry_after": outcome.retry_after}
        return _done(record, outcome.status, body, outcome.delay_ms, **headers)
    return _done(record, 400, revoked, outcome.delay_ms)


async def google_userinfo(request: Request) -> Response:
    record, _ = await record_request(request, "oauth", "google.userinfo")
    sim = sim_of(request)
    account, _, problem = sim.authenticate(record, bearer_token(request), "antigravity")
    if account is None or problem is not None:
        body = {"error": {"code": 401, "message": "Request is missing required authentication credential.",
                          "status": "UNAUTHENTICATED"}}  # fmt: skip
        return _done(record, 401, body)
    name = account.email.split("@")[0]
    return _done(
        record,
        200,
        {
            "id": account.account_id,
            "email": account.email,
            "verified_email": True,
            "name": name,
            "given_name": name,
            "picture": "https://sim.invalid/avatar.png",
        },
    )


def oauth_routes() -> list[BaseRoute]:
    return [
        Route("/oauth/authorize", authorize, methods=["GET"]),
        Route("/oauth/token", openai_token, methods=["POST"]),
        Route("/v1/oauth/token", claude_token, methods=["POST"]),
        Route("/o/oauth2/v2/auth", google_authorize, methods=["GET"]),
        Route("/token", google_token, methods=["POST"]),
        Route("/oauth2/v2/userinfo", google_userinfo, methods=["GET"]),
    ]
