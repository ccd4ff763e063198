"""CLIENT-1…3: the client identity every upstream call carries, the effective client version, and
version refusals — through the gateway against the simulator, which refuses a model to a client
below its floor as the real upstreams do (``sublane_sim._floors``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_pool import Pool, recorded, settings_for
from postgres_server import postgres_bin, running_postgres
from redis_server import REDIS_SERVER, running_redis
from replicas import cluster

from sublane_core import WireProtocol, signals
from sublane_gateway.testing import running_gateway
from sublane_protocols import render_error
from sublane_sim import Behaviour, Simulator

CODEX_CLI = "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)"
OLD_CODEX_CLI = "codex_exec/0.100.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.100.0)"
CLAUDE_CODE = "claude-cli/2.1.332 (external, cli)"
RESPONSES = {"model": "gpt-5.5", "input": "say hi", "stream": True}
MESSAGES = {"model": "gpt-5.5", "max_tokens": 64, "messages": [{"role": "user", "content": "say hi"}]}


def _codex_client(pool: Pool, user_agent: str = CODEX_CLI, originator: str = "codex_exec") -> httpx.Client:
    client = pool.client()
    client.headers.update({"user-agent": user_agent, "originator": originator})
    return client


def _claude_code(pool: Pool, user_agent: str = CLAUDE_CODE) -> httpx.Client:
    return pool.gateway.client(
        headers={
            "x-api-key": pool.key,
            "user-agent": user_agent,
            "x-app": "cli",
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
            "x-stainless-lang": "js",
        }
    )


def _upstream(pool: Pool, endpoint: str) -> list[Any]:
    return pool.sim.requests(endpoint=endpoint)


def _client_version(admin: httpx.Client, provider: str) -> dict[str, Any]:
    items = admin.get("/api/providers").json()["items"]
    found: dict[str, Any] = next(item["client_version"] for item in items if item["name"] == provider)
    return found


def _pure_codex_identity(headers: dict[str, str], version: str = "0.171.0") -> None:
    """SubLane's Codex identity at ``version``, and nothing of another client's."""
    assert headers["originator"] == "codex_cli_rs"
    assert headers["user-agent"].startswith(f"codex_cli_rs/{version} (")
    assert headers["version"] == version
    assert "x-app" not in headers and not any(name.startswith("x-stainless-") for name in headers)


@pytest.fixture
def refused() -> Iterator[list[signals.ClientVersionRefused]]:
    heard: list[signals.ClientVersionRefused] = []
    disconnect = signals.client_version_refused.connect(heard.append)
    yield heard
    disconnect()


# -- CLIENT-1 -------------------------------------------------------------------------------------


def test_client_1_native_identity_passes_unchanged(make_pool: Callable[..., Pool]) -> None:
    codex = make_pool(accounts=1)
    with _codex_client(codex) as client:
        assert client.post("/v1/responses", json=RESPONSES).status_code == 200
    sent = _upstream(codex, "codex.responses")[-1].headers
    assert sent["user-agent"] == CODEX_CLI and sent["originator"] == "codex_exec"
    assert "version" not in sent  # nothing added to the client's own identity

    claude = make_pool(accounts=1, provider="claude")
    with _claude_code(claude) as client:
        answer = client.post("/v1/messages", json=dict(MESSAGES, model="claude-opus-4-7"))
        assert answer.status_code == 200, answer.text
    sent = _upstream(claude, "claude.messages")[-1].headers
    assert sent["user-agent"] == CLAUDE_CODE and sent["x-app"] == "cli" and sent["x-stainless-lang"] == "js"
    assert sent["anthropic-beta"] == "claude-code-20250219,interleaved-thinking-2025-05-14,oauth-2025-04-20"
    # what is not the provider's own client (here httpx) is no usable identity: SubLane's is sent
    with claude.gateway.client(
        headers={"x-api-key": claude.key, "anthropic-version": "2023-06-01"}
    ) as client:
        assert client.post("/v1/messages", json=dict(MESSAGES, model="claude-opus-4-7")).status_code == 200
    sent = _upstream(claude, "claude.messages")[-1].headers
    assert sent["user-agent"] == CLAUDE_CODE and sent["x-app"] == "cli"


def test_client_1_translated_call_carries_sublane_identity(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)  # a Codex account serving Claude Code (Messages → Responses)
    with _claude_code(pool) as client:
        answer = client.post("/v1/messages", json=MESSAGES)
        assert answer.status_code == 200, answer.text
    _pure_codex_identity(_upstream(pool, "codex.responses")[-1].headers)


def test_client_1_old_native_client_gets_sublane_identity(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)
    with _codex_client(pool, OLD_CODEX_CLI) as client:
        assert client.post("/v1/responses", json=RESPONSES).status_code == 200
    _pure_codex_identity(_upstream(pool, "codex.responses")[-1].headers)
    # a malformed version is no usable identity either
    with _codex_client(pool, "codex_exec/0.171.0-beta (Linux; x86_64)") as client:
        assert client.post("/v1/responses", json=RESPONSES).status_code == 200
    _pure_codex_identity(_upstream(pool, "codex.responses")[-1].headers)


def test_client_1_metadata_calls_carry_sublane_identity(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)
    (account_id,) = pool.account_ids
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(401))  # the call's 401 → a refresh
    with _codex_client(pool) as client:
        assert client.post("/v1/responses", json=RESPONSES).status_code == 200
    assert pool.admin.post(f"/api/accounts/{account_id}/check").status_code == 200  # a quota read
    assert pool.admin.post(f"/api/accounts/{account_id}/models/refresh").status_code == 200
    for endpoint in ("codex.models", "codex.usage", "openai.token"):
        sent = _upstream(pool, endpoint)
        assert sent, endpoint
        assert sent[-1].headers.get("originator") == "codex_cli_rs", (endpoint, sent[-1].headers)
        assert sent[-1].headers["user-agent"].startswith("codex_cli_rs/0.171.0 ("), endpoint
    assert "client_version=0.171.0" in _upstream(pool, "codex.models")[-1].query
    # sign-in: the code exchange of an OAuth login (CRED-9)
    login_account = pool.sim.create_account("codex")
    pool.sim.prepare_login("codex", login_account.id)
    started = pool.admin.post("/api/accounts/oauth/start", json={"provider": "codex"}).json()
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        pasted = browser.get(started["authorize_url"]).headers["location"]
    before = len(_upstream(pool, "openai.token"))
    completed = pool.admin.post(
        "/api/accounts/oauth/complete", json={"state": started["state"], "callback_url": pasted}
    )
    assert completed.status_code == 201, completed.text
    exchange = _upstream(pool, "openai.token")[before].headers
    assert exchange["originator"] == "codex_cli_rs" and exchange["user-agent"].startswith(
        "codex_cli_rs/0.171.0 ("
    )

    claude = make_pool(accounts=1, provider="claude")
    assert claude.admin.post(f"/api/accounts/{claude.account_ids[0]}/check").status_code == 200
    for endpoint in ("claude.usage", "claude.models"):
        sent = _upstream(claude, endpoint)[-1].headers
        assert sent["user-agent"] == CLAUDE_CODE and sent["x-app"] == "cli", endpoint


# -- CLIENT-2 -------------------------------------------------------------------------------------


def test_client_2_effective_version_rises_with_seen_native_version(sim: Simulator, tmp_path: Path) -> None:
    settings = settings_for(sim, tmp_path / "data")
    account = sim.create_account("codex")
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        body = {"provider": "codex", "name": "c", "credentials": account.credentials, "group_ids": [1]}
        assert admin.post("/api/accounts/import", json=body).status_code == 201
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        assert _client_version(admin, "codex") == {
            "effective": "0.171.0",
            "built_in": "0.171.0",
            "seen": None,
            "pinned": None,
        }
        newer = "codex_exec/0.175.2 (Debian 12.0.0; x86_64) xterm"
        with gateway.client(headers={"authorization": f"Bearer {key}", "originator": "codex_exec"}) as client:
            sim.script(account.id, Behaviour.error(500), Behaviour.error(500), Behaviour.error(500))
            failed = client.post("/v1/responses", json=RESPONSES, headers={"user-agent": newer})
            assert failed.status_code >= 500  # an unsuccessful call proves nothing
            assert _client_version(admin, "codex")["seen"] is None
            absurd = "codex_exec/7.0.0 (Debian 12.0.0; x86_64) xterm"
            assert client.post("/v1/responses", json=RESPONSES, headers={"user-agent": absurd}).is_success
            assert _client_version(admin, "codex")["seen"] is None  # implausible: never counts
            assert client.post("/v1/responses", json=RESPONSES, headers={"user-agent": newer}).is_success
        assert _client_version(admin, "codex")["effective"] == "0.175.2"
        assert _client_version(admin, "codex")["seen"] == "0.175.2"
        with gateway.client(headers={"x-api-key": key}) as client:  # translated: SubLane's, newer now
            assert client.post("/v1/messages", json=MESSAGES).status_code == 200
        _pure_codex_identity(sim.requests(endpoint="codex.responses")[-1].headers, "0.175.2")
        _until(lambda: not gateway.app.state.client.background_work)
    with running_gateway(settings) as gateway:  # persisted: a restart keeps it
        admin = gateway.admin()
        assert _client_version(admin, "codex")["effective"] == "0.175.2"
        gateway.clock.advance(31 * 86400)  # 30 days later it no longer counts
        assert gateway.app.state.client.client_versions.view("codex") == {
            "effective": "0.171.0",
            "built_in": "0.171.0",
            "seen": None,
            "pinned": None,
        }


def _until(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "did not happen in time"
        time.sleep(0.02)


def test_client_2_pin_via_api_is_audited(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)
    admin = pool.admin
    answer = admin.put("/api/providers/codex/client-version", json={"version": "0.180.0"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["client_version"]["effective"] == "0.180.0"
    assert _client_version(admin, "codex")["pinned"] == "0.180.0"
    with _codex_client(pool) as client:  # 0.171.0 is below the pin now: SubLane's identity at 0.180.0
        assert client.post("/v1/responses", json=RESPONSES).status_code == 200
    _pure_codex_identity(_upstream(pool, "codex.responses")[-1].headers, "0.180.0")
    entries = admin.get("/api/audit").json()["items"]
    entry = next(item for item in entries if item["action"] == "provider.client_version")
    assert entry["summary"] == {"provider": "codex", "pinned": "0.180.0"}
    for bad in ("0.180", "v0.180.0", "0.180.0-rc1", "01.2.3", "1.2.3.4", "x" * 60):
        answer = admin.put("/api/providers/codex/client-version", json={"version": bad})
        assert answer.status_code == 400, bad
        assert answer.json()["error"]["code"] == "invalid_request"
    assert admin.put("/api/providers/nope/client-version", json={"version": "1.0.0"}).status_code == 404
    _, member = pool.gateway.member(admin, "member")
    assert member.put("/api/providers/codex/client-version", json={"version": "1.0.0"}).status_code == 403
    answer = admin.put("/api/providers/codex/client-version", json={"version": None})
    assert answer.json()["client_version"] == {
        "effective": "0.171.0",
        "built_in": "0.171.0",
        "seen": None,
        "pinned": None,
    }


# -- CLIENT-3 -------------------------------------------------------------------------------------


def test_client_3_refusal_is_resent_with_sublane_identity(
    make_pool: Callable[..., Pool], refused: list[signals.ClientVersionRefused]
) -> None:
    pool = make_pool(accounts=1)
    # the floor rises after discovery; the refusal takes 1 s, during which an admin pins 0.172.0
    pool.sim.set_client_floor("codex", "gpt-5.5", "0.172.0", refusal_delay_s=1.0)
    answers: list[httpx.Response] = []

    def call() -> None:
        with _codex_client(pool) as client:
            answers.append(client.post("/v1/responses", json=RESPONSES))

    caller = threading.Thread(target=call)
    caller.start()
    _until(lambda: bool(_upstream(pool, "codex.responses")))
    assert pool.admin.put("/api/providers/codex/client-version", json={"version": "0.172.0"}).is_success
    caller.join(10)
    (answer,) = answers
    assert answer.status_code == 200, answer.text
    first, second = _upstream(pool, "codex.responses")
    assert first.headers["user-agent"] == CODEX_CLI  # the client's own identity, refused
    _pure_codex_identity(second.headers, "0.172.0")  # sent again at once as SubLane
    (record,) = recorded(pool, 1)
    assert record["outcome"] == "success"
    assert refused == []  # the resend served it: no refusal to tell


CHAT = {"model": "gpt-5.5", "messages": [{"role": "user", "content": "hi"}]}
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
_SHAPES: list[tuple[WireProtocol, str, dict[str, Any]]] = [
    (WireProtocol.RESPONSES, "/v1/responses", RESPONSES),
    (WireProtocol.CHAT_COMPLETIONS, "/v1/chat/completions", CHAT),
    (WireProtocol.MESSAGES, "/v1/messages", MESSAGES),
    (WireProtocol.GEMINI, "/v1beta/models/gpt-5.5:generateContent", GEMINI),
]


def _message_of(body: dict[str, Any]) -> str:
    """The error's message as given to the renderer (Google's shape appends the code to it)."""
    return str(body["error"]["message"]).removesuffix(" (client_version_too_old)")


def test_client_3_refusal_when_newest_is_client_version_too_old_in_each_protocol(
    make_pool: Callable[..., Pool], refused: list[signals.ClientVersionRefused]
) -> None:
    pool = make_pool(accounts=2, model_failure_threshold=1)  # one failure would cool the model
    pool.sim.set_client_floor("codex", "gpt-5.5", "0.200.0")  # above anything SubLane may present
    keys = {"authorization": f"Bearer {pool.key}", "x-goog-api-key": pool.key, "x-api-key": pool.key}
    for protocol, path, body in _SHAPES:
        with pool.gateway.client(headers=keys) as client:
            before = len(_upstream(pool, "codex.responses"))
            answer = client.post(path, json=body)
        assert answer.status_code == 400, (protocol, answer.text)
        message = _message_of(answer.json())
        request_id = answer.headers.get("request-id") or answer.headers.get("x-request-id")
        expected = render_error(protocol, 400, "client_version_too_old", message, request_id=request_id)
        assert answer.json() == expected.body, protocol  # the protocol's own error shape
        assert "client_version_too_old" in answer.text
        assert "PUT /api/providers/codex/client-version" in message
        assert len(_upstream(pool, "codex.responses")) == before + 1  # one attempt: no failover
    records = recorded(pool, len(_SHAPES))
    assert {record["outcome"] for record in records} == {"client_version"}
    assert {record["error_code"] for record in records} == {"client_version_too_old"}
    accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    assert [account["state"] for account in accounts] == ["ready", "ready"]  # no account or model cooldown
    assert all(item.provider == "codex" and item.model == "gpt-5.5" for item in refused)
    assert len(refused) == len(_SHAPES)
    # the accounts are not to blame: the next call for another model is served
    with pool.client() as client:
        assert client.post("/v1/responses", json=dict(RESPONSES, model="gpt-5-codex")).status_code == 200


def test_client_3_claude_refusal_names_the_version_and_never_cools(
    make_pool: Callable[..., Pool], refused: list[signals.ClientVersionRefused]
) -> None:
    pool = make_pool(accounts=2, provider="claude")
    pool.sim.set_client_floor("claude", "claude-opus-4-7", "2.1.400")
    with _claude_code(pool) as client:
        answer = client.post("/v1/messages", json=dict(MESSAGES, model="claude-opus-4-7"))
    assert answer.status_code == 400, answer.text
    assert answer.json()["type"] == "error"
    assert "2.1.400" in answer.json()["error"]["message"]
    assert "client_version_too_old" in answer.text
    assert len(_upstream(pool, "claude.messages")) == 1  # no failover, no resend (already newest)
    (record,) = recorded(pool, 1)
    assert record["outcome"] == "client_version"
    assert [(item.provider, item.needed, item.carried) for item in refused] == [
        ("claude", "2.1.400", "2.1.332")
    ]
    # the remedy: an admin pins the version; the same client is then served as SubLane at 2.1.400
    assert pool.admin.put("/api/providers/claude/client-version", json={"version": "2.1.400"}).is_success
    with _claude_code(pool) as client:
        answer = client.post("/v1/messages", json=dict(MESSAGES, model="claude-opus-4-7"))
    assert answer.status_code == 200, answer.text
    assert (
        _upstream(pool, "claude.messages")[-1].headers["user-agent"] == "claude-cli/2.1.400 (external, cli)"
    )


def test_client_3_catalogue_floor_refused_before_any_upstream_call(
    sim: Simulator, make_pool: Callable[..., Pool], refused: list[signals.ClientVersionRefused]
) -> None:
    sim.set_client_floor("codex", "gpt-5.5", "0.180.0")  # listed as minimal_client_version
    pool = make_pool(accounts=1)
    with _codex_client(pool) as client:
        answer = client.post("/v1/responses", json=RESPONSES)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "client_version_too_old"
    assert "0.180.0" in answer.json()["error"]["message"]
    assert _upstream(pool, "codex.responses") == []  # refused before any upstream call
    (record,) = recorded(pool, 1)
    assert record["outcome"] == "client_version"
    assert [(item.needed, item.carried) for item in refused] == [("0.180.0", "0.171.0")]
    # a native client at the floor carries its own identity, which the upstream accepts
    newer = "codex_exec/0.180.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.180.0)"
    with _codex_client(pool, newer) as client:
        assert client.post("/v1/responses", json=RESPONSES).status_code == 200


# -- CLIENT-2 across replicas (real PostgreSQL and Redis, replicas.py) ------------------------------


@pytest.mark.xdist_group("scale-out")
@pytest.mark.skipif(
    REDIS_SERVER is None or postgres_bin() is None, reason="needs redis-server and PostgreSQL"
)
def test_client_2_effective_version_is_shared_across_two_replicas(sim: Simulator, tmp_path: Path) -> None:
    with (
        running_postgres() as postgres,
        running_redis() as redis,
        cluster(tmp_path, postgres.new_database(), redis.url, sim) as nodes,
    ):
        a, b = nodes.start(2)
        on_a, on_b = a.admin(), b.admin()
        account = sim.create_account("codex")
        body = {"provider": "codex", "name": "c", "credentials": account.credentials, "group_ids": [1]}
        assert on_a.post("/api/accounts/import", json=body).status_code == 201
        key = on_a.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        # a native client seen on A raises the effective version on B
        newer = {"user-agent": "codex_exec/0.176.0 (Debian 12.0.0; x86_64) xterm", "originator": "codex_exec"}
        with a.client(key) as client:
            _until(lambda: client.post("/v1/responses", json=RESPONSES, headers=newer).status_code == 200)
        _until(lambda: _client_version(on_b, "codex")["effective"] == "0.176.0", 2.0)
        # a pin made on B holds on A
        assert on_b.put("/api/providers/codex/client-version", json={"version": "0.190.0"}).is_success
        _until(lambda: _client_version(on_a, "codex")["pinned"] == "0.190.0", 2.0)
        with a.client(key) as client:  # and A presents it: a translated call carries 0.190.0
            assert client.post("/v1/messages", json=MESSAGES, headers={"x-api-key": key}).status_code == 200
        _pure_codex_identity(sim.requests(endpoint="codex.responses")[-1].headers, "0.190.0")
        on_a.close()
        on_b.close()


# -- with the real clients ------------------------------------------------------------------------


@pytest.mark.e2e
def test_client_1_real_claude_code_on_a_codex_account_carries_a_pure_codex_identity(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    from test_real_clients import _claude, _client

    _client("claude")
    pool = make_pool(provider="codex")
    run = _claude(pool, tmp_path, "-p", "--model", "gpt-5-codex", "say hi")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    sent = _upstream(pool, "codex.responses")
    assert sent
    for request in sent:  # never Claude Code's user agent beside Codex's originator
        _pure_codex_identity(request.headers)


def test_client_7_a_refused_client_version_is_listed_with_the_upstream_changes(
    make_pool: Callable[..., Pool],
) -> None:
    """CLIENT-3's refusals reach CLIENT-7's list (kind ``client_version``, named by the version the
    upstream asked for, with the refused call's request ID)."""
    pool = make_pool(accounts=1, provider="claude")
    pool.sim.set_client_floor("claude", "claude-opus-4-7", "2.1.401")
    with _claude_code(pool) as client:
        answer = client.post("/v1/messages", json=dict(MESSAGES, model="claude-opus-4-7"))
    assert answer.status_code == 400, answer.text
    deadline = time.monotonic() + 10
    items: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        items = [
            item
            for item in pool.admin.get("/api/upstream-changes").json()["items"]
            if item["kind"] == "client_version"
        ]
        if items:
            break
        time.sleep(0.1)
    assert [(item["provider"], item["name"], item["count"]) for item in items] == [("claude", "2.1.401", 1)]
    assert items[0]["example_request_id"] == answer.headers["request-id"]
