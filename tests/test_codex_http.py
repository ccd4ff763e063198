"""The Codex path over HTTP: Responses (SSE and JSON), compaction and models, against the simulator."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable

import httpx
import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour, parse_sse

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True, "store": False}


def _events(response: httpx.Response) -> list[str]:
    return [event.data.get("type") for event in parse_sse(response.text)]


def test_hist_4_stream_relays_every_event_with_a_request_id(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert re.fullmatch(r"req_[0-9a-z]{26}", response.headers["x-request-id"])
    types = _events(response)
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "response.output_text.delta" in types
    record = pool.finished[-1]
    assert record.request_id == response.headers["x-request-id"]
    assert record.outcome == "success" and record.upstream_status == 200
    assert record.account_id == pool.account_ids[0] and record.provider == "codex"
    assert record.input_tokens is not None and record.output_tokens is not None
    assert record.first_token_ms is not None and record.first_token_ms <= record.duration_ms
    assert pool.runtime.leases.total_in_flight() == 0


def test_hist_4_caller_supplied_request_ids_are_ignored(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    response = pool.client().post("/v1/responses", json=BODY, headers={"x-request-id": "req_mine"})
    assert response.headers["x-request-id"] != "req_mine"


def test_non_streaming_callers_get_the_final_response(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    response = pool.client().post("/v1/responses", json={**BODY, "stream": False})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "completed" and body["object"] == "response"
    assert body["output"][-1]["type"] == "message"
    upstream = pool.sim.requests(endpoint="codex.responses")[-1]
    assert upstream.body["stream"] is True and upstream.body["store"] is False


def test_upstream_gets_account_headers_and_the_clients_turn_headers(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0]
    headers = {
        "session-id": "thread-1",
        "originator": "codex_exec",
        "user-agent": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm",  # a usable identity (CLIENT-1)
        "x-codex-turn-metadata": "{}",
    }
    pool.client().post("/v1/responses", json={**BODY, "prompt_cache_key": "thread-1"}, headers=headers)
    upstream = pool.sim.requests(endpoint="codex.responses")[-1]
    assert upstream.headers["chatgpt-account-id"] == account.account_id
    assert upstream.headers["authorization"] == f"Bearer {account.access_token}"
    assert upstream.headers["session-id"] == "thread-1"
    assert upstream.headers["originator"] == "codex_exec"
    assert "x-codex-turn-metadata" in upstream.headers
    assert pool.key not in json.dumps(dict(upstream.headers))


def test_aff_2_calls_without_a_conversation_key_get_a_random_correlation_id(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    client = pool.client()
    client.post("/v1/responses", json=BODY)
    client.post("/v1/responses", json=BODY)
    first, second = pool.sim.requests(endpoint="codex.responses")[-2:]
    assert first.headers["x-client-request-id"] != second.headers["x-client-request-id"]
    assert "session-id" not in first.headers and "session_id" not in first.headers


def test_aff_6_provider_prefix_limits_and_is_stripped(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    response = pool.client().post("/v1/responses", json={**BODY, "model": "codex/gpt-5-codex"})
    assert response.status_code == 200
    assert pool.sim.requests(endpoint="codex.responses")[-1].body["model"] == "gpt-5-codex"
    other = pool.client().post("/v1/responses", json={**BODY, "model": "claude/gpt-5-codex"})
    assert other.status_code == 404
    assert other.json()["error"]["code"] == "model_not_found"


def test_models_lists_what_the_group_can_reach(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    listed = pool.client().get("/v1/models").json()
    ids = [item["id"] for item in listed["data"]]
    assert "gpt-5-codex" in ids and all("/" not in model for model in ids)
    pool.admin.patch("/api/groups/1", json={"model_policy": {"allow": ["gpt-5-codex"]}})
    assert [item["id"] for item in pool.client().get("/v1/models").json()["data"]] == ["gpt-5-codex"]


def test_group_policy_and_unknown_models_are_refused_in_openai_shape(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.admin.patch("/api/groups/1", json={"model_policy": {"allow": ["gpt-5"]}})
    refused = pool.client().post("/v1/responses", json=BODY)
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "model_not_allowed" and error["type"] == "permission_error"
    assert "x-request-id" in refused.headers
    pool.admin.patch("/api/groups/1", json={"model_policy": None})
    unknown = pool.client().post("/v1/responses", json={**BODY, "model": "gpt-99"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 0
    assert [record.outcome for record in pool.finished] == ["rejected", "rejected"]


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code"),
    [
        (b"{not json", "application/json", 400, "invalid_json"),
        (b"[1]", "application/json", 400, "invalid_request"),
        (b'{"input": "x"}', "application/json", 400, "invalid_request"),
        (b'{"model": 5}', "application/json", 400, "invalid_request"),
        (b"model=x", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
    ],
)
def test_bad_bodies_get_openai_errors_and_no_record(
    make_pool: Callable[..., Pool], content: bytes, content_type: str, status: int, code: str
) -> None:
    pool = make_pool()
    response = pool.client().post("/v1/responses", content=content, headers={"content-type": content_type})
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert pool.finished == []


def test_invalid_api_keys_get_401_in_openai_shape(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    for headers in (
        {},
        {"authorization": "Bearer sl_wrong"},
        {"authorization": "Basic abc"},
        {"authorization": f"Bearer {pool.key}", "x-api-key": "sl_other"},
    ):
        client = pool.gateway.client()
        response = client.post("/v1/responses", json=BODY, headers=headers)
        assert response.status_code == 401, headers
        assert response.json()["error"]["code"] == "invalid_api_key"
        assert response.json()["error"]["type"] == "authentication_error"
    ok = pool.gateway.client().post("/v1/responses", json=BODY, headers={"x-api-key": pool.key})
    assert ok.status_code == 200
    assert pool.finished[-1].outcome == "success" and len(pool.finished) == 1


def test_revoked_paused_and_expired_keys_stop_at_once(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    client = pool.client()
    assert client.post("/v1/responses", json=BODY).status_code == 200
    key_id = pool.admin.get("/api/keys").json()["items"][0]["id"]
    pool.admin.patch(f"/api/keys/{key_id}", json={"enabled": False})
    assert client.post("/v1/responses", json=BODY).status_code == 401
    pool.admin.patch(f"/api/keys/{key_id}", json={"enabled": True})
    assert client.post("/v1/responses", json=BODY).status_code == 200
    pool.admin.delete(f"/api/keys/{key_id}")
    assert client.post("/v1/responses", json=BODY).status_code == 401
    expiring = pool.admin.post(
        "/api/users/1/keys",
        json={"name": "short", "group_id": 1, "expires_at": pool.gateway.clock.time() + 30},
    ).json()["secret"]
    assert pool.client(expiring).post("/v1/responses", json=BODY).status_code == 200
    pool.gateway.clock.advance(31)
    assert pool.client(expiring).post("/v1/responses", json=BODY).status_code == 401


def test_removing_a_member_from_the_group_stops_their_key(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    client = pool.client()
    assert client.post("/v1/responses", json=BODY).status_code == 200
    pool.admin.put("/api/groups/1/members", json={"user_ids": []})
    assert client.post("/v1/responses", json=BODY).status_code == 401


def test_time_1_sse_heartbeats_while_the_upstream_is_quiet(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(sse_heartbeat_s=0.1)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(deltas=2, first_delta_delay_ms=450))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.text.count(": keep-alive\n\n") >= 2
    assert _events(response)[-1] == "response.completed"  # heartbeats sit between whole events


def test_time_2_idle_timeout_counts_upstream_events_only(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(sse_heartbeat_s=0.05, stream_idle_timeout_s=0.4)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.stall(2, stall_ms=3000))
    started = time.monotonic()
    response = pool.client().post("/v1/responses", json=BODY)
    assert time.monotonic() - started < 2.5
    assert "response.completed" not in _events(response)
    assert ": keep-alive" in response.text  # heartbeats flowed, yet the stall still ended the stream
    assert pool.finished[-1].outcome == "error" and pool.finished[-1].error_code == "stream_idle_timeout"
    assert pool.runtime.leases.total_in_flight() == 0


def test_compaction_returns_the_upstream_json(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    body = {
        "model": "gpt-5-codex",
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "instructions": "",
    }
    response = pool.client().post("/v1/responses/compact", json=body)
    assert response.status_code == 200, response.text
    output = response.json()["output"]
    assert any(item.get("type") == "compaction" for item in output)
    assert response.headers["x-request-id"].startswith("req_")
    assert pool.finished[-1].operation == "compact" and pool.finished[-1].first_token_ms is None


def test_oversized_bodies_are_refused_before_any_upstream_call(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    host, port = pool.gateway.url.removeprefix("http://").split(":")
    head = (
        "POST /v1/responses HTTP/1.1\r\n"
        f"Host: {host}\r\nAuthorization: Bearer {pool.key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {65 * 1024 * 1024}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode() + b'{"model": "gpt-5-codex"')
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"body_too_large" in answer
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 0


def test_wait_7_a_client_closing_right_after_completion_is_recorded_as_success(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    with pool.client() as client, client.stream("POST", "/v1/responses", json=BODY) as response:
        for line in response.iter_lines():
            if "response.completed" in line:
                # The record and the free slot exist before the client has even read the end.
                assert pool.finished and pool.finished[-1].outcome == "success"
                assert pool.runtime.leases.total_in_flight() == 0
                break
    assert [record.outcome for record in pool.finished] == ["success"]


def test_xlat_3_compaction_of_a_model_only_other_providers_serve_is_unsupported_for_provider(
    make_pool: Callable[..., Pool],
) -> None:
    """Remote compaction is the Responses upstreams' own state: for a model only a provider that
    cannot compact serves (a Claude account), the client gets 400 ``unsupported_for_provider``
    in its shape, before any upstream call — not a 404 saying no account serves the model."""
    pool = make_pool(provider="claude")
    before = len(pool.sim.requests())
    body = {"model": "claude-sonnet-4-6", "input": [{"type": "message", "role": "user", "content": "hi"}]}
    for model in ("claude-sonnet-4-6", "claude/claude-sonnet-4-6"):
        response = pool.client().post("/v1/responses/compact", json=dict(body, model=model))
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "unsupported_for_provider" and error["type"] == "invalid_request_error"
        assert "compact" in error["message"]
    assert len(pool.sim.requests()) == before
    unknown = pool.client().post("/v1/responses/compact", json=dict(body, model="no-such-model"))
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
