"""CLIENT-6: the Code Assist ingress (``POST /v1internal:{method}``), with the real Gemini CLI in
Google sign-in mode pointed at SubLane, and over HTTP for the envelope, the set-up methods, the
quota reads and the errors.

The Gemini CLI takes a ready access token from ``GOOGLE_CLOUD_ACCESS_TOKEN`` when
``GOOGLE_GENAI_USE_GCA=true`` (its own code: no token check, no refresh), and its Code Assist base
URL from ``CODE_ASSIST_ENDPOINT``: the SubLane key is that token (docs/code-assist.md).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_pool import Pool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bad_input import GEMINI_BODY, JSON_VALUES, MALFORMED
from test_real_clients import ANSWER, GEMINI_MODELS, _client, _run_cli
from test_real_clients_cross import TOOL_RESULT_MARKERS

from sublane_sim import Behaviour

#: The model each provider's pool serves to the CLI (``-m``), as the cross-provider tests use.
PROVIDER_MODELS = {"antigravity": "gemini-3-flash", "codex": "gpt-5-codex", "claude": "claude-sonnet-4-6"}


def gemini_google_run(url: str, key: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The Gemini CLI in Google sign-in mode (``oauth-personal``) with SubLane at ``url`` as its Code
    Assist server and ``key`` as its access token."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "oauth-personal"}}}))
    return _run_cli(
        "gemini",
        home,
        args,
        GOOGLE_GENAI_USE_GCA="true",
        GOOGLE_CLOUD_ACCESS_TOKEN=key,
        CODE_ASSIST_ENDPOINT=url,
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


def _pool_of(make_pool: Callable[..., Pool], provider: str, accounts: int = 1) -> Pool:
    options = {"models": GEMINI_MODELS} if provider == "antigravity" else {}
    return make_pool(provider=provider, accounts=accounts, account_options=options)


@pytest.mark.e2e
@pytest.mark.parametrize("provider", ["antigravity", "codex", "claude"])
def test_client_6_gemini_cli_google_signin_mode_through_each_provider(
    make_pool: Callable[..., Pool], tmp_path: Path, provider: str
) -> None:
    """A prompt whose first answer is a tool call: the CLI runs the tool, sends its result back and
    prints the final answer — every turn through ``/v1internal``, and on one account of the two:
    the CLI's ``session_id`` binds its session (AFF-1)."""
    _client("gemini")
    pool = _pool_of(make_pool, provider, accounts=2)
    for account in pool.sim_accounts:
        pool.sim.script(account.id, Behaviour.ok(tool_call=True, text="Looking.", deltas=2))
        pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    run = gemini_google_run(
        pool.gateway.url, pool.key, tmp_path, "-p", "say hi", "-m", PROVIDER_MODELS[provider]
    )
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    served = [record for record in pool.finished if record.outcome == "success"]
    assert len(served) >= 2, [(r.protocol, r.outcome, r.error_code) for r in pool.finished]
    assert {record.protocol for record in served} == {"code_assist"}
    assert {record.provider for record in served} == {provider}
    (account_id,) = {record.account_id for record in served}
    account = pool.sim_account_of(account_id)
    bodies = [str(request.body) for request in pool.sim.requests(account_id=account.id)]
    assert any(marker in body for body in bodies for marker in TOOL_RESULT_MARKERS[provider]), bodies[-1][
        :2000
    ]
    assert pool.runtime.leases.total_in_flight() == 0


# -- over HTTP ------------------------------------------------------------------------------------------


def _generate_body(model: str, text: str = "say hi", **request: Any) -> dict[str, Any]:
    """A Code Assist generate body as the Gemini CLI sends it (converter.toGenerateContentRequest)."""
    return {
        "model": model,
        "project": "whatever-the-client-has",
        "user_prompt_id": "prompt-1",
        "request": {"contents": [{"role": "user", "parts": [{"text": text}]}], **request},
    }


def _sse_payloads(text: str) -> list[dict[str, Any]]:
    """The JSON objects of an SSE body, as the Gemini CLI reads them (``data: `` lines up to a blank
    line, CRLF or LF)."""
    payloads, lines = [], []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith("data: "):
            lines.append(line[6:])
        elif line == "" and lines:
            payloads.append(json.loads("\n".join(lines)))
            lines = []
    return payloads


def _text_of(answer: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for candidate in answer.get("candidates", [])
        for part in candidate.get("content", {}).get("parts", [])
        if not part.get("thought")
    )


@pytest.mark.parametrize("provider", ["antigravity", "codex"])
def test_client_6_stream_envelope(make_pool: Callable[..., Pool], provider: str) -> None:
    """Every streamed event is one ``data:`` line holding ``{"response": <Gemini answer>}``; the
    session id inside the request keys the conversation and is not sent on."""
    pool = _pool_of(make_pool, provider)
    account = pool.sim_accounts[0]
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    body = _generate_body(PROVIDER_MODELS[provider], session_id="cli-session-1")
    with pool.client() as client:
        answer = client.post("/v1internal:streamGenerateContent", params={"alt": "sse"}, json=body)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    payloads = _sse_payloads(answer.text)
    assert payloads and all(set(payload) == {"response"} for payload in payloads), payloads
    assert "".join(_text_of(payload["response"]) for payload in payloads) == ANSWER
    assert any(payload["response"].get("usageMetadata") for payload in payloads)
    assert payloads[-1]["response"]["candidates"][0]["finishReason"] == "STOP"
    upstream = pool.sim.requests(account_id=account.id)[-1]
    assert "cli-session-1" not in json.dumps(upstream.body)  # a conversation key, not a field
    if provider == "antigravity":  # the account's project upstream, never the client's
        assert upstream.body["project"] == account.project_id
        assert "session_id" not in upstream.body["request"]
    record = pool.finished[-1]
    assert (record.protocol, record.outcome, record.provider) == ("code_assist", "success", provider)
    assert pool.runtime.leases.total_in_flight() == 0


@pytest.mark.parametrize("provider", ["antigravity", "claude"])
def test_client_6_generate_content_json_envelope(make_pool: Callable[..., Pool], provider: str) -> None:
    pool = _pool_of(make_pool, provider)
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=3))
    with pool.client() as client:
        answer = client.post("/v1internal:generateContent", json=_generate_body(PROVIDER_MODELS[provider]))
    assert answer.status_code == 200, answer.text
    payload = answer.json()
    assert set(payload) == {"response"}
    assert _text_of(payload["response"]) == ANSWER
    assert payload["response"]["usageMetadata"]["totalTokenCount"] > 0


def test_client_6_count_tokens(make_pool: Callable[..., Pool]) -> None:
    """``countTokens`` answers ``{"totalTokens"}`` bare, as Code Assist does (the CLI reads it so)."""
    pool = _pool_of(make_pool, "antigravity")
    body = {
        "request": {
            "model": "models/gemini-3-flash",
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        }
    }
    with pool.client() as client:
        answer = client.post("/v1internal:countTokens", json=body)
    assert answer.status_code == 200, answer.text
    assert isinstance(answer.json()["totalTokens"], int) and "response" not in answer.json()
    assert pool.finished[-1].protocol == "code_assist"


def test_client_6_load_code_assist(make_pool: Callable[..., Pool]) -> None:
    """A current tier and a project, stable per key and different between keys; ``onboardUser`` is a
    finished operation with the same project; the reads the CLI makes at start answer."""
    pool = make_pool()
    _, other_key = pool.member_key("ada")
    load = {
        "metadata": {"ideType": "IDE_UNSPECIFIED", "platform": "PLATFORM_UNSPECIFIED", "pluginType": "GEMINI"}
    }
    with pool.client() as client, pool.client(other_key) as other:
        first = client.post("/v1internal:loadCodeAssist", json=load)
        again = client.post("/v1internal:loadCodeAssist", json={"metadata": {"ideType": "ANTIGRAVITY"}})
        theirs = other.post("/v1internal:loadCodeAssist", json=load)
        onboard = client.post("/v1internal:onboardUser", json={"tierId": "standard-tier", "metadata": {}})
        operation = client.get(f"/v1internal/{onboard.json()['name']}")
        experiments = client.post("/v1internal:listExperiments", json={"project": "p", "metadata": {}})
        setting = client.get("/v1internal:getCodeAssistGlobalUserSetting")
        metrics = client.post("/v1internal:recordCodeAssistMetrics", json={"project": "p", "metrics": []})
    for answer in (first, again, theirs, onboard, operation, experiments, setting, metrics):
        assert answer.status_code == 200, answer.text
    project = first.json()["cloudaicompanionProject"]
    assert isinstance(project, str) and project and not project.isdigit()
    assert first.json()["currentTier"]["id"] == "standard-tier"
    assert any(tier.get("isDefault") for tier in first.json()["allowedTiers"])
    assert again.json()["cloudaicompanionProject"] == project
    assert theirs.json()["cloudaicompanionProject"] != project
    assert onboard.json()["done"] is True
    assert onboard.json()["response"]["cloudaicompanionProject"]["id"] == project
    assert operation.json() == onboard.json()
    assert experiments.json() == {"experimentIds": [], "flags": []}
    assert setting.json() == {"freeTierDataCollectionOptin": False}
    assert pool.sim.requests(endpoint="codex.responses") == []  # set-up and reads: no model call


def test_client_6_quota_reads_show_the_pool(make_pool: Callable[..., Pool]) -> None:
    """``retrieveUserQuota`` (Gemini CLI) and ``fetchAvailableModels`` (Antigravity) list the group's
    models with what is left of them in the pool: POOL-1's fullest window of the serving provider."""
    pool = make_pool()
    with pool.client() as client:
        served = client.post("/v1internal:generateContent", json=_generate_body("gpt-5-codex"))
        assert served.status_code == 200, served.text  # its quota headers are observed, then stored
        deadline = time.monotonic() + 10
        while True:
            quota = client.post("/v1internal:retrieveUserQuota", json={"project": "p"})
            assert quota.status_code == 200, quota.text
            if "remainingFraction" in json.dumps(quota.json()) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        models = client.post("/v1internal:fetchAvailableModels", json={"project": "p"})
    assert quota.status_code == 200 and models.status_code == 200, (quota.text, models.text)
    windows = pool.admin.get("/api/me/pool").json()["items"][0]["windows"]
    used = max(window["mean_used_percent"] for window in windows if window["mean_used_percent"] is not None)
    buckets = {bucket["modelId"]: bucket for bucket in quota.json()["buckets"]}
    assert "gpt-5-codex" in buckets
    assert buckets["gpt-5-codex"]["remainingFraction"] == pytest.approx(1 - used / 100, abs=1e-3)
    assert buckets["gpt-5-codex"]["tokenType"] == "REQUESTS"
    listed = models.json()["models"]
    assert set(listed) == set(buckets)
    assert (
        listed["gpt-5-codex"]["quotaInfo"]["remainingFraction"] == buckets["gpt-5-codex"]["remainingFraction"]
    )


def _google_error(answer: httpx.Response, status: int, google_status: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["status"]) == (status, google_status), error
    assert isinstance(error["message"], str) and error["details"]
    return error  # type: ignore[no-any-return]


def test_client_6_bad_key_401_in_google_shape(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    with pool.client("sk-not-a-key") as client:
        for method in ("loadCodeAssist", "generateContent", "streamGenerateContent", "retrieveUserQuota"):
            answer = client.post(f"/v1internal:{method}", json=_generate_body("gpt-5-codex"))
            _google_error(answer, 401, "UNAUTHENTICATED")
        _google_error(client.get("/v1internal:getCodeAssistGlobalUserSetting"), 401, "UNAUTHENTICATED")
    with pool.gateway.client() as anonymous:
        _google_error(anonymous.post("/v1internal:loadCodeAssist", json={}), 401, "UNAUTHENTICATED")
    assert pool.sim.requests(endpoint="codex.responses") == []
    assert not [record for record in pool.finished if record.outcome != "rejected"]


def test_client_6_bad_input_4xx_in_google_shape_never_an_account_failure(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    bad_bodies: list[Any] = [
        {"project": "p", "request": {"contents": []}},  # no model
        {"model": "gpt-5-codex", "project": "p"},  # no request
        {"model": "gpt-5-codex", "request": "hi"},
        {"model": "gpt-5-codex", "request": {"contents": "hi"}},
        {
            "model": "gpt-5-codex",
            "request": {"contents": [{"parts": []}], "generationConfig": {"temperature": "hot"}},
        },
        [1, 2],
    ]
    bad_bodies += [
        {"model": "gpt-5-codex", "request": {**GEMINI_BODY, field: value}}
        for field, value in MALFORMED["gemini"]
    ]
    with pool.client() as client:
        for body in bad_bodies:
            for method in ("generateContent", "streamGenerateContent"):
                _google_error(client.post(f"/v1internal:{method}", json=body), 400, "INVALID_ARGUMENT")
        _google_error(
            client.post("/v1internal:countTokens", json={"request": {"contents": []}}),
            400,
            "INVALID_ARGUMENT",
        )
        raw = client.post(
            "/v1internal:generateContent", content=b"{not json", headers={"content-type": "application/json"}
        )
        _google_error(raw, 400, "INVALID_ARGUMENT")
        _google_error(client.post("/v1internal:noSuchMethod", json={}), 404, "NOT_FOUND")
        _google_error(client.get("/v1internal:generateContent"), 404, "NOT_FOUND")
        _google_error(client.get("/v1internal/operations/unknown"), 404, "NOT_FOUND")
        unknown = client.post("/v1internal:generateContent", json=_generate_body("no-such-model"))
        _google_error(unknown, 404, "NOT_FOUND")
        ok = client.post("/v1internal:generateContent", json=_generate_body("gpt-5-codex"))
    assert ok.status_code == 200, ok.text  # the account is as healthy as before
    assert len(pool.sim.requests(endpoint="codex.responses")) == 1


def test_client_6_quota_reads_per_model_on_antigravity(make_pool: Callable[..., Pool]) -> None:
    """Antigravity's quota is per model: each model's bucket is its own window, and the CLI's name
    for a model (an alias, ALIAS-1) shows its target's."""
    pool = _pool_of(make_pool, "antigravity")
    sim_id = pool.sim_accounts[0].id
    pool.sim.set_quota(sim_id, "gemini-3-pro-high", used_percent=100, reset_in_s=3600)
    pool.sim.set_quota(sim_id, "gemini-3-flash", used_percent=40, reset_in_s=600)
    with pool.client() as client:
        served = client.post("/v1internal:generateContent", json=_generate_body("gemini-3-flash"))
        assert served.status_code == 200, served.text  # traffic: the per-model quota is read
        deadline = time.monotonic() + 10
        while True:
            buckets = {
                bucket["modelId"]: bucket
                for bucket in client.post("/v1internal:retrieveUserQuota", json={}).json()["buckets"]
            }
            if "remainingFraction" in buckets["gemini-3-pro-high"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    assert buckets["gemini-3-pro-high"]["remainingFraction"] == 0
    assert buckets["gemini-3-flash"]["remainingFraction"] == pytest.approx(0.6, abs=1e-3)
    assert buckets["gemini-3.8-flash"]["remainingFraction"] == buckets["gemini-3-flash"]["remainingFraction"]
    assert buckets["gemini-3-flash"]["resetTime"] != buckets["gemini-3-pro-high"]["resetTime"]


def test_client_6_antigravity_client_wrapper_and_its_session_keep_one_account(
    make_pool: Callable[..., Pool],
) -> None:
    """The Antigravity clients' wrapper (``requestId``, ``requestType``, ``userAgent``,
    ``request.sessionId``; PROTOCOLS §3.3) is accepted; its ``sessionId`` binds the conversation to
    one account (AFF-1), while calls without one rotate (AFF-2)."""
    pool = make_pool(provider="claude", accounts=2)
    for account in pool.sim_accounts:
        pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=2))

    def body(session: str | None) -> dict[str, Any]:
        request: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        if session is not None:
            request["sessionId"] = session
        return {
            "project": "sublane-key-1",
            "model": "claude-sonnet-4-6",
            "userAgent": "antigravity",
            "requestType": "agent",
            "requestId": "agent-1",
            "request": request,
        }

    with pool.client() as client:
        for session in ("-4242", "-4242", "-4242", None, None):
            answer = client.post("/v1internal:streamGenerateContent?alt=sse", json=body(session))
            assert answer.status_code == 200, answer.text
            assert all(set(payload) == {"response"} for payload in _sse_payloads(answer.text))
    served = [record.account_id for record in pool.finished if record.outcome == "success"]
    assert len(served) == 5
    assert len(set(served[:3])) == 1, served  # one session, one account
    assert set(served[3:]) == set(pool.account_ids), served  # sessionless calls rotate over both


@pytest.mark.parametrize("method", ["generateContent", "streamGenerateContent?alt=sse"])
def test_client_6_upstream_refusal_in_google_shape(make_pool: Callable[..., Pool], method: str) -> None:
    """An upstream's refusal before any output reaches the client in Google's RPC envelope, with the
    status the Gemini CLI retries on (429), not wrapped in ``response``."""
    pool = make_pool()
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded"))
    with pool.client() as client:
        answer = client.post(f"/v1internal:{method}", json=_generate_body("gpt-5-codex"))
    error = _google_error(answer, 429, "RESOURCE_EXHAUSTED")
    assert error["details"][0]["reason"] == "upstream_rate_limited"
    assert "response" not in answer.json()


_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "model": st.sampled_from(["gpt-5-codex", "models/gpt-5-codex", ""]) | JSON_VALUES,
        "project": JSON_VALUES,
        "request": st.fixed_dictionaries(
            {},
            optional={
                "contents": st.just(GEMINI_BODY["contents"]) | JSON_VALUES,
                "model": st.just("models/gpt-5-codex") | JSON_VALUES,
                "session_id": JSON_VALUES,
                "sessionId": JSON_VALUES,
                "generationConfig": JSON_VALUES,
            },
        )
        | JSON_VALUES,
    },
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(
        [
            "generateContent",
            "streamGenerateContent?alt=sse",
            "countTokens",
            "loadCodeAssist",
            "retrieveUserQuota",
        ]
    ),
    body=_BODIES,
)
def test_client_6_no_body_is_ever_a_5xx(code_assist_pool: Pool, method: str, body: dict[str, Any]) -> None:
    answer = code_assist_pool.client().post(f"/v1internal:{method}", json=body)
    assert answer.status_code < 500, (method, body, answer.text)
    if answer.status_code >= 400:
        assert answer.json()["error"]["status"], answer.text  # Google's envelope


@pytest.fixture
def code_assist_pool(make_pool: Callable[..., Pool]) -> Pool:
    return make_pool()


def test_client_6_a_client_leaving_mid_stream_ends_the_call(make_pool: Callable[..., Pool]) -> None:
    """Closing the enveloped stream closes the relay under it: the slot is given back and the call
    is recorded, as on the Gemini route (ADM-8)."""
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.stall(1, stall_ms=2500))
    with (
        pool.client() as client,
        client.stream(
            "POST", "/v1internal:streamGenerateContent?alt=sse", json=_generate_body("gpt-5-codex")
        ) as answer,
    ):
        assert answer.status_code == 200
        first = next(answer.iter_lines())
        assert first.startswith("data: ") and set(json.loads(first[6:])) == {"response"}
    deadline = time.monotonic() + 4
    while (pool.runtime.leases.total_in_flight() or not pool.finished) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pool.runtime.leases.total_in_flight() == 0
    assert pool.finished and pool.finished[-1].protocol == "code_assist"


def test_client_6_a_stream_cut_upstream_ends_with_google_error_event(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.cut(2))
    with pool.client() as client:
        answer = client.post("/v1internal:streamGenerateContent?alt=sse", json=_generate_body("gpt-5-codex"))
    assert answer.status_code == 200, answer.text
    payloads = _sse_payloads(answer.text)
    assert payloads[0].keys() == {"response"}
    assert payloads[-1].keys() == {"error"} and payloads[-1]["error"]["status"], payloads[-1]
    assert pool.finished[-1].outcome != "success"
    assert pool.runtime.leases.total_in_flight() == 0
