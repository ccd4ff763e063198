"""Per-account egress (EGRESS-1…3) through real proxies: Debian's tinyproxy (HTTP CONNECT) and
microsocks (SOCKS5), with and without passwords, stopped mid-run, refusing the tunnel.

Each proxy opens its upstream connections from its own loopback address (127.0.0.2 for SOCKS5,
127.0.0.3 for HTTP), so the simulator's request log proves which calls went through which proxy:
model calls over HTTP and WebSocket, token refreshes, quota reads, model discovery and checks.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from gateway_pool import Pool
from ports import free_port
from proxy_servers import ProxyServer, proxies_installed, start_http_proxy, start_socks_proxy

pytestmark = pytest.mark.skipif(not proxies_installed(), reason="tinyproxy and microsocks are not installed")

SOCKS_FROM, HTTP_FROM = "127.0.0.2", "127.0.0.3"
BODY = {"model": "gpt-5-codex", "input": "hi"}
DAY_S = 86_400


@pytest.fixture
def proxies(tmp_path: Path) -> Iterator[Callable[..., ProxyServer]]:
    started: list[ProxyServer] = []

    def start(
        kind: str, outgoing: str, user: str | None = "egress", password: str | None = "s3cret-pw"
    ) -> ProxyServer:
        folder = tmp_path / f"proxy-{len(started)}"
        starter = start_socks_proxy if kind == "socks5" else start_http_proxy
        server = starter(folder, outgoing, user, password)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def _set_proxy(pool: Pool, account_id: int, url: str | None) -> dict[str, Any]:
    response = pool.admin.patch(f"/api/accounts/{account_id}", json={"proxy_url": url})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _peers(pool: Pool, index: int) -> dict[str, set[str]]:
    """Endpoint → the addresses its requests came from, for one simulator account."""
    seen: dict[str, set[str]] = {}
    for record in pool.sim.requests(account_id=pool.sim_accounts[index].id):
        seen.setdefault(record.endpoint, set()).add(str(record.peer))
    return seen


def _eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


def _runtime(pool: Pool, account_id: int) -> dict[str, Any]:
    accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    found: dict[str, Any] = next(item for item in accounts if item["id"] == account_id)
    return found


async def _ws_turn(pool: Pool) -> list[dict[str, Any]]:
    url = pool.gateway.url.replace("http://", "ws://") + "/v1/responses"
    headers = {"authorization": f"Bearer {pool.key}", "openai-beta": "responses_websockets=2026-02-06"}
    frame = {"type": "response.create", "model": "gpt-5-codex", "input": "hi", "store": False, "stream": True}
    events = []
    async with websockets.connect(url, additional_headers=headers, proxy=None) as ws:
        await ws.send(json.dumps(frame))
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 10))
            events.append(event)
            if event["type"] in ("response.completed", "response.failed", "error"):
                return events


def test_egress_1_every_upstream_call_of_an_account_leaves_through_its_own_proxy(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer]
) -> None:
    pool = make_pool(accounts=2, account_options={"access_ttl_s": 100})  # due for a refresh (CRED-1)
    for account in pool.sim_accounts:
        pool.sim.update_account(account.id, access_ttl_s=DAY_S)
    socks, http = proxies("socks5", SOCKS_FROM), proxies("http", HTTP_FROM)
    first, second = pool.account_ids
    shown = _set_proxy(pool, first, socks.url("socks5h"))
    assert shown["proxy_url"] == f"socks5h://egress:***@127.0.0.1:{socks.port}"
    assert _set_proxy(pool, second, http.url())["proxy_url"] == f"http://egress:***@127.0.0.1:{http.port}"
    pool.sim.clear_requests()
    for account_id in (first, second):  # a new lifecycle: the catalogue is read again (CAT-1)
        pool.admin.patch(f"/api/accounts/{account_id}", json={"enabled": False})
        pool.admin.patch(f"/api/accounts/{account_id}", json={"enabled": True})
    pool.settle()
    for _ in range(4):  # rotation: both accounts serve
        assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    for _ in range(2):
        assert asyncio.run(_ws_turn(pool))[-1]["type"] == "response.completed"
    for account_id in (first, second):
        checked = pool.admin.post(f"/api/accounts/{account_id}/check").json()
        assert checked["ok"] is True and checked["egress"] == "proxy" and checked["error"] is None, checked
    _eventually(lambda: all("codex.usage" in _peers(pool, index) for index in (0, 1)))  # QUOTA-1 reads
    by_account = {0: SOCKS_FROM, 1: HTTP_FROM}
    endpoints: set[str] = set()
    for index, address in by_account.items():
        peers = _peers(pool, index)
        assert all(seen == {address} for seen in peers.values()), (index, peers)
        assert {"openai.token", "codex.models", "codex.responses", "codex.usage"} <= set(peers), peers
        endpoints |= set(peers)
    assert {"codex.ws.connect", "codex.ws.turn"} <= endpoints  # the WebSocket, through its account's proxy
    assert socks.connections() and http.connections()  # and the proxies' own logs saw them


def test_egress_1_accounts_without_a_proxy_use_sublane_egress_proxy_and_changes_apply_at_once(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer]
) -> None:
    http, socks = proxies("http", HTTP_FROM), proxies("socks5", SOCKS_FROM, user=None, password=None)
    pool = make_pool(egress_proxy=http.url())  # the import's own reads went through it too
    account_id = pool.account_ids[0]
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    assert set().union(*_peers(pool, 0).values()) == {HTTP_FROM}
    pool.sim.clear_requests()
    assert _set_proxy(pool, account_id, socks.url())["proxy_url"] == f"socks5://127.0.0.1:{socks.port}"
    _eventually(lambda: pool.runtime.vault.egress_of(account_id) == socks.url())
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    assert _peers(pool, 0)["codex.responses"] == {SOCKS_FROM}
    pool.sim.clear_requests()
    assert _set_proxy(pool, account_id, None)["proxy_url"] is None  # back to the workspace's
    _eventually(lambda: pool.runtime.vault.egress_of(account_id) == http.url())
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    assert _peers(pool, 0)["codex.responses"] == {HTTP_FROM}


@pytest.mark.parametrize(
    "url", ["ftp://proxy:21", "http://proxy", "socks5://:1080", "http://h:1/path", "nonsense"]
)
def test_egress_1_what_is_not_a_proxy_address_is_refused_without_repeating_it(
    make_pool: Callable[..., Pool], url: str
) -> None:
    pool = make_pool()
    answer = pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}", json={"proxy_url": url})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_request"
    assert url not in answer.text
    assert pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").json()["proxy_url"] is None


def test_egress_2_a_proxy_stopped_mid_run_costs_one_failover_and_the_account_no_cooldown(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer]
) -> None:
    pool = make_pool(accounts=2)
    socks = proxies("socks5", SOCKS_FROM)
    proxied, other = pool.account_ids
    _set_proxy(pool, proxied, socks.url())
    pool.admin.patch(f"/api/accounts/{other}", json={"enabled": False})
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200  # through the proxy
    socks.stop()
    refused = pool.client().post("/v1/responses", json=BODY)
    assert refused.status_code == 502 and refused.json()["error"]["code"] == "egress_proxy_failed"
    state = _runtime(pool, proxied)
    assert state["state"] == "ready" and state["cooldown_until"] is None  # no cooldown (EGRESS-2)
    assert state["egress_error"] is not None and state["egress_error"]["at"] <= time.time()
    pool.admin.patch(f"/api/accounts/{other}", json={"enabled": True})
    pool.settle()
    served = [pool.client().post("/v1/responses", json=BODY) for _ in range(4)]
    assert all(answer.status_code == 200 for answer in served)  # unbound requests move on (FAIL-1)
    attempts = [record.routing.get("attempts") for record in pool.finished[-4:] if record.routing]
    moved = [tried for tried in attempts if tried and len(tried) == 2]
    assert moved and all(tried[0]["error_code"] == "egress_proxy_failed" for tried in moved)
    assert pool.runtime.scheduler.cooldowns.active(proxied) is None
    assert pool.runtime.leases.total_in_flight() == 0


@pytest.mark.parametrize("kind", ["http", "socks5"])
def test_egress_2_a_proxy_that_refuses_the_tunnel_or_the_password_is_egress_proxy_failed(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer], kind: str
) -> None:
    pool = make_pool(failover_attempts=0)
    server = proxies(kind, SOCKS_FROM if kind == "socks5" else HTTP_FROM)
    _set_proxy(pool, pool.account_ids[0], server.url(password="wrong-password"))
    refused = pool.client().post("/v1/responses", json=BODY)
    assert refused.status_code == 502 and refused.json()["error"]["code"] == "egress_proxy_failed"
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 0
    assert pool.runtime.scheduler.cooldowns.active(pool.account_ids[0]) is None
    assert _runtime(pool, pool.account_ids[0])["egress_error"] is not None
    if kind == "socks5":  # (tinyproxy 1.11 answers a forwarded plain-http call 401, not 407)
        checked = pool.admin.post(f"/api/accounts/{pool.account_ids[0]}/check").json()
        assert checked["ok"] is False and checked["error"]["code"] == "egress_proxy_failed"
        assert checked["egress"] == "proxy"


def test_egress_2_a_websocket_turn_through_a_dead_proxy_moves_to_another_account(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer]
) -> None:
    pool = make_pool(accounts=2)
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    _set_proxy(pool, pool.account_ids[0], dead)
    for _ in range(2):  # whichever account rotation picks first, the turn is served
        events = asyncio.run(_ws_turn(pool))
        assert events[-1]["type"] == "response.completed", events
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 0
    assert _runtime(pool, pool.account_ids[0])["egress_error"] is not None


def test_egress_3_check_makes_one_bounded_metadata_call_through_the_egress_and_clears_nothing(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer]
) -> None:
    from sublane_sim import Behaviour

    pool = make_pool(failover_attempts=0)
    account_id, sim_id = pool.account_ids[0], pool.sim_accounts[0].id
    direct = pool.admin.post(f"/api/accounts/{account_id}/check")
    assert direct.status_code == 200
    assert direct.json() == {
        "ok": True,
        "latency_ms": direct.json()["latency_ms"],
        "egress": "direct",
        "auth_state": "ok",
        "error": None,
    }
    assert isinstance(direct.json()["latency_ms"], int)
    limited = Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="60")
    pool.sim.script(sim_id, limited)
    assert pool.client().post("/v1/responses", json=BODY).status_code == 429  # the account cools
    http = proxies("http", HTTP_FROM)
    _set_proxy(pool, account_id, http.url())
    _eventually(lambda: pool.runtime.vault.egress_of(account_id) == http.url())
    calls = pool.sim.counters(sim_id).model_requests
    pool.sim.clear_requests()
    checked = pool.admin.post(f"/api/accounts/{account_id}/check").json()
    assert checked["ok"] is True and checked["egress"] == "proxy"
    assert [record.endpoint for record in pool.sim.requests(account_id=sim_id)] == ["codex.usage"]
    assert _peers(pool, 0) == {"codex.usage": {HTTP_FROM}}
    assert pool.sim.counters(sim_id).model_requests == calls  # no inference
    assert pool.runtime.scheduler.cooldowns.active(account_id) is not None  # clears nothing
    assert pool.runtime.leases.total_in_flight() == 0  # never a model slot
    assert pool.admin.post("/api/accounts/999/check").status_code == 404


def test_egress_1_proxy_passwords_never_leave_the_sealed_column(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer], caplog: pytest.LogCaptureFixture
) -> None:
    pool = make_pool(failover_attempts=0)
    http = proxies("http", HTTP_FROM)
    account_id = pool.account_ids[0]
    _set_proxy(pool, account_id, http.url())
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    _set_proxy(pool, account_id, f"socks5://egress:s3cret-pw@127.0.0.1:{free_port()}")  # a dead one
    _eventually(lambda: pool.runtime.vault.egress_of(account_id) != http.url())
    assert pool.client().post("/v1/responses", json=BODY).status_code == 502
    pool.admin.post(f"/api/accounts/{account_id}/check")
    seen = [
        pool.admin.get(path).text
        for path in ("/api/accounts", f"/api/accounts/{account_id}", "/api/accounts/runtime", "/api/audit",
                     "/api/requests", "/metrics")
    ]  # fmt: skip
    seen.append(caplog.text)
    exported = pool.admin.post("/api/accounts/export", json={"passphrase": "a long passphrase"})
    assert exported.status_code == 200 and b"s3cret-pw" not in exported.content  # sealed in the bundle
    moved = pool.admin.post(
        "/api/accounts/import-bundle",
        files={"file": ("accounts.bundle", exported.content, "application/octet-stream")},
        data={"passphrase": "a long passphrase"},
        headers={"origin": pool.gateway.url},
    )
    assert moved.status_code == 200, moved.text
    [copy] = moved.json()["imported"]  # the copy keeps its egress (BULK-1 with EGRESS-1)
    shown = pool.admin.get(f"/api/accounts/{copy['id']}").json()["proxy_url"]
    assert shown is not None and shown.startswith("socks5://egress:***@127.0.0.1:")
    for text in seen:
        assert "s3cret-pw" not in text
    with pool.gateway.engine.connect() as connection:
        import sqlalchemy as sa

        stored = connection.execute(sa.text("SELECT proxy_url, proxy_shown FROM accounts")).all()
    assert all(b"s3cret-pw" not in (row[0] or b"") and "s3cret-pw" not in (row[1] or "") for row in stored)


def _applied_proxy(pool: Pool, account_id: int, url: str | None) -> dict[str, Any]:
    """:func:`_set_proxy`, and wait until the account's next calls use it (applied on the loop)."""
    answer = _set_proxy(pool, account_id, url)
    _eventually(lambda: pool.runtime.vault.egress_of(account_id) == url)
    return answer


@pytest.fixture
def silent_proxies() -> Iterator[Callable[[bool], str]]:
    """Proxy addresses on loopback that never answer: ``silent(accepting=False)`` is a listener
    whose queue is full, so a connection never opens (a blackholed address, without leaving the
    machine); ``silent(accepting=True)`` accepts and then says nothing."""
    import socket

    sockets: list[socket.socket] = []

    def silent(accepting: bool) -> str:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        sockets.append(listener)
        port = listener.getsockname()[1]
        if accepting:
            return f"http://127.0.0.1:{port}"
        while True:  # fill the accept queue: the kernel then drops the next connection's SYNs
            filler = socket.socket()
            filler.settimeout(0.3)
            sockets.append(filler)
            try:
                filler.connect(("127.0.0.1", port))
            except OSError:
                return f"http://127.0.0.1:{port}"

    yield silent
    for sock in sockets:
        sock.close()


def test_egress_2_an_unroutable_silent_or_plain_proxy_spoken_tls_is_a_502_within_the_connect_timeout(
    make_pool: Callable[..., Pool],
    proxies: Callable[..., ProxyServer],
    silent_proxies: Callable[[bool], str],
) -> None:
    pool = make_pool(failover_attempts=0, header_timeout_s=2, metadata_timeout_s=3)  # connect: min(30, 2)
    account_id = pool.account_ids[0]
    plain = proxies("http", HTTP_FROM, user=None)
    for url in (silent_proxies(False), silent_proxies(True), plain.url(scheme="https")):
        _applied_proxy(pool, account_id, url)
        started = time.monotonic()
        refused = pool.client().post("/v1/responses", json=BODY)
        took = time.monotonic() - started
        assert refused.status_code == 502, (url, refused.status_code, refused.text)
        assert refused.json()["error"]["code"] == "egress_proxy_failed"
        assert took < 4, (url, took)
        assert _runtime(pool, account_id)["egress_error"] is not None
        assert pool.runtime.scheduler.cooldowns.active(account_id) is None
        checked = pool.admin.post(f"/api/accounts/{account_id}/check")
        assert checked.status_code == 200, checked.text
        assert checked.json()["ok"] is False and checked.json()["egress"] == "proxy"
        assert checked.json()["error"]["code"] == "egress_proxy_failed", (url, checked.json())
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 0


def test_egress_2_the_check_reports_an_http_proxy_refusing_the_password_as_an_egress_error(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer]
) -> None:
    pool = make_pool()
    server = proxies("http", HTTP_FROM)
    _applied_proxy(pool, pool.account_ids[0], server.url(password="wrong-password"))
    checked = pool.admin.post(f"/api/accounts/{pool.account_ids[0]}/check").json()
    assert checked["ok"] is False and checked["egress"] == "proxy"
    assert checked["error"]["code"] == "egress_proxy_failed", checked  # not the provider's 401
    assert _runtime(pool, pool.account_ids[0])["egress_error"] is not None
    _applied_proxy(pool, pool.account_ids[0], server.url())  # the right password: the check passes
    assert pool.admin.post(f"/api/accounts/{pool.account_ids[0]}/check").json()["ok"] is True


def test_egress_3_the_check_clears_no_egress_error(
    make_pool: Callable[..., Pool], proxies: Callable[..., ProxyServer], tmp_path: Path
) -> None:
    from proxy_servers import start_socks_proxy

    pool = make_pool(failover_attempts=0)
    account_id = pool.account_ids[0]
    socks = proxies("socks5", SOCKS_FROM)
    _applied_proxy(pool, account_id, socks.url())
    socks.stop()
    assert pool.client().post("/v1/responses", json=BODY).status_code == 502
    failed = _runtime(pool, account_id)["egress_error"]
    assert failed is not None
    again = start_socks_proxy(tmp_path / "again", SOCKS_FROM, socks.user, socks.password, port=socks.port)
    try:
        checked = pool.admin.post(f"/api/accounts/{account_id}/check").json()
        assert checked["ok"] is True and checked["egress"] == "proxy"
        assert _runtime(pool, account_id)["egress_error"] == failed  # the check cleared nothing
        assert pool.client().post("/v1/responses", json=BODY).status_code == 200
        assert _runtime(pool, account_id)["egress_error"] is None  # a served call does
    finally:
        again.stop()


@pytest.mark.parametrize(
    "url",
    [
        "http://xn--zz.com:1",
        "socks5://xn--zz.com:1",
        "http://\u2603.net:1",
        "socks5h://\u2603.net:1",
        "https://u:p@[::1]:1",
        "socks5://u@127.0.0.1:1",
        "http://%zz:p@127.0.0.1:1",
        "http://999.0.0.1:1",
    ],
)
def test_egress_3_the_check_answers_for_every_accepted_proxy_url(
    make_pool: Callable[..., Pool], url: str
) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    if pool.admin.patch(f"/api/accounts/{account_id}", json={"proxy_url": url}).status_code != 200:
        pytest.skip("refused when set: nothing to check")
    _eventually(lambda: pool.runtime.vault.egress_of(account_id) is not None)
    checked = pool.admin.post(f"/api/accounts/{account_id}/check")
    assert checked.status_code == 200, checked.text
    assert checked.json()["ok"] is False and checked.json()["error"]["code"] == "egress_proxy_failed"
    served = pool.client().post("/v1/responses", json=BODY)
    assert served.status_code == 502 and served.json()["error"]["code"] == "egress_proxy_failed"


def test_alias_1_a_catalogue_refresh_through_a_dead_proxy_is_a_503_not_the_old_list(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    assert pool.admin.post(f"/api/accounts/{account_id}/models/refresh").status_code == 200
    stored = pool.admin.get(f"/api/accounts/{account_id}/models").json()
    assert stored["models"]
    _applied_proxy(pool, account_id, f"http://127.0.0.1:{free_port()}")  # nothing listens there
    refused = pool.admin.post(f"/api/accounts/{account_id}/models/refresh")
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["code"] == "model_catalog_unavailable"
    assert "retry-after" in refused.headers
    kept = pool.admin.get(f"/api/accounts/{account_id}/models").json()
    assert kept["models"] == stored["models"] and kept["discovered_at"] == stored["discovered_at"]


@pytest.mark.parametrize(
    "credentials",
    [
        {"note": "not a login"},
        {"access_token": 5, "refresh_token": ["x"]},
        {"access_token": "a"},
        {"access_token": None, "refresh_token": None, "account_id": {"a": 1}},
    ],
)
def test_egress_3_the_check_answers_for_stored_credentials_of_a_wrong_shape(
    make_pool: Callable[..., Pool], credentials: dict[str, Any]
) -> None:
    """Accounts a bundle imported before BULK-3 checked credentials may hold any shape."""
    from sqlmodel import Session

    from sublane_core import Account, signals

    pool = make_pool()
    cipher = pool.gateway.app.state.gateway.cipher
    with Session(pool.gateway.engine) as db:
        account = Account(
            provider="codex",
            name="broken",
            credentials=cipher.encrypt(credentials),
            created_at=1,
            updated_at=1,
        )
        db.add(account)
        db.commit()
        db.refresh(account)
    assert account.id is not None
    signals.account_changed.send(
        signals.AccountChanged(
            account_id=account.id,
            change=signals.AccountChange.CREATED,
            lifecycle_revision=account.lifecycle_revision,
            max_concurrency=account.max_concurrency,
        )
    )
    checked = pool.admin.post(f"/api/accounts/{account.id}/check")
    assert checked.status_code == 200, checked.text
    assert checked.json()["ok"] is False and checked.json()["error"]["code"] in (
        "invalid_credentials", "account_refresh_failed", "reauth_required", "upstream_unauthorized",
    ), checked.json()  # fmt: skip
