"""CRED-1…8 on the Codex path, end to end: a real gateway, the real simulator, the gateway's clock moved.

The gateway and the simulator keep separate clocks. Moving only the gateway's makes a token *look*
close to expiry to SubLane while the simulator still accepts it; tokens the simulator mints are
valid for ``access_ttl_s`` from the simulator's time.

CRED-7 (bound conversations stay bound during recovery) waits for conversation affinity, which the
scheduler does not have yet; it is proven with the scheduler.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_pool import Pool, settings_for
from sqlmodel import Session
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from sublane_core import Account, signals
from sublane_gateway.testing import Gateway, running_gateway, serve_in_thread
from sublane_sim import Behaviour, RefreshOutcome, SimAccount, Simulator

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}
DAY_S = 24 * 3600
# Imported tokens expire within the 2-minute refresh margin. The catalogue read that follows an
# import (CAT-1) is over when a pool is handed out and, being a metadata read, spent no refresh on
# them: a test's first call refreshes at its dispatch, after selection (CRED-2, OPS-5).
SHORT = {"access_ttl_s": 100}


# -- helpers -----------------------------------------------------------------------------------------


def _row(gateway: Gateway, account_id: int) -> Account:
    with Session(gateway.engine) as db:
        row = db.get(Account, account_id)
        assert row is not None
        return row


def _bundle(gateway: Gateway, account_id: int) -> dict[str, Any]:
    bundle: dict[str, Any] = gateway.app.state.gateway.cipher.decrypt(_row(gateway, account_id).credentials)
    return bundle


def _left(gateway: Gateway, account_id: int) -> float:
    """Seconds the stored access token has left, on the gateway's clock."""
    expires_at = _row(gateway, account_id).credentials_expires_at
    assert expires_at is not None
    return expires_at - gateway.clock.time()


def _leave(pool: Pool, seconds: float, index: int = 0) -> None:
    """Move both clocks until the account's token has ``seconds`` left (the simulator still takes it)."""
    step = _left(pool.gateway, pool.account_ids[index]) - seconds
    pool.gateway.clock.advance(step)
    pool.sim.advance_clock(step)


def _short_pool(make_pool: Callable[..., Pool], accounts: int = 1, **settings: Any) -> Pool:
    """Accounts whose imported token is within the refresh margin; the tokens refreshes mint last a day."""
    pool = make_pool(accounts=accounts, account_options=SHORT, **settings)
    for account in pool.sim_accounts:
        pool.sim.update_account(account.id, access_ttl_s=DAY_S)
    return pool


def _call(pool: Pool) -> httpx.Response:
    return pool.client().post("/v1/responses", json=BODY)


def _calls(pool: Pool, count: int) -> list[httpx.Response]:
    """``count`` requests at once, each on its own connection."""
    clients = [pool.client() for _ in range(count)]
    with ThreadPoolExecutor(count) as workers:
        return list(workers.map(lambda client: client.post("/v1/responses", json=BODY), clients))


def _bearers(sim: Simulator, account: SimAccount) -> list[str]:
    """The access token of every model call the account received, in order."""
    calls = sim.requests(account_id=account.id, endpoint="codex.responses")
    return [call.headers["authorization"].removeprefix("Bearer ") for call in calls]


def _code(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


def _auth_state(pool: Pool, account_id: int) -> tuple[str, str | None]:
    account = pool.admin.get(f"/api/accounts/{account_id}").json()
    return account["auth_state"], account["auth_error"]


@pytest.fixture
def penalties() -> Iterator[list[object]]:
    """Every cooldown-relevant signal sent during the test (model-call failures, rate limits)."""
    seen: list[object] = []
    disconnects = [
        signals.upstream_failed.connect(seen.append),
        signals.upstream_rate_limited.connect(seen.append),
    ]
    yield seen
    for disconnect in disconnects:
        disconnect()


@contextmanager
def _gateway_on(sim: Simulator, data_dir: Path) -> Iterator[Gateway]:
    """A gateway on ``data_dir``: leaving the block stops it, so the next one is a restart."""
    with running_gateway(settings_for(sim, data_dir)) as gateway:
        yield gateway


def _import(gateway: Gateway, account: SimAccount) -> tuple[int, str]:
    """Import ``account`` into the default group; the account's id and a member key."""
    admin = gateway.admin()
    body = {"provider": "codex", "name": "codex-1", "credentials": account.credentials, "group_ids": [1]}
    imported = admin.post("/api/accounts/import", json=body)
    assert imported.status_code == 201, imported.text
    key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    return imported.json()["id"], key


def _post(gateway: Gateway, key: str) -> httpx.Response:
    return gateway.client().post("/v1/responses", json=BODY, headers={"authorization": f"Bearer {key}"})


@contextmanager
def _token_endpoint(status: int, body: str, content_type: str) -> Iterator[str]:
    """A real OAuth server that answers every token request with one fixed error (a proxy, say)."""

    async def token(_request: Request) -> Response:
        if content_type == "text/html":
            return HTMLResponse(body, status_code=status)
        return Response(body, status_code=status, media_type=content_type)

    with serve_in_thread(Starlette(routes=[Route("/oauth/token", token, methods=["POST"])])) as url:
        yield url


# -- CRED-1: refresh before use ----------------------------------------------------------------------


def test_cred_1_token_near_expiry_is_refreshed_before_use(make_pool: Callable[..., Pool]) -> None:
    pool = _short_pool(make_pool)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    response = _call(pool)
    assert response.status_code == 200 and "response.completed" in response.text
    assert pool.sim.counters(account.id).refreshes == 1
    fresh = pool.sim.account(account.id)
    assert _bearers(pool.sim, account) == [fresh.access_token] != [account.access_token]
    stored = _bundle(pool.gateway, account_id)
    assert stored["refresh_token"] == fresh.refresh_token != account.refresh_token
    assert stored["access_token"] == fresh.access_token
    assert _row(pool.gateway, account_id).credentials_expires_at == int(fresh.access_expires_at)
    assert pool.finished[-1].outcome == "success"


def test_cred_1_a_token_with_more_than_2_minutes_left_is_not_refreshed(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(account_options={"access_ttl_s": 600})
    _leave(pool, 125)
    assert _call(pool).status_code == 200
    assert pool.sim.counters(pool.sim_accounts[0].id).refreshes == 0
    _leave(pool, 119)
    assert _call(pool).status_code == 200
    assert pool.sim.counters(pool.sim_accounts[0].id).refreshes == 1


@pytest.mark.parametrize("new_ttl_s", [DAY_S, 100], ids=["long-lived", "short-lived"])
def test_cred_1_concurrent_requests_share_one_refresh(make_pool: Callable[..., Pool], new_ttl_s: int) -> None:
    # 800 s tokens: the first call finds models without a refresh, and the model list stays cached
    # (15 min) while the clock moves the token into the refresh margin.
    pool = make_pool(account_options={"access_ttl_s": 800})
    account = pool.sim_accounts[0]
    assert _call(pool).status_code == 200
    pool.sim.update_account(account.id, access_ttl_s=new_ttl_s)
    # callers pile up meanwhile: all 8 must arrive before it ends, even on a loaded machine (a caller
    # arriving after it sees a token issued with less than the margin left, and refreshes it again)
    pool.sim.script_refresh(account.id, RefreshOutcome(delay_ms=1500))
    _leave(pool, 110)
    responses = _calls(pool, 8)
    assert [response.status_code for response in responses] == [200] * 8
    assert pool.sim.counters(account.id).refreshes == 1  # one refresh, whoever asked
    fresh = pool.sim.account(account.id).access_token
    assert _bearers(pool.sim, account)[1:] == [fresh] * 8


def test_cred_1_rotated_bundle_is_persisted_sealed_before_use_and_survives_restart(
    sim: Simulator, tmp_path: Path
) -> None:
    account = sim.create_account("codex", **SHORT)
    sim.update_account(account.id, access_ttl_s=3600)
    data_dir = tmp_path / "data"
    with _gateway_on(sim, data_dir) as gateway:
        account_id, key = _import(gateway, account)
        sim.script(account.id, Behaviour.ok(deltas=4, pacing_ms=100))
        with (
            gateway.client() as client,
            client.stream(
                "POST", "/v1/responses", json=BODY, headers={"authorization": f"Bearer {key}"}
            ) as streaming,
        ):
            lines = streaming.iter_lines()
            assert any("output_text.delta" in line for line in lines)
            assert sim.counters(account.id).current_streams == 1  # the new token is in use now…
            fresh = sim.account(account.id)
            assert _bundle(gateway, account_id)["refresh_token"] == fresh.refresh_token  # …and stored
            assert any("response.completed" in line for line in lines)
        assert _bearers(sim, account) == [fresh.access_token]
    stored = b"".join(path.read_bytes() for path in data_dir.glob("sublane.db*"))
    assert fresh.refresh_token.encode() not in stored and fresh.access_token.encode() not in stored
    assert account.refresh_token != fresh.refresh_token  # the imported one is dead upstream now

    with _gateway_on(sim, data_dir) as restarted:
        for clock in (restarted.clock, sim.clock):
            clock.advance(3600 - 60)  # the stored token is due again: refresh with the stored one
        response = _post(restarted, key)
        assert response.status_code == 200, response.text
        assert sim.counters(account.id).refreshes == 2
        assert _bearers(sim, account)[-1] == sim.account(account.id).access_token
        assert _row(restarted, account_id).auth_state == "ok"


# -- CRED-2: the old token while it lasts ------------------------------------------------------------


def test_cred_2_transient_refresh_failure_uses_a_token_with_more_than_30_s_left(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(account_options=SHORT)
    account = pool.sim_accounts[0]
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="error", status=500))
    response = _call(pool)
    assert response.status_code == 200 and "response.completed" in response.text
    assert pool.sim.counters(account.id).refreshes == 1
    assert _bearers(pool.sim, account) == [account.access_token]  # the old one, still good
    assert pool.runtime.vault.refresh_retry_at(pool.account_ids[0]) is not None


def test_cred_2_no_fallback_with_30_s_or_less_left(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(account_options=SHORT)
    account = pool.sim_accounts[0]
    _leave(pool, 29)
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="error", status=500))
    response = _call(pool)
    assert response.status_code == 503 and _code(response) == "account_refresh_failed"
    assert response.headers["retry-after"] == "30"
    assert pool.sim.counters(account.id).model_requests == 0


def test_cred_2_expiry_is_checked_again_after_the_refresh_attempt(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(account_options={"access_ttl_s": 800})
    account = pool.sim_accounts[0]
    assert _call(pool).status_code == 200  # models known; no refresh needed yet
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="error", status=500, delay_ms=1500))
    _leave(pool, 31)  # fallback-eligible when the refresh starts, not when it has failed
    response = _call(pool)
    assert response.status_code == 503 and _code(response) == "account_refresh_failed"
    assert pool.sim.counters(account.id).model_requests == 1


# -- CRED-3: per-account backoff ---------------------------------------------------------------------


def test_cred_3_refresh_backoff_grows_30_60_120_240_then_300_s(make_pool: Callable[..., Pool]) -> None:
    pool = _short_pool(make_pool)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script_refresh(account.id, *[RefreshOutcome(kind="error", status=500)] * 6)
    _leave(pool, 20)  # no fallback: every answer shows the refresh schedule
    clock = pool.gateway.clock

    def refused() -> str:
        response = _call(pool)
        assert response.status_code == 503 and _code(response) == "account_refresh_failed"
        return response.headers["retry-after"]

    for attempt, delay in enumerate((30, 60, 120, 240, 300, 300), start=1):
        assert refused() == str(delay)
        assert pool.sim.counters(account.id).refreshes == attempt
        clock.advance(delay - 1)
        assert refused() == "1"
        assert pool.sim.counters(account.id).refreshes == attempt  # nothing before the delay is over
        clock.advance(1)
    assert _call(pool).status_code == 200  # the script is used up: this refresh succeeds
    assert pool.sim.counters(account.id).refreshes == 7
    assert pool.runtime.vault.refresh_retry_at(account_id) is None


@pytest.mark.parametrize(("retry_after", "honoured"), [("600", 600), ("7200", 3600)])
def test_cred_3_oauth_retry_after_is_honoured_up_to_an_hour(
    make_pool: Callable[..., Pool], retry_after: str, honoured: int
) -> None:
    pool = _short_pool(make_pool)
    account = pool.sim_accounts[0]
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="error", status=429, retry_after=retry_after))
    _leave(pool, 20)
    refused = _call(pool)
    assert refused.status_code == 503 and refused.headers["retry-after"] == str(honoured)
    pool.gateway.clock.advance(honoured - 2)
    assert _call(pool).status_code == 503
    assert pool.sim.counters(account.id).refreshes == 1
    pool.gateway.clock.advance(2)
    assert _call(pool).status_code == 200
    assert pool.sim.counters(account.id).refreshes == 2


def test_cred_3_each_account_has_its_own_schedule(make_pool: Callable[..., Pool]) -> None:
    pool = _short_pool(make_pool, accounts=2)
    failing, healthy = pool.sim_accounts
    pool.sim.script_refresh(failing.id, RefreshOutcome(kind="error", status=502))
    _call(pool)
    _call(pool)
    vault = pool.runtime.vault
    assert vault.refresh_retry_at(pool.account_ids[0]) is not None
    assert vault.refresh_retry_at(pool.account_ids[1]) is None
    assert pool.sim.counters(failing.id).refreshes == 1 and pool.sim.counters(healthy.id).refreshes == 1


def test_cred_3_a_401_during_the_backoff_does_not_refresh_early(make_pool: Callable[..., Pool]) -> None:
    pool = _short_pool(make_pool)
    account = pool.sim_accounts[0]
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="error", status=500))
    pool.sim.script(account.id, Behaviour.error(401))
    response = _call(pool)  # fallback token, which the model endpoint rejects
    assert response.status_code == 503 and _code(response) == "account_refresh_failed"
    assert 1 <= int(response.headers["retry-after"]) <= 30
    assert pool.sim.counters(account.id).refreshes == 1
    pool.gateway.clock.advance(30)
    assert _call(pool).status_code == 200
    assert pool.sim.counters(account.id).refreshes == 2


# -- CRED-4: no usable token -------------------------------------------------------------------------


def test_cred_4_no_usable_token_is_503_account_refresh_failed_in_openai_shape(
    make_pool: Callable[..., Pool], penalties: list[object], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    pool = _short_pool(make_pool)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="error", status=503))
    _leave(pool, 10)
    response = _call(pool)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "30" and response.headers["x-request-id"].startswith("req_")
    assert response.json() == {
        "error": {
            "message": "The account's credentials could not be refreshed.",
            "type": "server_error",
            "param": None,
            "code": "account_refresh_failed",
        }
    }
    record = pool.finished[-1]
    assert record.outcome == "error" and record.error_code == "account_refresh_failed"
    assert record.account_id == account_id
    assert penalties == []  # a refresh failure is not a model failure: no cooldown
    assert pool.sim.counters(account.id).model_requests == 0
    assert pool.runtime.leases.total_in_flight() == 0
    assert "credential refresh of account" in caplog.text
    assert account.refresh_token not in caplog.text and account.access_token not in caplog.text


def test_cred_4_a_successful_refresh_clears_the_retry_state(make_pool: Callable[..., Pool]) -> None:
    pool = _short_pool(make_pool)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script_refresh(account.id, *[RefreshOutcome(kind="error", status=500)] * 2)
    _leave(pool, 10)
    assert _call(pool).headers["retry-after"] == "30"
    pool.gateway.clock.advance(30)
    assert _call(pool).headers["retry-after"] == "60"
    pool.gateway.clock.advance(60)
    assert _call(pool).status_code == 200
    assert pool.runtime.vault.refresh_retry_at(account_id) is None
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="error", status=500))
    _leave(pool, 10)
    assert _call(pool).headers["retry-after"] == "30"  # the schedule starts over


# -- CRED-5: a rejection is stored -------------------------------------------------------------------


def test_cred_5_a_401_refreshes_once_for_all_concurrent_callers(
    make_pool: Callable[..., Pool], penalties: list[object]
) -> None:
    pool = make_pool()
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    assert _call(pool).status_code == 200
    pool.sim.expire_access_tokens(account.id)  # SubLane still believes the token has days left
    pool.sim.script_refresh(account.id, RefreshOutcome(delay_ms=300))
    responses = _calls(pool, 6)
    assert [response.status_code for response in responses] == [200] * 6
    assert pool.sim.counters(account.id).refreshes == 1
    fresh = pool.sim.account(account.id).access_token
    bearers = _bearers(pool.sim, account)[1:]
    assert bearers.count(fresh) == 6 and set(bearers) <= {account.access_token, fresh}
    assert _row(pool.gateway, account_id).credentials_rejected_at is None
    assert penalties == []


def test_cred_5_a_rejected_token_is_not_used_again_even_after_a_restart(
    sim: Simulator, tmp_path: Path
) -> None:
    account = sim.create_account("codex")  # ten days left: fallback-eligible by time alone
    data_dir = tmp_path / "data"
    with _gateway_on(sim, data_dir) as gateway:
        account_id, key = _import(gateway, account)
        sim.script(account.id, Behaviour.error(401))
        sim.script_refresh(account.id, RefreshOutcome(kind="error", status=500))
        refused = _post(gateway, key)
        assert refused.status_code == 503 and _code(refused) == "account_refresh_failed"
        assert _row(gateway, account_id).credentials_rejected_at is not None
        assert _post(gateway, key).status_code == 503  # rejected: no fallback, not even once
        assert sim.counters(account.id).model_requests == 1

    with _gateway_on(sim, data_dir) as restarted:
        sim.script_refresh(account.id, RefreshOutcome(kind="error", status=500))
        again = _post(restarted, key)  # the backoff was in memory; the rejection was not
        assert again.status_code == 503 and _code(again) == "account_refresh_failed"
        assert sim.counters(account.id).model_requests == 1
        assert sim.counters(account.id).refreshes == 2
        restarted.clock.advance(30)
        recovered = _post(restarted, key)
        assert recovered.status_code == 200
        assert _bearers(sim, account) == [account.access_token, sim.account(account.id).access_token]
        assert _row(restarted, account_id).credentials_rejected_at is None


# -- CRED-6: when re-authorization is required -------------------------------------------------------


@pytest.mark.parametrize(
    "kind", ["invalid_grant", "refresh_token_reused", "refresh_token_invalidated", "refresh_token_expired"]
)
def test_cred_6_explicit_token_endpoint_errors_require_reauthorization(
    make_pool: Callable[..., Pool], kind: Any
) -> None:
    pool = _short_pool(make_pool)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script_refresh(account.id, RefreshOutcome(kind=kind))
    response = _call(pool)
    assert response.status_code == 503 and _code(response) == "reauth_required"
    assert _auth_state(pool, account_id) == ("reauth_required", kind)
    assert _call(pool).status_code != 200
    assert pool.sim.counters(account.id).refreshes == 1  # a dead refresh token is not tried again
    assert pool.sim.counters(account.id).model_requests == 0


@pytest.mark.parametrize(
    "outcome",
    [
        RefreshOutcome(kind="error", status=500),
        RefreshOutcome(kind="error", status=502),
        RefreshOutcome(kind="error", status=400),
        RefreshOutcome(kind="error", status=401),
    ],
    ids=["500", "502", "400-without-code", "401-without-code"],
)
def test_cred_6_other_token_endpoint_failures_do_not(
    make_pool: Callable[..., Pool], outcome: RefreshOutcome
) -> None:
    pool = make_pool(account_options=SHORT)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script_refresh(account.id, outcome)
    assert _call(pool).status_code == 200  # the old token still had 100 s (CRED-2)
    assert pool.sim.counters(account.id).refreshes == 1
    assert _auth_state(pool, account_id) == ("ok", None)
    assert pool.runtime.vault.refresh_retry_at(account_id) is not None


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (400, "<html><body><h1>400 Bad Request</h1>nginx</body></html>", "text/html"),
        (401, '{"error": "invalid_client", "error_description": "Unknown client"}', "application/json"),
        (400, '{"error": {"code": "unsupported_country_region_territory"}}', "application/json"),
    ],
    ids=["html-proxy-page", "oauth-client-error", "unknown-400-code"],
)
def test_cred_6_proxy_pages_and_client_configuration_errors_do_not(
    make_pool: Callable[..., Pool], status: int, body: str, content_type: str
) -> None:
    with _token_endpoint(status, body, content_type) as auth_url:
        pool = _short_pool(make_pool, openai_auth_url=auth_url)
        account_id = pool.account_ids[0]
        _leave(pool, 20)
        response = _call(pool)
        assert response.status_code == 503 and _code(response) == "account_refresh_failed"
        assert _auth_state(pool, account_id) == ("ok", None)


def test_cred_6_a_refreshed_token_still_rejected_requires_reauthorization(
    make_pool: Callable[..., Pool], penalties: list[object]
) -> None:
    pool = make_pool()
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script(account.id, Behaviour.error(401), Behaviour.error(401))
    response = _call(pool)
    assert response.status_code == 503 and _code(response) == "reauth_required"
    assert pool.sim.counters(account.id).refreshes == 1
    assert _bearers(pool.sim, account) == [account.access_token, pool.sim.account(account.id).access_token]
    assert _auth_state(pool, account_id) == ("reauth_required", "rejected_after_refresh")
    assert penalties == []


def test_cred_6_reimporting_credentials_clears_reauthorization(make_pool: Callable[..., Pool]) -> None:
    pool = _short_pool(make_pool)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="refresh_token_invalidated"))
    assert _code(_call(pool)) == "reauth_required"
    assert _auth_state(pool, account_id) == ("reauth_required", "refresh_token_invalidated")
    reimported = pool.admin.post(
        f"/api/accounts/{account_id}/credentials", json={"credentials": pool.sim.credentials(account.id)}
    )
    assert reimported.status_code == 200 and reimported.json()["auth_state"] == "ok"
    assert _call(pool).status_code == 200
    assert _bearers(pool.sim, account) == [pool.sim.account(account.id).access_token]
    assert pool.runtime.vault.refresh_retry_at(account_id) is None


def test_cred_6_callers_waiting_on_a_refresh_that_kills_the_token_do_not_try_it_again(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(account_options={"access_ttl_s": 800})
    account = pool.sim_accounts[0]
    assert _call(pool).status_code == 200  # models known
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="refresh_token_reused", delay_ms=300))
    _leave(pool, 110)
    responses = _calls(pool, 4)
    assert [_code(response) for response in responses] == ["reauth_required"] * 4
    assert pool.sim.counters(account.id).refreshes == 1
    assert _auth_state(pool, pool.account_ids[0]) == ("reauth_required", "refresh_token_reused")


def test_cred_6_an_account_needing_reauthorization_stops_getting_requests(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    dead, alive = pool.sim_accounts
    assert [_call(pool).status_code for _ in range(2)] == [200, 200]  # one each, models known
    pool.sim.revoke_refresh_token(dead.id)
    pool.sim.expire_access_tokens(dead.id)
    codes = []
    for _ in range(5):
        response = _call(pool)
        codes.append(response.status_code if response.status_code == 200 else _code(response))
    assert codes == [200] * 5  # the call that met the 401 moved on to the other account (FAIL-1)
    assert len(_bearers(pool.sim, dead)) == 2  # one success, one 401, then left out
    assert len(_bearers(pool.sim, alive)) == 6


# -- CRED-8: 403 is not a credential problem ---------------------------------------------------------


def test_cred_8_a_403_is_upstream_forbidden_and_never_refreshes(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script(account.id, Behaviour.error(403))
    response = _call(pool)
    assert response.status_code == 403 and _code(response) == "upstream_forbidden"
    assert pool.sim.counters(account.id).refreshes == 0
    assert _row(pool.gateway, account_id).credentials_rejected_at is None
    assert _auth_state(pool, account_id) == ("ok", None)
    assert _call(pool).status_code == 200
    assert _bearers(pool.sim, account) == [account.access_token] * 2


def test_ops_5_accounts_in_refresh_backoff_take_no_new_conversation(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(account_options=SHORT)
    account = pool.sim_accounts[0]
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="error", status=500))

    def call(session: str) -> httpx.Response:
        return pool.client().post("/v1/responses", json=BODY, headers={"session_id": session})

    assert call("first").status_code == 200  # the refresh failed at its dispatch: the old token (CRED-2)
    refused = call("second")  # every candidate backs off: nothing is chosen anew
    assert refused.status_code == 503 and _code(refused) == "account_refresh_failed"
    assert 1 <= int(refused.headers["retry-after"]) <= 30
    assert pool.sim.counters(account.id).model_requests == 1
    other = pool.add_account("codex", "codex-2")
    assert call("second").status_code == 200
    assert pool.sim.counters(pool.sim_account_of(other).id).model_requests == 1
    assert call("first").status_code == 200  # a bound conversation stays bound (CRED-7)
    assert pool.sim.counters(account.id).model_requests == 2


def test_cred_1_an_admin_edit_during_a_refresh_starts_no_second_refresh(
    make_pool: Callable[..., Pool],
) -> None:
    """A rename or a new limit is no new lifecycle: the refresh running keeps the account's
    credentials, and no second refresh presents the refresh token the first is rotating."""
    pool = _short_pool(make_pool)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="ok", delay_ms=600))
    with ThreadPoolExecutor(2) as workers:
        first = workers.submit(_call, pool)
        time.sleep(0.2)  # its refresh is at the token endpoint now
        assert (
            pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 5}).status_code
            == 200
        )
        assert pool.admin.patch(f"/api/accounts/{account_id}", json={"name": "renamed"}).status_code == 200
        second = workers.submit(_call, pool)
        assert first.result().status_code == 200 and second.result().status_code == 200
    assert pool.sim.counters(account.id).refreshes == 1
    assert _auth_state(pool, account_id) == ("ok", None)
