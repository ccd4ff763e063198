"""Upstream changes watched (CLIENT-7): what an upstream answers that SubLane does not know is
relayed as before, counted, logged once a day, listed, and alerted once per new name — against
the simulator scripted to answer as a newer upstream would."""

from __future__ import annotations

import base64
import concurrent.futures
import logging
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from gateway_pool import Pool, settings_for
from ports import free_port
from postgres_server import postgres_bin, running_postgres
from webhook_receiver import received, receiver

from sublane_gateway.testing import running_gateway
from sublane_sim import Behaviour, Simulator

CODEX_BODY = {"model": "gpt-5-codex", "input": "hi", "stream": True}
CLAUDE_BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
}


def _changes(admin: httpx.Client, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The listed upstream changes, once there are ``count`` of them (written in the background)."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = admin.get("/api/upstream-changes")
        assert answer.status_code == 200, answer.text
        items: list[dict[str, Any]] = answer.json()["items"]
        if len(items) >= count or time.monotonic() > deadline:
            return items
        time.sleep(0.05)


def _unknown_total(admin: httpx.Client) -> dict[tuple[str, str], float]:
    found = {}
    for line in admin.get("/metrics").text.splitlines():
        if line.startswith("sublane_upstream_unknown_total{"):
            labels, value = line[len("sublane_upstream_unknown_total{") :].split("} ")
            parts = dict(part.split("=") for part in labels.split(","))
            found[(parts["provider"].strip('"'), parts["kind"].strip('"'))] = float(value)
    return found


def test_client_7_unknown_event_relayed_counted_listed(make_pool: Callable[..., Pool]) -> None:
    """A new SSE event type and a new field on the terminal event reach the client byte for byte
    (the call succeeds as before); each is counted, and listed with a request that carried it."""
    pool = make_pool()
    account = pool.sim_accounts[0]
    changed = Behaviour.ok(extra_event="response.thinking_budget.updated", extra_field="safety_report")
    pool.sim.script(account.id, changed, changed)
    with pool.client() as client:
        first = client.post("/v1/responses", json=CODEX_BODY)
        second = client.post("/v1/responses", json=CODEX_BODY)
    for answer in (first, second):
        assert answer.status_code == 200
        assert "event: response.thinking_budget.updated\n" in answer.text  # relayed as it came
        assert '"safety_report":true' in answer.text.replace(" ", "")
        assert "event: response.completed" in answer.text
    items = _changes(pool.admin, 2)
    by_name = {(item["kind"], item["name"]): item for item in items}
    event = by_name[("event", "response.thinking_budget.updated")]
    field = by_name[("terminal_field", "safety_report")]
    assert len(items) == 2  # nothing else the simulator sends is news
    for item in (event, field):
        assert item["provider"] == "codex" and item["count"] == 2
        assert item["first_seen"] <= item["last_seen"]
        assert item["example_request_id"] == first.headers["x-request-id"]
    assert _unknown_total(pool.admin) == {("codex", "event"): 2, ("codex", "terminal_field"): 2}
    records = pool.admin.get("/api/requests").json()["items"]
    assert {record["outcome"] for record in records} == {"success"}  # relayed, not a failure


def test_client_7_unknown_answer_field_and_error_code(make_pool: Callable[..., Pool]) -> None:
    """A JSON answer's new top-level field, and an error type SubLane has never seen: relayed as
    before (the error keeps its status and message for the client), and listed."""
    pool = make_pool(provider="claude")
    account = pool.sim_accounts[0]
    pool.sim.script(
        account.id,
        Behaviour.ok(extra_field="thinking_audit"),
        Behaviour.error(400, error_code="prompt_policy_error", error_message="Not allowed."),
    )
    with pool.client() as client:
        answer = client.post("/v1/messages", json=CLAUDE_BODY)
        refused = client.post("/v1/messages", json=CLAUDE_BODY)
    assert answer.status_code == 200 and answer.json()["thinking_audit"] is True
    assert refused.status_code == 400 and "Not allowed." in refused.json()["error"]["message"]  # as before
    items = _changes(pool.admin, 2)
    assert {(item["provider"], item["kind"], item["name"]) for item in items} == {
        ("claude", "answer_field", "thinking_audit"),
        ("claude", "error", "prompt_policy_error"),
    }
    refused_item = next(item for item in items if item["kind"] == "error")
    assert refused_item["example_request_id"] == refused.headers["request-id"]


def test_client_7_unknown_catalogue_model(make_pool: Callable[..., Pool]) -> None:
    """A model the provider's catalogue lists that SubLane does not know is listed (and served:
    the catalogue is the upstream's)."""
    pool = make_pool(account_options={"models": ["gpt-5-codex", "gpt-7-orion"]})
    items = _changes(pool.admin, 1)
    assert [(item["provider"], item["kind"], item["name"]) for item in items] == [
        ("codex", "model", "gpt-7-orion")
    ]
    assert items[0]["example_request_id"] is None  # seen by a catalogue read, not by a call
    served = pool.client().post("/v1/responses", json={"model": "gpt-7-orion", "input": "hi"})
    assert served.status_code == 200


def test_client_7_logged_once_per_day(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    """The same unknown name is logged once per day however often it comes, and again the next day."""
    pool = make_pool()
    into_day = pool.gateway.clock.time() % 86400
    if into_day > 86400 - 120:  # run near a real UTC midnight: start the test's days just after one
        pool.gateway.clock.advance(86400 - into_day + 1)
    account = pool.sim_accounts[0]
    changed = Behaviour.ok(extra_event="response.annotations.added")
    pool.sim.script(account.id, *[changed] * 4)

    def logged() -> list[str]:
        return [
            record.getMessage()
            for record in caplog.records
            if record.name == "sublane.upstream" and "response.annotations.added" in record.getMessage()
        ]

    def seen(count: int) -> None:
        deadline = time.monotonic() + 10
        while _changes(pool.admin, 1)[0]["count"] < count and time.monotonic() < deadline:
            time.sleep(0.05)

    with caplog.at_level(logging.WARNING, logger="sublane.upstream"):
        for _ in range(2):
            assert pool.client().post("/v1/responses", json=CODEX_BODY).status_code == 200
            seen(_ + 1)
        assert len(logged()) == 1
        pool.gateway.clock.advance(86400)
        for count in (3, 4):
            assert pool.client().post("/v1/responses", json=CODEX_BODY).status_code == 200
            seen(count)
    assert len(logged()) == 2, logged()


def test_client_7_alert_once_per_new_name(make_pool: Callable[..., Pool], tmp_path: Path) -> None:
    """``upstream.changed`` goes out once per new name, not once per sighting (to a real receiver)."""
    pool = make_pool(alert_retry_s=0.2)
    port, log = free_port(), tmp_path / "received.jsonl"
    made = pool.admin.post(
        "/api/webhooks", json={"url": f"http://127.0.0.1:{port}/a", "events": ["upstream.changed"]}
    ).json()
    account = pool.sim_accounts[0]
    pool.sim.script(
        account.id,
        *[Behaviour.ok(extra_event="response.aroma.delta")] * 3,
        Behaviour.ok(extra_event="response.video.delta"),
    )
    with receiver(port, made["secret"], log):
        first = pool.client().post("/v1/responses", json=CODEX_BODY)
        for _ in range(2):
            pool.client().post("/v1/responses", json=CODEX_BODY)
        got = received(log, 1)
        pool.client().post("/v1/responses", json=CODEX_BODY)
        got = received(log, 2)
        time.sleep(1.2)  # two more flushes: nothing more
        got = received(log, 2)
    assert [item["event"] for item in got] == ["upstream.changed", "upstream.changed"]
    assert all(item["valid"] for item in got)
    assert got[0]["body"]["data"] == {
        "provider": "codex",
        "kind": "event",
        "name": "response.aroma.delta",
        "example_request_id": first.headers["x-request-id"],
    }
    assert got[1]["body"]["data"]["name"] == "response.video.delta"
    assert "upstream.changed" in pool.admin.get("/api/webhooks").json()["events_available"]


def test_client_7_api_admin_only(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _member, session = pool.gateway.member(pool.admin, "mo")
    assert session.get("/api/upstream-changes").status_code == 403
    assert httpx.get(f"{pool.gateway.url}/api/upstream-changes").status_code == 401
    assert pool.admin.get("/api/upstream-changes").json() == {"items": []}


@pytest.mark.xdist_group("postgres")
@pytest.mark.skipif(postgres_bin() is None, reason="needs PostgreSQL's server binaries")
def test_client_7_alert_once_per_new_name_across_replicas(sim: Simulator, tmp_path: Path) -> None:
    """Two replicas on one PostgreSQL see the same new event type at the same time: the insert that
    makes its row decides, so one alert goes out, and either replica lists every sighting."""
    port, log = free_port(), tmp_path / "received.jsonl"
    account = sim.create_account("codex")
    sim.set_default(account.id, Behaviour.ok(extra_event="response.hologram.delta"))
    with running_postgres() as postgres:
        url = postgres.new_database()
        key = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
        settings = [
            settings_for(
                sim, tmp_path / f"replica-{n}", database_url=url, credentials_key=key, alert_retry_s=0.2
            )
            for n in (1, 2)
        ]
        with running_gateway(settings[0]) as first, running_gateway(settings[1]) as second:
            admin = first.admin()
            body = {
                "provider": "codex",
                "name": "shared",
                "credentials": account.credentials,
                "group_ids": [1],
            }
            assert admin.post("/api/accounts/import", json=body).status_code == 201
            made = admin.post(
                "/api/webhooks", json={"url": f"http://127.0.0.1:{port}/a", "events": ["upstream.changed"]}
            ).json()
            secret = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
            clients = [g.client(headers={"authorization": f"Bearer {secret}"}) for g in (first, second)] * 3
            with receiver(port, made["secret"], log):
                with concurrent.futures.ThreadPoolExecutor(6) as workers:
                    answers = list(
                        workers.map(lambda client: client.post("/v1/responses", json=CODEX_BODY), clients)
                    )
                assert all(answer.status_code == 200 for answer in answers)
                for gateway in (first, second):
                    deadline = time.monotonic() + 10
                    while _changes(gateway.admin(), 1)[0]["count"] < 6:
                        assert time.monotonic() < deadline
                        time.sleep(0.05)
                got = received(log, 1)
                time.sleep(1.2)  # both replicas flushed again meanwhile: still one
                got = received(log, 1)
                with first.engine.connect() as connection:
                    events = connection.execute(
                        sa.text("SELECT event_id, event FROM webhook_deliveries")
                    ).all()
    # One event (one outbox row, one X-SubLane-Delivery id), whichever replica wrote it. Delivery is
    # at least once: two replicas' deliverers may both send that row, and the receiver
    # de-duplicates on its id (ALERT-3) — the event itself exists once.
    assert [event for _id, event in events] == ["upstream.changed"]
    assert {item["delivery"] for item in got} == {events[0][0]}
    assert {item["body"]["data"]["name"] for item in got} == {"response.hologram.delta"}


def test_client_7_refused_client_versions_are_listed_and_survive_a_restart(tmp_path: Path) -> None:
    """The entry point CLIENT-3's refusals call (``UpstreamWatch.client_version_refused``): the
    version asked for is listed with kind ``client_version``, alerted once, and kept in the
    database — a restarted watch adds to the same row instead of starting over."""
    import asyncio

    from sublane_core import AlertOutbox, FakeClock, Webhook, WebhookDelivery, create_db_engine
    from sublane_gateway.pipeline._upstream_watch import UpstreamWatch, upstream_changes
    from sublane_gateway.testing import make_settings, migrate

    settings = make_settings(tmp_path / "data")
    migrate(settings)
    engine = create_db_engine(settings.effective_database_url)
    clock = FakeClock(1_800_000_000.0)
    with engine.begin() as connection:
        connection.execute(
            sa.insert(Webhook).values(
                url="http://127.0.0.1:9/a", events=["upstream.changed"], format="json", enabled=True,
                secret=b"sealed", created_at=clock.time(), updated_at=clock.time(),
            )
        )  # fmt: skip

    async def one_life(request_id: str) -> None:
        watch = UpstreamWatch(engine, clock, AlertOutbox("SubLane", clock), {})
        watch.start()
        watch.client_version_refused("codex", "0.180.0", request_id)
        assert watch.counts == {("codex", "client_version"): 1}
        await watch.close()

    try:
        asyncio.run(one_life("req_first"))
        clock.advance(60)
        asyncio.run(one_life("req_second"))
        (item,) = upstream_changes(engine)
        with engine.connect() as connection:
            alerts = connection.execute(sa.select(WebhookDelivery.event, WebhookDelivery.payload)).all()
    finally:
        engine.dispose()
    assert item == {
        "provider": "codex", "kind": "client_version", "name": "0.180.0", "first_seen": 1_800_000_000.0,
        "last_seen": 1_800_000_060.0, "count": 2, "example_request_id": "req_first",
    }  # fmt: skip
    assert [event for event, _payload in alerts] == ["upstream.changed"]
    assert '"kind":"client_version"' in alerts[0][1] and '"name":"0.180.0"' in alerts[0][1]


@pytest.mark.parametrize("provider", ["codex", "claude", "antigravity"])
def test_client_7_what_the_providers_know_covers_their_usual_answers(
    make_pool: Callable[..., Pool], provider: str
) -> None:
    """No noise: streams, JSON answers, in-stream failures and refusals as each upstream usually
    sends them are all in its vocabulary (the simulator follows PROTOCOLS.md)."""
    pool = make_pool(provider=provider)
    account = pool.sim_accounts[0]
    pool.sim.script(
        account.id, Behaviour.ok(), Behaviour.ok(), Behaviour.overload(after_deltas=1), Behaviour.error(429)
    )
    model = {"codex": "gpt-5-codex", "claude": "claude-sonnet-4-6", "antigravity": "gemini-3-flash"}[provider]
    with pool.client() as client:
        answers = [
            client.post("/v1/responses", json={"model": model, "input": "hi", "stream": stream})
            for stream in (True, False, True, False)
        ]
        assert [answer.status_code for answer in answers[:2]] == [200, 200]
        pool.sim.script(account.id, Behaviour.ok(), Behaviour.ok())
        pool.gateway.clock.advance(600)  # past the 429's cooldown
        if provider == "claude":  # its own protocol: a JSON answer relayed as it came, and a stream
            for stream in (False, True):
                native = client.post("/v1/messages", json={**CLAUDE_BODY, "stream": stream})
                assert native.status_code == 200, native.text
        if provider == "antigravity":
            for method in ("generateContent", "streamGenerateContent?alt=sse"):
                body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
                native = client.post(f"/v1beta/models/{model}:{method}", json=body)
                assert native.status_code == 200, native.text
    pool.settle()
    time.sleep(0.8)  # a flush
    assert pool.admin.get("/api/upstream-changes").json()["items"] == []


async def test_client_7_unknown_frame_type_over_the_codex_websocket(make_pool: Callable[..., Pool]) -> None:
    """Responses over WebSocket: a frame of a type the provider does not know reaches the client
    and is listed, like a stream's event."""
    import asyncio
    import json

    import websockets

    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(extra_event="response.hologram.delta"))
    url = pool.gateway.url.replace("http://", "ws://") + "/v1/responses"
    headers = {"authorization": f"Bearer {pool.key}", "openai-beta": "responses_websockets=2026-02-06"}
    create = {
        "type": "response.create",
        "model": "gpt-5-codex",
        "input": "hi",
        "store": False,
        "stream": True,
    }
    async with websockets.connect(url, additional_headers=headers) as ws:
        await ws.send(json.dumps(create))
        types = []
        while not types or types[-1] != "response.completed":
            types.append(json.loads(await asyncio.wait_for(ws.recv(), 10))["type"])
    assert "response.hologram.delta" in types
    items = await asyncio.to_thread(_changes, pool.admin, 1)
    assert [(item["provider"], item["kind"], item["name"]) for item in items] == [
        ("codex", "event", "response.hologram.delta")
    ]


def test_client_7_unknown_field_in_a_json_answer_collected_from_a_stream(
    make_pool: Callable[..., Pool],
) -> None:
    """Codex answers JSON calls by a stream SubLane collects: the terminal event's new field and a
    new event type are listed there too, and the answer is made as before."""
    pool = make_pool()
    changed = Behaviour.ok(extra_event="response.hologram.delta", extra_field="safety_report")
    pool.sim.script(pool.sim_accounts[0].id, changed)
    answer = pool.client().post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi"})
    assert answer.status_code == 200 and answer.json()["status"] == "completed"
    items = _changes(pool.admin, 2)
    assert {(item["kind"], item["name"]) for item in items} == {
        ("event", "response.hologram.delta"),
        ("terminal_field", "safety_report"),
    }
    assert {item["example_request_id"] for item in items} == {answer.headers["x-request-id"]}


async def test_client_7_unknown_event_in_a_websocket_turn_served_by_another_upstream(
    make_pool: Callable[..., Pool],
) -> None:
    """A Responses WebSocket turn served by Claude goes through the hub as one HTTP stream: a new
    Claude event type there is listed under Claude."""
    import asyncio
    import json

    import websockets

    pool = make_pool(provider="claude")
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(extra_event="thinking_budget_update"))
    url = pool.gateway.url.replace("http://", "ws://") + "/v1/responses"
    headers = {"authorization": f"Bearer {pool.key}", "openai-beta": "responses_websockets=2026-02-06"}
    create = {"type": "response.create", "model": "claude-sonnet-4-6", "input": "hi", "stream": True}
    async with websockets.connect(url, additional_headers=headers) as ws:
        await ws.send(json.dumps(create))
        types: list[str] = []
        while not types or types[-1] not in ("response.completed", "response.failed", "error"):
            types.append(json.loads(await asyncio.wait_for(ws.recv(), 10))["type"])
    assert types[-1] == "response.completed"
    items = await asyncio.to_thread(_changes, pool.admin, 1)
    assert [(item["provider"], item["kind"], item["name"]) for item in items] == [
        ("claude", "event", "thinking_budget_update")
    ]


def test_client_7_an_api_key_catalogue_is_not_news(make_pool: Callable[..., Pool]) -> None:
    """A Gemini API key's catalogue is whatever the key lists (the provider ships no model list of
    its own): importing a key and serving calls on it lists no upstream change and raises no
    alert — else every model of every imported key would be reported as news."""
    pool = make_pool(provider="gemini")
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with pool.client() as client:
        for method in ("generateContent", "streamGenerateContent?alt=sse"):
            native = client.post(f"/v1beta/models/gemini-2.5-flash:{method}", json=body)
            assert native.status_code == 200, native.text
    pool.settle()
    time.sleep(0.8)  # a flush
    assert pool.admin.get("/api/upstream-changes").json()["items"] == []
