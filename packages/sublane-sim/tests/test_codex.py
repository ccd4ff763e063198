"""Codex HTTP routes: SSE sequence, validation, headers, cache model, compaction, models, usage."""

from __future__ import annotations

from typing import Any

import httpx

from sublane_sim import Behaviour, SimAccount, Simulator, parse_sse


def codex_headers(account: SimAccount) -> dict[str, str]:
    return {"authorization": f"Bearer {account.access_token}", "chatgpt-account-id": account.account_id}


def codex_body(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-5-codex",
        "stream": True,
        "store": False,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    }
    body.update(extra)
    return body


def test_full_event_sequence_with_sequence_numbers_and_usage(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.ok(deltas=4, tool_call=True))
    body = codex_body(
        reasoning={"summary": "auto"},
        include=["reasoning.encrypted_content"],
        tools=[
            {
                "type": "function",
                "name": "shell",
                "parameters": {
                    "type": "object",
                    "properties": {"cmd": {"type": "string"}},
                    "required": ["cmd"],
                },
            }
        ],
    )
    response = http.post(f"{sim.codex_base_url}/codex/responses", json=body, headers=codex_headers(account))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    names = [e.name for e in events]
    assert names[:2] == ["response.created", "response.in_progress"]
    assert [e.data["type"] for e in events] == names
    assert [e.data["sequence_number"] for e in events] == list(range(len(events)))
    assert names.count("response.reasoning_summary_text.delta") == 2
    assert names.count("response.output_text.delta") == 4
    assert names.count("response.function_call_arguments.delta") >= 1
    assert names[-1] == "response.completed"
    assert sum(n in ("response.completed", "response.failed", "response.incomplete") for n in names) == 1
    text = "".join(e.data["delta"] for e in events if e.name == "response.output_text.delta")
    completed = events[-1].data["response"]
    assert completed["status"] == "completed"
    kinds = [item["type"] for item in completed["output"]]
    assert kinds == ["reasoning", "message", "function_call"]
    assert completed["output"][0]["encrypted_content"].startswith("gAAAA")
    assert completed["output"][1]["content"][0]["text"] == text
    arguments = "".join(e.data["delta"] for e in events if e.name == "response.function_call_arguments.delta")
    assert arguments == completed["output"][2]["arguments"] == '{"cmd": "sim"}'
    usage = completed["usage"]
    assert usage["input_tokens_details"]["cached_tokens"] == 0
    assert usage["output_tokens_details"]["reasoning_tokens"] == 2
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_rate_limit_headers_on_every_response(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex", plan="pro")
    sim.set_quota(account.id, "primary", used_percent=12.5, reset_in_s=600)
    response = http.post(
        f"{sim.codex_base_url}/codex/responses", json=codex_body(), headers=codex_headers(account)
    )
    headers = response.headers
    assert headers["x-codex-plan-type"] == "pro"
    assert headers["x-codex-active-limit"] == "codex"
    assert headers["x-codex-primary-used-percent"] == "12.5"
    assert headers["x-codex-primary-window-minutes"] == "300"
    assert 590 <= int(headers["x-codex-primary-reset-after-seconds"]) <= 600
    assert headers["x-codex-secondary-window-minutes"] == "10080"
    assert headers["x-codex-credits-has-credits"] == "False"
    assert headers["x-codex-turn-state"]
    assert headers["x-request-id"].startswith("req_")


def test_store_and_stream_are_enforced(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    url = f"{sim.codex_base_url}/codex/responses"
    for body in (codex_body(store=True), {k: v for k, v in codex_body().items() if k != "store"}):
        response = http.post(url, json=body, headers=codex_headers(account))
        assert response.status_code == 400
        assert response.json() == {"detail": "Store must be set to false"}
    response = http.post(url, json=codex_body(stream=False), headers=codex_headers(account))
    assert response.status_code == 400
    assert response.json() == {"detail": "Stream must be set to true"}
    assert sim.counters(account.id).model_requests == 0


def test_non_streaming_json_when_the_account_allows_it(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex", require_stream=False)
    response = http.post(
        f"{sim.codex_base_url}/codex/responses", json=codex_body(stream=False), headers=codex_headers(account)
    )
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "response" and data["status"] == "completed"
    assert data["output"][0]["type"] == "message"


def test_missing_instructions_is_accepted_and_unknown_model_rejected(
    sim: Simulator, http: httpx.Client
) -> None:
    account = sim.create_account("codex", plan="free")
    url = f"{sim.codex_base_url}/codex/responses"
    assert "instructions" not in codex_body()
    assert http.post(url, json=codex_body(), headers=codex_headers(account)).status_code == 200
    response = http.post(url, json=codex_body(model="gpt-5.3-codex-spark"), headers=codex_headers(account))
    assert response.status_code == 400
    assert "not supported" in response.json()["detail"]


def test_account_id_header_strictness(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    url = f"{sim.codex_base_url}/codex/responses"
    bearer = {"authorization": f"Bearer {account.access_token}"}
    missing = http.post(url, json=codex_body(), headers=bearer)
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "missing_account_id"
    wrong = http.post(url, json=codex_body(), headers={**bearer, "ChatGPT-Account-Id": "someone-else"})
    assert wrong.status_code == 403
    via_api_key = http.post(url, json=codex_body(), headers={"authorization": f"Bearer {account.api_key}"})
    assert via_api_key.status_code == 200
    sim.update_account(account.id, require_account_id=False)
    assert http.post(url, json=codex_body(), headers=bearer).status_code == 200


def test_unknown_and_expired_tokens_get_401(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    url = f"{sim.codex_base_url}/codex/responses"
    unknown = http.post(url, json=codex_body(), headers={"authorization": "Bearer nope"})
    assert unknown.status_code == 401
    assert unknown.json()["error"]["code"] == "invalid_token"
    sim.expire_access_tokens(account.id)
    expired = http.post(url, json=codex_body(), headers=codex_headers(account))
    assert expired.status_code == 401
    assert expired.json()["error"]["code"] == "token_expired"
    assert expired.headers["x-openai-authorization-error"] == "token_expired"


def test_access_token_expires_on_the_sim_clock(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex", access_ttl_s=120)
    url = f"{sim.codex_base_url}/codex/responses"
    assert http.post(url, json=codex_body(), headers=codex_headers(account)).status_code == 200
    sim.advance_clock(121)
    assert http.post(url, json=codex_body(), headers=codex_headers(account)).status_code == 401


def _cached(http: httpx.Client, sim: Simulator, account: SimAccount, key: str) -> int:
    response = http.post(
        f"{sim.codex_base_url}/codex/responses",
        json=codex_body(prompt_cache_key=key),
        headers=codex_headers(account),
    )
    completed = parse_sse(response.text)[-1].data["response"]
    cached: int = completed["usage"]["input_tokens_details"]["cached_tokens"]
    assert cached <= completed["usage"]["input_tokens"]
    return cached


def test_cache_model_rewards_affinity(sim: Simulator, http: httpx.Client) -> None:
    first = sim.create_account("codex")
    second = sim.create_account("codex")
    assert _cached(http, sim, first, "thread-1") == 0
    assert _cached(http, sim, first, "thread-1") > 0
    assert _cached(http, sim, second, "thread-1") == 0
    assert _cached(http, sim, first, "thread-2") == 0


def test_cost_4_a_changed_prefix_misses_the_cache(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    url = f"{sim.codex_base_url}/codex/responses"

    def cached(**fields: Any) -> int:
        body = codex_body(prompt_cache_key="thread-1", **fields)
        completed = parse_sse(http.post(url, json=body, headers=codex_headers(account)).text)[-1].data
        tokens: int = completed["response"]["usage"]["input_tokens_details"]["cached_tokens"]
        return tokens

    assert cached(instructions="be brief") == 0
    assert cached(instructions="be brief") > 0
    assert cached(instructions="be verbose") == 0  # another prefix: not in the cache
    sim.clock.advance(301)
    assert cached(instructions="be verbose") == 0  # unused for longer than its lifetime


def test_session_header_is_an_affinity_key(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    url = f"{sim.codex_base_url}/codex/responses"
    headers = {**codex_headers(account), "session-id": "abc"}
    http.post(url, json=codex_body(), headers=headers)
    completed = parse_sse(http.post(url, json=codex_body(), headers=headers).text)[-1].data["response"]
    assert completed["usage"]["input_tokens_details"]["cached_tokens"] > 0


def test_incomplete_terminal_event(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour(kind="incomplete", deltas=2))
    events = parse_sse(
        http.post(
            f"{sim.codex_base_url}/codex/responses", json=codex_body(), headers=codex_headers(account)
        ).text
    )
    assert events[-1].name == "response.incomplete"
    assert events[-1].data["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert events[-1].data["response"]["usage"]["output_tokens"] == 2
    assert sim.requests(account_id=account.id)[-1].outcome == "incomplete"


def test_quota_exhaustion_is_a_usage_limit_429(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex", quota_cost=50.0)
    url = f"{sim.codex_base_url}/codex/responses"
    for _ in range(2):
        assert http.post(url, json=codex_body(), headers=codex_headers(account)).status_code == 200
    usage = http.get(f"{sim.codex_base_url}/wham/usage", headers=codex_headers(account)).json()
    assert usage["rate_limit"]["limit_reached"] is True
    assert usage["rate_limit"]["primary_window"]["used_percent"] == 100
    limited = http.post(url, json=codex_body(), headers=codex_headers(account))
    assert limited.status_code == 429
    error = limited.json()["error"]
    assert error["type"] == "usage_limit_reached"
    assert error["plan_type"] == "plus"
    assert 17990 <= error["resets_in_seconds"] <= 18000
    assert error["resets_at"] >= int(sim.clock.now()) + 17990
    assert limited.headers["x-codex-primary-used-percent"] == "100"
    assert "retry-after" not in limited.headers
    sim.advance_clock(18001)
    weekly = http.post(url, json=codex_body(), headers=codex_headers(account))
    assert weekly.status_code == 429, "the weekly window was charged too and is still full"
    assert weekly.json()["error"]["resets_in_seconds"] > 500000
    sim.advance_clock(604800)
    assert http.post(url, json=codex_body(), headers=codex_headers(account)).status_code == 200


def test_free_plan_has_a_single_weekly_window(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex", plan="free")
    usage = http.get(f"{sim.codex_base_url}/wham/usage", headers=codex_headers(account)).json()
    assert usage["plan_type"] == "free"
    assert usage["rate_limit"]["primary_window"]["limit_window_seconds"] == 604800
    assert usage["rate_limit"]["secondary_window"] is None


def test_compaction_round_trip(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    assistant = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]}
    response = http.post(
        f"{sim.codex_base_url}/codex/responses/compact",
        json={"model": "gpt-5-codex", "input": [user, assistant], "instructions": "be brief"},
        headers=codex_headers(account),
    )
    assert response.status_code == 200
    output = response.json()["output"]
    assert output[0] == user
    assert output[-1]["type"] == "compaction" and output[-1]["encrypted_content"]
    follow_up = codex_body(input=[*output, user])
    again = http.post(f"{sim.codex_base_url}/codex/responses", json=follow_up, headers=codex_headers(account))
    assert parse_sse(again.text)[-1].name == "response.completed"


def test_models_catalogue_per_plan(sim: Simulator, http: httpx.Client) -> None:
    pro = sim.create_account("codex", plan="pro")
    team = sim.create_account("codex", plan="team")
    url = f"{sim.codex_base_url}/codex/models?client_version=0.171.0"
    pro_models = http.get(url, headers=codex_headers(pro))
    assert pro_models.headers["etag"]
    slugs = {m["slug"] for m in pro_models.json()["models"]}
    assert "gpt-5.3-codex-spark" in slugs
    team_slugs = {m["slug"] for m in http.get(url, headers=codex_headers(team)).json()["models"]}
    assert "gpt-5.3-codex-spark" not in team_slugs and "gpt-5-codex" in team_slugs


def test_request_log_records_headers_and_body(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    headers = {**codex_headers(account), "x-codex-window-id": "w:0", "originator": "codex_exec"}
    http.post(f"{sim.codex_base_url}/codex/responses", json=codex_body(prompt_cache_key="k"), headers=headers)
    (record,) = sim.requests(account_id=account.id)
    assert record.endpoint == "codex.responses"
    assert record.token == account.access_token and record.token_kind == "access"
    assert record.headers["originator"] == "codex_exec"
    assert record.headers["x-codex-window-id"] == "w:0"
    assert record.body["prompt_cache_key"] == "k"
    assert record.status == 200 and record.outcome == "completed"
    assert record.cached_tokens == 0 and record.output_tokens == 8


def test_a_field_of_the_wrong_type_is_a_400_as_the_real_backend_answers(
    sim: Simulator, http: httpx.Client
) -> None:
    account = sim.create_account("codex")
    url = f"{sim.codex_base_url}/codex/responses"
    for bad in (5, "high", [], True):
        response = http.post(url, json=codex_body(reasoning=bad), headers=codex_headers(account))
        assert response.status_code == 400, bad
        assert "Invalid type for 'reasoning'" in response.json()["detail"]
    assert http.post(url, json=codex_body(reasoning=None), headers=codex_headers(account)).status_code == 200
    assert sim.counters(account.id).model_requests == 1


def test_a_newer_upstream_sends_an_extra_event_type_and_field(sim: Simulator, http: httpx.Client) -> None:
    """`extra_event` adds an event of a new type before the terminal one, `extra_field` a new
    top-level field to the terminal event and to a JSON answer (SubLane's CLIENT-7 tests)."""
    account = sim.create_account("codex", require_stream=False)
    changed = Behaviour.ok(extra_event="response.hologram.delta", extra_field="safety_report")
    sim.script(account.id, changed, changed)
    url = f"{sim.codex_base_url}/codex/responses"
    events = parse_sse(http.post(url, json=codex_body(), headers=codex_headers(account)).text)
    names = [event.name for event in events]
    assert names[-2:] == ["response.hologram.delta", "response.completed"]
    assert events[-2].data["type"] == "response.hologram.delta"
    assert events[-1].data["safety_report"] is True
    answer = http.post(url, json=codex_body(stream=False), headers=codex_headers(account)).json()
    assert answer["safety_report"] is True and answer["status"] == "completed"
