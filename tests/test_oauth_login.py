"""Adding a Codex account by PKCE OAuth login with a pasted-back redirect URL, against the simulator."""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from gateway_pool import Pool
from sqlmodel import Session

from sublane_core import Account
from sublane_gateway._state import PendingLogin, PendingLogins
from sublane_providers import PkcePair
from sublane_sim import Behaviour, SimAccount, Simulator

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}
CALLBACK = "http://localhost:1455/auth/callback"


def _start(pool: Pool, client: httpx.Client | None = None, **fields: object) -> dict[str, str]:
    response = (client or pool.admin).post("/api/accounts/oauth/start", json={"provider": "codex", **fields})
    assert response.status_code == 200, response.text
    started: dict[str, str] = response.json()
    return started


def _sign_in(started: dict[str, str]) -> str:
    """What the admin's browser does: open the authorize URL and end on the (dead) localhost redirect."""
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        answer = browser.get(started["authorize_url"])
    assert answer.status_code == 302
    location = answer.headers["location"]
    assert location.startswith(f"{CALLBACK}?")
    return location


def _complete(pool: Pool, state: str, pasted: str, client: httpx.Client | None = None) -> httpx.Response:
    return (client or pool.admin).post(
        "/api/accounts/oauth/complete", json={"state": state, "callback_url": pasted}
    )


def _login_as(pool: Pool, account: SimAccount, **fields: object) -> tuple[dict[str, str], str]:
    pool.sim.prepare_login("codex", account.id)
    started = _start(pool, **fields)
    return started, _sign_in(started)


def _error(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


def _stored_bytes(pool: Pool) -> bytes:
    data_dir = Path(pool.gateway.settings.data_dir)
    return b"".join(path.read_bytes() for path in sorted(data_dir.glob("sublane.db*")))


def test_cred_9_oauth_login_adds_a_sealed_account_that_serves_requests(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pool = make_pool(accounts=0)
    upstream = pool.sim.create_account("codex", email="dev@example.test", plan="pro")
    pool.sim.prepare_login("codex", upstream.id)
    started = _start(pool, group_ids=[1])
    url = urlsplit(started["authorize_url"])
    query = parse_qs(url.query)
    assert f"{url.scheme}://{url.netloc}" == pool.sim.openai_auth_url and url.path == "/oauth/authorize"
    assert query["state"] == [started["state"]] and query["code_challenge_method"] == ["S256"]
    assert query["redirect_uri"] == [CALLBACK]
    login = pool.gateway.app.state.gateway.logins.get(started["state"], 1, pool.gateway.clock.monotonic())
    verifier = login.pkce.verifier
    assert verifier not in started["authorize_url"] and "verifier" not in str(started)

    created = _complete(pool, started["state"], _sign_in(started))

    assert created.status_code == 201, created.text
    account = created.json()
    assert account["provider"] == "codex" and account["name"] == "dev@example.test"
    assert account["identity"] == {"email": "dev@example.test", "plan": "pro", "subject": upstream.account_id}
    assert account["auth_state"] == "ok" and account["group_ids"] == [1]
    tokens = pool.sim.account(upstream.id)  # the code exchange minted these
    secrets = [tokens.access_token, tokens.refresh_token, tokens.id_token, verifier]
    assert not any(secret in created.text for secret in secrets)
    listed = pool.admin.get("/api/accounts").text
    assert not any(secret in listed for secret in secrets)
    stored = _stored_bytes(pool)
    assert not any(secret.encode() in stored for secret in secrets)  # sealed at rest
    with Session(pool.gateway.engine) as db:
        row = db.get(Account, account["id"])
        assert row is not None
        bundle = pool.gateway.app.state.gateway.cipher.decrypt(row.credentials)
    assert bundle["refresh_token"] == tokens.refresh_token
    assert bundle["account_id"] == upstream.account_id

    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 200 and "response.completed" in response.text
    upstream_call = pool.sim.requests(endpoint="codex.responses")[-1]
    assert upstream_call.headers["authorization"] == f"Bearer {tokens.access_token}"
    assert pool.finished[-1].account_id == account["id"]
    exchange = pool.sim.requests(endpoint="openai.token")[-1]
    assert exchange.status == 200 and "code_verifier" in str(exchange.body)
    assert "added by OAuth login" in caplog.text  # the gateway's log lines were captured
    assert not any(secret in caplog.text for secret in secrets)


@pytest.mark.parametrize("form", ["url", "query", "bare_query", "code_hash_state"])
def test_cred_9_paste_back_takes_the_url_its_query_or_code_hash_state(
    make_pool: Callable[..., Pool], form: str
) -> None:
    pool = make_pool(accounts=0)
    upstream = pool.sim.create_account("codex")
    started, location = _login_as(pool, upstream, name="plus-1")
    query = urlsplit(location).query
    values = parse_qs(query)
    pasted = {
        "url": f"  {location}\n",
        "query": f"?{query}",
        "bare_query": query,
        "code_hash_state": f"{values['code'][0]}#{values['state'][0]}",
    }[form]
    created = _complete(pool, started["state"], pasted)
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "plus-1" and created.json()["group_ids"] == []


def test_cred_9_default_names_come_from_the_email_and_are_made_unique(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=0)
    names = []
    for _ in range(2):
        upstream = pool.sim.create_account("codex", email="team@example.test")
        started, location = _login_as(pool, upstream)
        created = _complete(pool, started["state"], location)
        assert created.status_code == 201, created.text
        names.append(created.json()["name"])
    assert names == ["team@example.test", "team@example.test-2"]


def test_cred_9_a_taken_name_is_409_and_can_be_corrected(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)  # holds "codex-1"
    refused = pool.admin.post("/api/accounts/oauth/start", json={"provider": "codex", "name": "codex-1"})
    assert refused.status_code == 409 and _error(refused) == "name_taken"
    upstream = pool.sim.create_account("codex")
    started, location = _login_as(pool, upstream, name="spare")
    pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}", json={"name": "spare"})  # taken meanwhile
    taken = _complete(pool, started["state"], location)
    assert taken.status_code == 409 and _error(taken) == "name_taken"
    assert pool.sim.requests(endpoint="openai.token") == []  # the code was not spent
    renamed = pool.admin.post(
        "/api/accounts/oauth/complete",
        json={"state": started["state"], "callback_url": location, "name": "spare-2"},
    )
    assert renamed.status_code == 201 and renamed.json()["name"] == "spare-2"


def test_cred_9_unknown_state_is_refused(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=0)
    upstream = pool.sim.create_account("codex")
    _started, location = _login_as(pool, upstream)
    refused = _complete(pool, "not-a-state", location)
    assert refused.status_code == 400 and _error(refused) == "oauth_state_unknown"
    assert pool.admin.get("/api/accounts").json()["items"] == []


def test_cred_9_a_callback_of_another_login_is_refused_and_the_login_stays(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=0)
    first, second = pool.sim.create_account("codex"), pool.sim.create_account("codex")
    started_a, location_a = _login_as(pool, first)
    started_b, location_b = _login_as(pool, second)
    mixed = _complete(pool, started_b["state"], location_a)
    assert mixed.status_code == 400 and _error(mixed) == "oauth_callback_invalid"
    assert "another login" in mixed.json()["error"]["message"]
    empty = _complete(pool, started_b["state"], f"{CALLBACK}?state={started_b['state']}")
    assert empty.status_code == 400 and _error(empty) == "oauth_callback_invalid"
    assert pool.sim.requests(endpoint="openai.token") == []
    created = _complete(pool, started_b["state"], location_b)
    assert created.status_code == 201
    assert created.json()["identity"]["subject"] == second.account_id
    assert _complete(pool, started_a["state"], location_a).status_code == 201


def test_cred_9_a_state_completes_only_once(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=0)
    upstream = pool.sim.create_account("codex")
    started, location = _login_as(pool, upstream)
    assert _complete(pool, started["state"], location).status_code == 201
    again = _complete(pool, started["state"], location)
    assert again.status_code == 400 and _error(again) == "oauth_state_unknown"
    assert len(pool.admin.get("/api/accounts").json()["items"]) == 1
    assert len(pool.sim.requests(endpoint="openai.token")) == 1


def test_cred_9_logins_expire_after_ten_minutes(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=0)
    upstream = pool.sim.create_account("codex")
    started, location = _login_as(pool, upstream)
    assert abs(float(started["expires_at"]) - (pool.gateway.clock.time() + 600)) < 5
    pool.gateway.clock.advance(601)
    expired = _complete(pool, started["state"], location)
    assert expired.status_code == 400 and _error(expired) == "oauth_state_unknown"
    assert pool.sim.requests(endpoint="openai.token") == []


def test_cred_9_a_provider_error_in_the_callback_ends_the_login(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=0)
    upstream = pool.sim.create_account("codex")
    started, location = _login_as(pool, upstream)
    denied = f"{CALLBACK}?error=access_denied&error_description=User+cancelled&state={started['state']}"
    refused = _complete(pool, started["state"], denied)
    assert refused.status_code == 400 and _error(refused) == "oauth_callback_invalid"
    assert "access_denied" in refused.json()["error"]["message"]
    after = _complete(pool, started["state"], location)
    assert after.status_code == 400 and _error(after) == "oauth_state_unknown"


def test_cred_9_a_code_the_provider_refuses_is_oauth_exchange_failed(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=0)
    upstream = pool.sim.create_account("codex")
    started, _location = _login_as(pool, upstream)
    forged = _complete(pool, started["state"], f"{CALLBACK}?code=ac_forged&state={started['state']}")
    assert forged.status_code == 400 and _error(forged) == "oauth_exchange_failed"
    assert "invalid_grant" in forged.json()["error"]["message"]
    assert pool.admin.get("/api/accounts").json()["items"] == []


def test_cred_9_logins_are_admin_only_and_bound_to_who_started_them(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=0)
    _member, member = pool.gateway.member(pool.admin, "bob")
    refused = member.post("/api/accounts/oauth/start", json={"provider": "codex"})
    assert refused.status_code == 403 and _error(refused) == "forbidden"
    upstream = pool.sim.create_account("codex")
    started, location = _login_as(pool, upstream)
    assert _error(_complete(pool, started["state"], location, client=member)) == "forbidden"
    anonymous = pool.gateway.client().post("/api/accounts/oauth/start", json={"provider": "codex"})
    assert anonymous.status_code == 401 and _error(anonymous) == "unauthenticated"
    _other, other_admin = pool.gateway.member(pool.admin, "carol", role="admin")
    foreign = _complete(pool, started["state"], location, client=other_admin)
    assert foreign.status_code == 400 and _error(foreign) == "oauth_state_unknown"
    assert _complete(pool, started["state"], location).status_code == 201


def test_cred_9_cross_origin_and_form_posts_are_refused(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=0)
    cross = pool.admin.post(
        "/api/accounts/oauth/start", json={"provider": "codex"}, headers={"origin": "https://evil.example"}
    )
    assert cross.status_code == 403 and _error(cross) == "cross_origin"
    form = pool.admin.post("/api/accounts/oauth/complete", data={"state": "x", "callback_url": "y"})
    assert form.status_code == 415 and _error(form) == "unsupported_media_type"
    assert len(pool.gateway.app.state.gateway.logins) == 0


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ("nope", "Unknown provider 'nope'; OAuth login supports codex, claude, antigravity"),
        ("openai", "openai accounts have no OAuth login (it supports codex, claude, antigravity)"),
    ],
)
def test_cred_9_providers_without_a_login_are_refused(
    make_pool: Callable[..., Pool], provider: str, message: str
) -> None:
    pool = make_pool(accounts=0)
    refused = pool.admin.post("/api/accounts/oauth/start", json={"provider": provider})
    assert refused.status_code == 400 and _error(refused) == "unknown_provider"
    assert message in refused.json()["error"]["message"]


def test_cred_9_bad_bodies_are_refused_before_anything_starts(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=0)
    unknown_group = pool.admin.post(
        "/api/accounts/oauth/start", json={"provider": "codex", "group_ids": [99]}
    )
    assert unknown_group.status_code == 400 and _error(unknown_group) == "invalid_request"
    extra = pool.admin.post("/api/accounts/oauth/start", json={"provider": "codex", "verifier": "x"})
    assert extra.status_code == 400 and _error(extra) == "invalid_request"
    missing = pool.admin.post("/api/accounts/oauth/complete", json={"state": "x"})
    assert missing.status_code == 400 and _error(missing) == "invalid_request"
    assert len(pool.gateway.app.state.gateway.logins) == 0


def test_pending_logins_are_bounded_single_use_and_expire() -> None:
    logins = PendingLogins(ttl_s=600, capacity=2)
    pkce = PkcePair(verifier="v", challenge="c")

    def login(now: float, user_id: int = 1) -> PendingLogin:
        return PendingLogin("codex", user_id, pkce, None, (), now + logins.ttl_s)

    logins.add("a", login(0), now=0)
    logins.add("b", login(10), now=10)
    logins.add("c", login(20), now=20)  # full: the oldest makes room
    assert logins.get("a", 1, now=20) is None and len(logins) == 2
    assert logins.get("b", 2, now=20) is None  # another user's login is not theirs to see
    assert logins.take("b", 1, now=20) is not None
    assert logins.take("b", 1, now=20) is None
    assert logins.get("c", 1, now=619) is not None
    assert logins.get("c", 1, now=620) is None and len(logins) == 0


def test_cred_9_claude_oauth_login_with_code_hash_state_paste_back(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    pool = make_pool(accounts=0, claude_authorize_url=f"{sim.base_url}/oauth/authorize")
    upstream = pool.sim.create_account("claude", email="max@example.test", plan="max")
    pool.sim.prepare_login("claude", upstream.id)
    started = pool.admin.post(
        "/api/accounts/oauth/start", json={"provider": "claude", "group_ids": [1]}
    ).json()
    assert started["authorize_url"].startswith(f"{pool.sim.base_url}/oauth/authorize?")
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        answer = browser.get(started["authorize_url"])
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    pasted = f"{query['code'][0]}#{query['state'][0]}"  # what Claude's manual callback page shows
    created = _complete(pool, started["state"], pasted)
    assert created.status_code == 201, created.text
    account = created.json()
    assert account["provider"] == "claude" and account["identity"]["email"] == "max@example.test"
    key = pool.admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    body = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    served = pool.client(key).post("/v1/messages", json=body)
    assert served.status_code == 200, served.text


def test_adm_2_verification_reads_count_against_workspace_capacity(make_pool: Callable[..., Pool]) -> None:
    """Import and OAuth sign-in read the provider (profile, Antigravity's loadCodeAssist): shared
    metadata reads that take a workspace place like discovery and quota reads. With the only place
    held by a running model call, both are refused with 429 workspace_busy and nothing is spent."""
    pool = make_pool(workspace_capacity=1)
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=30, pacing_ms=50))
    antigravity = pool.sim.create_account("antigravity")
    codex = pool.sim.create_account("codex")
    started, pasted = _login_as(pool, codex)
    with concurrent.futures.ThreadPoolExecutor(1) as workers:
        running = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        deadline = time.monotonic() + 5
        while not pool.runtime.leases.total_in_flight():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        reads = len(pool.sim.requests(account_id=antigravity.id))
        body = {
            "provider": "antigravity",
            "name": "ag",
            "credentials": antigravity.credentials,
            "group_ids": [1],
        }
        busy = pool.admin.post("/api/accounts/import", json=body)
        assert busy.status_code == 429 and _error(busy) == "workspace_busy", busy.text
        assert 1 <= int(busy.headers["retry-after"]) <= 5
        assert len(pool.sim.requests(account_id=antigravity.id)) == reads  # no loadCodeAssist went out
        refused = _complete(pool, started["state"], pasted)
        assert refused.status_code == 429 and _error(refused) == "workspace_busy", refused.text
        assert running.result().status_code == 200
    assert pool.runtime.scheduler.admission.in_use == 0
    imported = pool.admin.post("/api/accounts/import", json=body)
    assert imported.status_code == 201  # room again
    pool.settle()  # its catalogue read (CAT-1) holds the one place a moment
    assert _complete(pool, started["state"], pasted).status_code == 201  # the login was not spent
