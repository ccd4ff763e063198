"""Antigravity `v1internal` routes: stream chunks, project checks, quota, Google RPC errors."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sublane_sim import Behaviour, SimAccount, Simulator, parse_sse


def auth(account: SimAccount) -> dict[str, str]:
    return {
        "authorization": f"Bearer {account.access_token}",
        "user-agent": "antigravity/hub/2.9.1 darwin/arm64",
    }


def body(account: SimAccount, model: str = "gemini-3-flash", **request: Any) -> dict[str, Any]:
    inner: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    inner.update(request)
    return {
        "project": account.project_id,
        "model": model,
        "userAgent": "antigravity",
        "requestType": "agent",
        "requestId": "agent-1",
        "request": inner,
    }


def stream(
    sim: Simulator, http: httpx.Client, account: SimAccount, payload: dict[str, Any]
) -> httpx.Response:
    return http.post(
        f"{sim.antigravity_base_url}/v1internal:streamGenerateContent?alt=sse",
        json=payload,
        headers=auth(account),
    )


def test_stream_chunks_with_thoughts_function_call_and_usage(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.script(account.id, Behaviour.ok(deltas=3, tool_call=True))
    tools = [
        {
            "functionDeclarations": [
                {
                    "name": "read_file",
                    "description": "read",
                    "parameters": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    },
                }
            ]
        }
    ]
    payload = body(
        account,
        "claude-opus-4-6-thinking",
        tools=tools,
        sessionId="-42",
        generationConfig={"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024}},
    )
    response = stream(sim, http, account, payload)
    assert response.status_code == 200
    assert "event:" not in response.text and "\r\n\r\n" in response.text
    events = parse_sse(response.text)
    assert all(e.name is None for e in events)
    parts = [e.data["response"]["candidates"][0]["content"]["parts"][0] for e in events]
    thoughts = [p for p in parts if p.get("thought")]
    assert len(thoughts) == 2 and "thoughtSignature" in thoughts[-1]
    call = next(p["functionCall"] for p in parts if "functionCall" in p)
    assert call["name"] == "read_file" and call["args"] == {"path": "sim"} and call["id"]
    last = events[-1].data["response"]
    assert last["candidates"][0]["finishReason"] == "STOP"
    usage = last["usageMetadata"]
    assert usage["thoughtsTokenCount"] == 2 and usage["candidatesTokenCount"] == 4
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + 4 + 2
    assert all("finishReason" not in e.data["response"]["candidates"][0] for e in events[:-1])


def test_session_id_cache_affinity(sim: Simulator, http: httpx.Client) -> None:
    first = sim.create_account("antigravity")
    second = sim.create_account("antigravity")

    def cached(account: SimAccount) -> int:
        events = parse_sse(stream(sim, http, account, body(account, sessionId="-7")).text)
        value: int = events[-1].data["response"]["usageMetadata"]["cachedContentTokenCount"]
        return value

    assert cached(first) == 0
    assert cached(first) > 0
    assert cached(second) == 0


def test_generate_content_and_count_tokens(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    response = http.post(
        f"{sim.antigravity_base_url}/v1internal:generateContent", json=body(account), headers=auth(account)
    )
    data = response.json()["response"]
    assert data["candidates"][0]["finishReason"] == "STOP"
    assert data["candidates"][0]["content"]["parts"][0]["text"]
    counted = http.post(
        f"{sim.antigravity_base_url}/v1internal:countTokens", json={"request": {}}, headers=auth(account)
    )
    assert counted.json()["totalTokens"] > 0


def test_project_checks(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    other = sim.create_account("antigravity")
    missing = stream(sim, http, account, {**body(account), "project": ""})
    assert missing.status_code == 400 and missing.json()["error"]["status"] == "INVALID_ARGUMENT"
    foreign = stream(sim, http, account, body(other))
    assert foreign.status_code == 403 and foreign.json()["error"]["status"] == "PERMISSION_DENIED"
    unknown_model = stream(sim, http, account, body(account, "gemini-99"))
    assert unknown_model.status_code == 404


def test_unauthenticated(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.expire_access_tokens(account.id)
    response = stream(sim, http, account, body(account))
    assert response.status_code == 401
    assert response.json()["error"]["status"] == "UNAUTHENTICATED"


def test_fetch_available_models_reports_per_model_quota(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity", quota_cost=25)
    stream(sim, http, account, body(account, "gemini-3-pro-high"))
    sim.set_quota(account.id, "gemini-3-flash", used_percent=100, reset_in_s=60)
    models = http.post(
        f"{sim.antigravity_base_url}/v1internal:fetchAvailableModels",
        json={"project": account.project_id},
        headers=auth(account),
    ).json()["models"]
    assert isinstance(models, dict)
    assert models["gemini-3-pro-high"]["quotaInfo"]["remainingFraction"] == 0.75
    assert models["gemini-3-flash"]["quotaInfo"]["remainingFraction"] == 0
    assert models["claude-sonnet-4-6"]["quotaInfo"]["remainingFraction"] == 1
    assert models["gemini-3-flash"]["quotaInfo"]["resetTime"].endswith("Z")
    exhausted = stream(sim, http, account, body(account))
    assert exhausted.status_code == 429
    info = exhausted.json()["error"]["details"][0]
    assert info["reason"] == "QUOTA_EXHAUSTED" and info["metadata"]["model"] == "gemini-3-flash"
    retry = exhausted.json()["error"]["details"][1]["retryDelay"]
    assert retry.endswith("s") and 55 <= float(retry[:-1]) <= 60
    assert stream(sim, http, account, body(account, "gemini-3-pro-high")).status_code == 200, (
        "other models stay"
    )


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (429, "RATE_LIMIT_EXCEEDED"),
        (429, "QUOTA_EXHAUSTED"),
        (429, "MODEL_CAPACITY_EXHAUSTED"),
        (503, "MODEL_CAPACITY_EXHAUSTED"),
    ],
)
def test_structured_rate_limits(sim: Simulator, http: httpx.Client, status: int, reason: str) -> None:
    account = sim.create_account("antigravity")
    sim.script(account.id, Behaviour.error(status, error_code=reason, retry_delay="1.5s"))
    response = stream(sim, http, account, body(account))
    assert response.status_code == status
    error = response.json()["error"]
    assert error["status"] == ("RESOURCE_EXHAUSTED" if status == 429 else "UNAVAILABLE")
    info, retry = error["details"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert (info["reason"], info["domain"]) == (reason, "cloudcode-pa.googleapis.com")
    assert info["metadata"]["model"] == "gemini-3-flash"
    assert info["metadata"]["quotaResetDelay"] == "1.5s"
    assert retry == {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}


def test_mismatching_domain_and_model_variant(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.script(
        account.id,
        Behaviour.error(429, error_domain="generativelanguage.googleapis.com", error_model="gemini-x"),
    )
    info = stream(sim, http, account, body(account)).json()["error"]["details"][0]
    assert info["reason"] == "RATE_LIMIT_EXCEEDED"
    assert info["domain"] == "generativelanguage.googleapis.com"
    assert info["metadata"]["model"] == "gemini-x"


def test_detail_free_429_and_no_capacity_503(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.script(account.id, Behaviour.error(429, error_code=""), Behaviour.error(503))
    bare = stream(sim, http, account, body(account)).json()["error"]
    assert bare == {
        "code": 429,
        "message": "Resource has been exhausted (e.g. check quota).",
        "status": "RESOURCE_EXHAUSTED",
    }
    capacity = stream(sim, http, account, body(account))
    assert capacity.status_code == 503 and "No capacity available" in capacity.json()["error"]["message"]


def test_load_code_assist_and_onboarding(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity", onboarded=False)
    base = sim.antigravity_base_url
    loaded = http.post(
        f"{base}/v1internal:loadCodeAssist",
        json={"metadata": {"ideType": "ANTIGRAVITY"}},
        headers=auth(account),
    ).json()
    assert "cloudaicompanionProject" not in loaded
    assert loaded["allowedTiers"][0]["isDefault"] is True
    assert stream(sim, http, account, body(account)).status_code == 403, "no project before onboarding"
    onboard = {"tier_id": "standard-tier", "metadata": {"ide_type": "ANTIGRAVITY"}}
    first = http.post(f"{base}/v1internal:onboardUser", json=onboard, headers=auth(account)).json()
    assert first["done"] is False
    second = http.post(f"{base}/v1internal:onboardUser", json=onboard, headers=auth(account)).json()
    assert second["done"] is True
    assert second["response"]["cloudaicompanionProject"]["id"] == account.project_id
    loaded = http.post(f"{base}/v1internal:loadCodeAssist", json={}, headers=auth(account)).json()
    assert loaded["cloudaicompanionProject"] == account.project_id
    assert stream(sim, http, account, body(account)).status_code == 200


def test_a_field_of_the_wrong_type_is_a_400(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    for field, bad in (("generationConfig", []), ("tools", {}), ("systemInstruction", 7)):
        response = stream(sim, http, account, body(account, **{field: bad}))
        assert response.status_code == 400, field
        assert response.json()["error"]["status"] == "INVALID_ARGUMENT"
