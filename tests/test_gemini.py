"""Antigravity end to end: the Gemini client API served by pooled Antigravity accounts (GEM, AGL, CAT)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_pool import Pool, settings_for

from sublane_gateway.testing import running_gateway
from sublane_sim import Behaviour, Simulator

MODEL = "gemini-3-flash"
OTHER = "gemini-3-pro-high"
BODY: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "say hi"}]}]}


def gemini_pool(make_pool: Callable[..., Pool], **settings: Any) -> Pool:
    return make_pool(provider="antigravity", **settings)


def client(pool: Pool) -> httpx.Client:
    return pool.gateway.client(headers={"x-goog-api-key": pool.key})


def generate(pool: Pool, model: str = MODEL, **kwargs: Any) -> httpx.Response:
    return client(pool).post(f"/v1beta/models/{model}:generateContent", json=BODY, **kwargs)


def _error(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


def _sse_payloads(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")]


def _runtime(pool: Pool) -> dict[int, dict[str, Any]]:
    answer = pool.admin.get("/api/accounts/runtime").json()
    return {item["id"]: item for item in answer["accounts"]}


def test_gem_2_generate_content_answers_the_bare_gemini_response(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    response = generate(pool)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "response" not in answer  # the Antigravity wrapper is taken off
    assert answer["candidates"][0]["content"]["parts"][0]["text"]
    assert answer["candidates"][0]["finishReason"] == "STOP"
    record = pool.finished[-1]
    assert record.provider == "antigravity" and record.protocol == "gemini" and record.outcome == "success"
    assert record.input_tokens and record.output_tokens is not None
    sent = [r for r in pool.sim.requests() if r.endpoint == "antigravity.generateContent"][-1]
    wrapper = sent.body
    assert wrapper["project"] == pool.sim_accounts[0].project_id and wrapper["model"] == MODEL
    assert wrapper["request"]["contents"] == BODY["contents"]


def test_gem_2_stream_with_alt_sse_and_as_a_json_array(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    sse = client(pool).post(f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse", json=BODY)
    assert sse.status_code == 200 and sse.headers["content-type"].startswith("text/event-stream")
    chunks = _sse_payloads(sse.text)
    assert chunks and all("candidates" in chunk and "response" not in chunk for chunk in chunks)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in chunks[-1]
    array = client(pool).post(f"/v1beta/models/{MODEL}:streamGenerateContent", json=BODY)
    assert array.status_code == 200 and array.headers["content-type"].startswith("application/json")
    elements = json.loads(array.text)
    assert isinstance(elements, list) and elements[-1]["candidates"][0]["finishReason"] == "STOP"
    text = "".join(part["text"] for chunk in elements for part in chunk["candidates"][0]["content"]["parts"])
    assert text.strip()


class IncrementalJsonArray:
    """Reads a JSON array as its bytes arrive, element by element, as a streaming client does;
    raises ``ValueError`` at the first byte that cannot continue a JSON array (RFC 8259)."""

    def __init__(self) -> None:
        self._buffer = ""
        self._opened = self.closed = False
        self._decoder = json.JSONDecoder()
        self.elements: list[Any] = []

    def feed(self, text: str) -> None:
        self._buffer += text
        while True:
            self._buffer = self._buffer.lstrip(" \t\r\n")  # whitespace JSON allows between tokens
            if not self._buffer:
                return
            if self.closed:
                raise ValueError(f"bytes after the array's end: {self._buffer[:20]!r}")
            if not self._opened:
                if self._buffer[0] != "[":
                    raise ValueError(f"not a JSON array: {self._buffer[:20]!r}")
                self._opened, self._buffer = True, self._buffer[1:]
                continue
            if self._buffer[0] == "]":
                self.closed, self._buffer = True, self._buffer[1:]
                continue
            if self.elements:
                if self._buffer[0] != ",":
                    raise ValueError(f"expected ',' between elements: {self._buffer[:20]!r}")
                rest = self._buffer[1:].lstrip(" \t\r\n")
                if not rest:
                    return
                self._buffer = rest
            if self._buffer[0] not in "{[":
                raise ValueError(f"not an element: {self._buffer[:20]!r}")
            try:
                element, end = self._decoder.raw_decode(self._buffer)
            except json.JSONDecodeError:
                return  # incomplete: wait for more
            self.elements.append(element)
            self._buffer = self._buffer[end:]


def test_gem_2_a_quiet_json_array_stream_stays_json(make_pool: Callable[..., Pool]) -> None:
    """Silent past the heartbeat (thinking models are), before the first element and between
    elements: what keeps the connection alive must be JSON too, read as it arrives."""
    pool = gemini_pool(make_pool, sse_heartbeat_s=0.05)
    quiet = Behaviour.ok(deltas=3, first_delta_delay_ms=400, pacing_ms=250)
    pool.sim.script(pool.sim_accounts[0].id, quiet)
    reader = IncrementalJsonArray()
    pieces = 0
    with client(pool).stream("POST", f"/v1beta/models/{MODEL}:streamGenerateContent", json=BODY) as answer:
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
        for text in answer.iter_text():
            reader.feed(text)  # raises at the first byte that is not JSON
            pieces += 1
    assert reader.closed and reader.elements[-1]["candidates"][0]["finishReason"] == "STOP"
    assert pieces > len(reader.elements)  # keep-alive whitespace did arrive in between
    pool.sim.script(pool.sim_accounts[0].id, quiet)
    sse = client(pool).post(f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse", json=BODY)
    assert ": keep-alive" in sse.text  # the SSE form keeps its comment heartbeat (TIME-1)


def test_gem_2_count_tokens_and_the_key_as_a_query_parameter(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    plain = pool.gateway.client()
    counted = plain.post(f"/v1beta/models/{MODEL}:countTokens?key={pool.key}", json=BODY)
    assert counted.status_code == 200 and counted.json()["totalTokens"] > 0
    assert pool.finished[-1].operation == "count_tokens"


def test_gem_2_models_in_gemini_shape(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    listed = client(pool).get("/v1beta/models").json()["models"]
    names = {model["name"] for model in listed}
    assert f"models/{MODEL}" in names
    assert all("generateContent" in model["supportedGenerationMethods"] for model in listed)
    one = client(pool).get(f"/v1beta/models/{MODEL}")
    assert one.status_code == 200 and one.json()["name"] == f"models/{MODEL}"
    missing = client(pool).get("/v1beta/models/gemini-0-nothing")
    assert missing.status_code == 404 and _error(missing)["status"] == "NOT_FOUND"
    assert "model_not_found" in _error(missing)["message"]


@pytest.mark.parametrize(
    ("payload", "status", "reason"),
    [
        (b"{not json", 400, "invalid_json"),
        (b"[]", 400, "invalid_request"),
        (json.dumps({"contents": []}).encode(), 400, "invalid_request"),
        (json.dumps({"contents": "hi"}).encode(), 400, "invalid_request"),
        (json.dumps({"contents": [{"parts": "hi"}]}).encode(), 400, "invalid_request"),
        (json.dumps({**BODY, "generationConfig": [1]}).encode(), 400, "invalid_request"),
        (json.dumps({**BODY, "tools": {"a": 1}}).encode(), 400, "invalid_request"),
    ],
    ids=[
        "malformed",
        "not-an-object",
        "empty-contents",
        "contents-type",
        "parts-type",
        "config-type",
        "tools-type",
    ],
)
def test_gem_2_bad_input_gets_google_envelope_and_no_upstream_call(
    make_pool: Callable[..., Pool], payload: bytes, status: int, reason: str
) -> None:
    pool = gemini_pool(make_pool)
    response = client(pool).post(
        f"/v1beta/models/{MODEL}:generateContent",
        content=payload,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == status
    error = _error(response)
    assert error["code"] == status and error["status"] == "INVALID_ARGUMENT"
    assert error["details"][0]["reason"] == reason and reason in error["message"]
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 0


def test_gem_2_a_bad_key_and_an_unreachable_model_in_google_shape(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    refused = pool.gateway.client(headers={"x-goog-api-key": "sl_wrong"}).post(
        f"/v1beta/models/{MODEL}:generateContent", json=BODY
    )
    assert refused.status_code == 401 and _error(refused)["status"] == "UNAUTHENTICATED"
    unknown = generate(pool, model="gemini-0-nothing")
    assert unknown.status_code == 404 and _error(unknown)["details"][0]["reason"] == "model_not_found"
    pinned = generate(pool, model="codex/gpt-5")  # a provider whose protocol cannot serve Gemini yet
    assert pinned.status_code == 404


def test_gem_1_an_imported_account_without_project_is_onboarded(sim: Simulator, tmp_path: Path) -> None:
    account = sim.create_account("antigravity", onboarded=False)
    credentials = {key: value for key, value in account.credentials.items() if key != "project_id"}
    with running_gateway(settings_for(sim, tmp_path / "data")) as gateway:
        admin = gateway.admin()
        imported = admin.post(
            "/api/accounts/import",
            json={"provider": "antigravity", "name": "ag", "credentials": credentials, "group_ids": [1]},
        )
        assert imported.status_code == 201, imported.text
        assert imported.json()["identity"]["subject"] == account.project_id
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        answer = gateway.client(headers={"x-goog-api-key": key}).post(
            f"/v1beta/models/{MODEL}:generateContent", json=BODY
        )
        assert answer.status_code == 200, answer.text
    endpoints = [record.endpoint for record in sim.requests()]
    assert "antigravity.onboardUser" in endpoints


def test_gem_3_google_oauth_login_with_paste_back(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool, accounts=0)
    started = pool.admin.post("/api/accounts/oauth/start", json={"provider": "antigravity", "group_ids": [1]})
    assert started.status_code == 200, started.text
    start = started.json()
    redirect = httpx.get(start["authorize_url"], follow_redirects=False)
    assert redirect.status_code == 302
    completed = pool.admin.post(
        "/api/accounts/oauth/complete",
        json={"state": start["state"], "callback_url": redirect.headers["location"]},
    )
    assert completed.status_code == 201, completed.text
    account = completed.json()
    assert account["provider"] == "antigravity" and account["identity"]["email"]
    assert account["identity"]["subject"]  # the project, found at login
    assert generate(pool).status_code == 200


def test_gem_4_the_next_host_serves_after_a_connection_failure(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    with socket_that_refuses() as dead:
        pool = gemini_pool(make_pool, antigravity_base_url=f"{dead},{sim.antigravity_base_url}")
        response = generate(pool)
    assert response.status_code == 200, response.text
    assert pool.finished[-1].outcome == "success"


def test_gem_4_no_capacity_moves_to_the_next_host_in_the_same_lease(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    pool = gemini_pool(
        make_pool, antigravity_base_url=f"{sim.antigravity_base_url},{sim.antigravity_base_url}"
    )
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(503))  # "No capacity available for model …"
    response = generate(pool)
    assert response.status_code == 200, response.text
    assert [record.outcome for record in pool.finished] == ["success"]  # one request, one record
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 2


def test_agl_1_a_structured_model_limit_cools_only_that_model(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    account = pool.sim_accounts[0].id
    pool.sim.script(account, Behaviour.error(429, error_code="RATE_LIMIT_EXCEEDED", retry_delay="120s"))
    limited = generate(pool)
    assert limited.status_code == 429 and "model_rate_limited" in _error(limited)["message"]
    assert 100 <= int(limited.headers["retry-after"]) <= 120
    again = generate(pool)  # AGL-3: the limit held here, no upstream call
    assert again.status_code == 429 and _error(again)["details"][0]["reason"] == "model_cooling"
    assert generate(pool, model=OTHER).status_code == 200  # other models stay usable
    assert pool.sim.counters(account).model_requests == 2
    state = _runtime(pool)[pool.account_ids[0]]  # AGL-5: the card counts limited models
    assert [item["model"] for item in state["limited_models"]] == [MODEL]


def test_agl_1_a_limit_naming_another_model_is_account_wide(make_pool: Callable[..., Pool]) -> None:
    # A cooldown longer than a loaded CI's pause between two calls (the 5 s fallback was not).
    pool = gemini_pool(make_pool, cooldown_fallback_s=60)
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="RATE_LIMIT_EXCEEDED", error_model=OTHER)
    )
    assert generate(pool).status_code == 429
    cooled = generate(pool, model=OTHER)
    assert cooled.status_code == 429 and _error(cooled)["details"][0]["reason"] == "account_cooling"


def test_agl_2_model_limits_survive_a_restart_and_end_with_disable_enable(
    sim: Simulator, tmp_path: Path
) -> None:
    account = sim.create_account("antigravity")
    settings = settings_for(sim, tmp_path / "data")
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        body = {"provider": "antigravity", "name": "a", "credentials": account.credentials, "group_ids": [1]}
        account_id = admin.post("/api/accounts/import", json=body).json()["id"]
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        sim.script(account.id, Behaviour.error(429, error_code="QUOTA_EXHAUSTED", retry_delay="600s"))
        api = gateway.client(headers={"x-goog-api-key": key})
        assert api.post(f"/v1beta/models/{MODEL}:generateContent", json=BODY).status_code == 429
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        api = gateway.client(headers={"x-goog-api-key": key})
        kept = api.post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
        assert kept.status_code == 429 and "model_cooling" in kept.json()["error"]["message"]
        assert admin.patch(f"/api/accounts/{account_id}", json={"enabled": False}).status_code == 200
        assert admin.patch(f"/api/accounts/{account_id}", json={"enabled": True}).status_code == 200
        assert api.post(f"/v1beta/models/{MODEL}:generateContent", json=BODY).status_code == 200
    assert sim.counters(account.id).model_requests == 2


def test_agl_2_clear_cooldown_and_reauthorization_end_model_limits(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    account_id, sim_account = pool.account_ids[0], pool.sim_accounts[0]
    limit = Behaviour.error(429, error_code="RATE_LIMIT_EXCEEDED", retry_delay="600s")
    pool.sim.script(sim_account.id, limit)
    assert generate(pool).status_code == 429
    assert pool.admin.post(f"/api/accounts/{account_id}/resume").status_code == 200
    assert generate(pool).status_code == 200
    pool.sim.script(sim_account.id, limit)
    assert generate(pool).status_code == 429
    fresh = pool.sim.credentials(sim_account.id)
    assert (
        pool.admin.post(f"/api/accounts/{account_id}/credentials", json={"credentials": fresh}).status_code
        == 200
    )
    assert generate(pool).status_code == 200


def test_agl_4_after_the_limit_one_request_per_model_tries_recovery(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="RATE_LIMIT_EXCEEDED", retry_delay="5s")
    )
    assert generate(pool).status_code == 429
    pool.gateway.clock.advance(6)
    runtime = pool.runtime
    account = runtime.directory.get(pool.account_ids[0])
    assert runtime.scheduler.cooldowns.probe_only(account.id, MODEL)
    probe = runtime.scheduler.take(account, MODEL, "probe-1")
    assert probe is not None
    try:
        assert runtime.scheduler.take(account, MODEL, "probe-2") is None  # one at a time
        other = runtime.scheduler.take(account, OTHER, "other-1")  # other models keep their concurrency
        assert other is not None
        other.release("success")
    finally:
        probe.release("success")
    assert generate(pool).status_code == 200  # the recovery succeeded: the model is healthy again
    assert not runtime.scheduler.cooldowns.probe_only(account.id, MODEL)


def test_cat_1_catalogue_comes_from_fetch_available_models(make_pool: Callable[..., Pool]) -> None:
    pool = gemini_pool(make_pool)
    listed = {model["name"] for model in client(pool).get("/v1beta/models").json()["models"]}
    models = set(pool.sim.account_state(pool.sim_accounts[0].id)["models"])
    aliases = pool.admin.get("/api/groups/1/aliases").json()["aliases"]  # those of listed models (ALIAS-1)
    shown = models | {entry["alias"] for entry in aliases if entry["model"] in models}
    assert listed == {f"models/{model}" for model in shown}
    assert any(record.endpoint == "antigravity.fetchAvailableModels" for record in pool.sim.requests())


class socket_that_refuses:
    """A loopback address where nothing listens (a closed port)."""

    def __enter__(self) -> str:
        import socket

        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self._port = probe.getsockname()[1]
        probe.close()
        return f"http://127.0.0.1:{self._port}"

    def __exit__(self, *_exc: object) -> None:
        return None


def test_agl_3_a_provider_limit_is_relayed_as_model_rate_limited_then_held_as_model_cooling(
    make_pool: Callable[..., Pool],
) -> None:
    pool = gemini_pool(make_pool)
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="QUOTA_EXHAUSTED", retry_delay="3h")
    )
    relayed = generate(pool)
    assert relayed.status_code == 429 and _error(relayed)["details"][0]["reason"] == "model_rate_limited"
    assert 1 <= int(relayed.headers["retry-after"]) <= 3600  # bounded, however long the upstream says
    stored = generate(pool)  # held here: our own answer, and the upstream is not asked
    assert stored.status_code == 429 and _error(stored)["details"][0]["reason"] == "model_cooling"
    assert 1 <= int(stored.headers["retry-after"]) <= 3600
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 1
    assert generate(pool, model=OTHER).status_code == 200


def test_agl_5_the_card_counts_limited_models_and_the_account_stays_schedulable(
    make_pool: Callable[..., Pool],
) -> None:
    pool = gemini_pool(make_pool)
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="RATE_LIMIT_EXCEEDED", retry_delay="60s")
    )
    assert generate(pool).status_code == 429
    state = _runtime(pool)[pool.account_ids[0]]
    assert state["state"] == "model_limited" and len(state["limited_models"]) == 1
    assert state["cooldown_until"] is None  # no account-wide cooldown
    assert generate(pool, model=OTHER).status_code == 200


def test_cat_3_the_group_catalogue_lists_native_ids_once_in_both_shapes(
    make_pool: Callable[..., Pool],
) -> None:
    pool = gemini_pool(make_pool, accounts=2)
    openai_shape = [model["id"] for model in pool.client().get("/v1/models").json()["data"]]
    gemini_shape = [model["name"] for model in client(pool).get("/v1beta/models").json()["models"]]
    assert len(openai_shape) == len(set(openai_shape)) and MODEL in openai_shape
    assert gemini_shape == [f"models/{model}" for model in openai_shape]


def _record_of(pool: Pool, answer: httpx.Response) -> Any:
    """The record of ``answer``'s call (records are sent as calls end, not in answer order)."""
    request_id = answer.headers["x-request-id"]
    deadline = time.monotonic() + 5
    while True:
        found = [record for record in pool.finished if record.request_id == request_id]
        if found:
            return found[0]
        assert time.monotonic() < deadline, "no record"
        time.sleep(0.01)


def _upstream_models(pool: Pool) -> list[str]:
    calls = ("antigravity.generateContent", "antigravity.streamGenerateContent")
    return [r.body["model"] for r in pool.sim.requests() if r.endpoint in calls]


def test_cat_2_a_thinking_level_in_parentheses_resolves_to_the_listed_native_id(
    make_pool: Callable[..., Pool],
) -> None:
    pool = gemini_pool(make_pool)
    for written, native in (
        ("gemini-3-pro(high)", "gemini-3-pro-high"),
        ("gemini-3-pro(LOW)", "gemini-3-pro-low"),
    ):
        answer = generate(pool, model=written)
        assert answer.status_code == 200, (written, answer.text)
        assert _upstream_models(pool).count(native) == 1  # the upstream gets an id it lists
        assert _record_of(pool, answer).model == native  # quota, limits and the record: the native id
    openai = pool.client().post("/v1/responses", json={"model": "gemini-3-pro(high)", "input": "hi"})
    assert openai.status_code == 200, openai.text
    budget = generate(pool, model="gemini-3-flash(8192)")  # a numeric budget names no id: the base
    assert budget.status_code == 200
    assert _record_of(pool, budget).model == "gemini-3-flash" and "gemini-3-flash" in _upstream_models(pool)
    unknown = generate(pool, model="gemini-9-pro(high)")
    assert unknown.status_code == 404 and _error(unknown)["details"][0]["reason"] == "model_not_found"


def test_alias_2_a_dash_level_on_a_base_id_resolves_to_the_base_the_group_lists(
    make_pool: Callable[..., Pool],
) -> None:
    pool = gemini_pool(make_pool)
    answer = generate(pool, model="gemini-3-flash-high")  # the group lists gemini-3-flash only
    assert answer.status_code == 200, answer.text
    assert _upstream_models(pool)[-1] == "gemini-3-flash"
    assert _record_of(pool, answer).model == "gemini-3-flash"
    native = generate(pool, model="gemini-3-pro-low")  # listed itself: kept as it is
    assert native.status_code == 200 and _upstream_models(pool)[-1] == "gemini-3-pro-low"
    unknown = generate(pool, model="gemini-9-flash-high")
    assert unknown.status_code == 404


def test_alias_2_a_suffix_form_shares_its_native_ids_model_limit_and_quota(
    make_pool: Callable[..., Pool],
) -> None:
    pool = gemini_pool(make_pool)
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="RATE_LIMIT_EXCEEDED", retry_delay="60s")
    )
    assert generate(pool, model="gemini-3-pro(high)").status_code == 429  # the limit of gemini-3-pro-high
    held = generate(pool, model="gemini-3-pro-high")
    assert held.status_code == 429 and _error(held)["details"][0]["reason"] == "model_cooling"
    again = generate(pool, model="gemini-3-pro(high)")
    assert again.status_code == 429 and _error(again)["details"][0]["reason"] == "model_cooling"
    state = _runtime(pool)[pool.account_ids[0]]
    assert [item["model"] for item in state["limited_models"]] == ["gemini-3-pro-high"]
    assert generate(pool, model="gemini-3-pro(low)").status_code == 200  # another native id
