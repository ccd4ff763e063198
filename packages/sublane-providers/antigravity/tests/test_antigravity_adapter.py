"""The Antigravity adapter against the simulator: the contract kit, and what is Antigravity's own."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sublane_core import UpstreamOperation
from sublane_provider_antigravity import (
    AntigravityAdapter,
    GoogleOAuth,
    classify_failure,
    parse_duration,
    session_id,
    usage_of,
    windows_from_models,
)
from sublane_providers import FailureKind, RefreshFailed
from sublane_providers.testing import AdapterContract, as_httpx
from sublane_sim import Behaviour, Simulator

MODEL = "gemini-3-flash"


def make(sim: Simulator, http: httpx.AsyncClient, base_url: str | None = None) -> AntigravityAdapter:
    oauth = GoogleOAuth(
        http,
        token_url=sim.google_auth_url + "/token",
        userinfo_url=sim.google_auth_url + "/oauth2/v2/userinfo",
        client_id="client-id",
        client_secret="client-secret",
        timeout=10,
    )
    return AntigravityAdapter(
        base_url=base_url or sim.antigravity_base_url,
        http=http,
        oauth=oauth,
        authorize_url=sim.google_auth_url + "/o/oauth2/v2/auth",
        metadata_timeout=10,
    )


def body(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "contents": [{"role": "user", "parts": [{"text": "hi"}]}], **extra}


class TestAntigravityContract(AdapterContract):
    provider = "antigravity"
    model = MODEL

    def make_adapter(self, sim: Simulator, http: httpx.AsyncClient) -> AntigravityAdapter:
        return make(sim, http)

    def native_body(self) -> dict[str, Any]:
        return body()


@pytest.fixture
async def http() -> Any:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


async def test_gem_1_requests_are_wrapped_with_project_model_and_a_stable_session(
    sim: Simulator, http: httpx.AsyncClient
) -> None:
    adapter = make(sim, http)
    account = sim.create_account("antigravity")
    bundle = dict(adapter.parse_credentials(account.credentials).bundle)
    request = adapter.build_request(
        UpstreamOperation.STREAM, bundle, body(safetySettings=[]), {}, bound=True, conversation_key="conv-1"
    )
    sent = json.loads(request.content)
    url = httpx.URL(request.url)
    assert url.path.endswith("/v1internal:streamGenerateContent") and url.params["alt"] == "sse"
    assert sent["project"] == account.project_id and sent["model"] == MODEL
    assert sent["userAgent"] == "antigravity" and sent["requestType"] == "agent"
    assert sent["requestId"].startswith("agent-")
    assert "model" not in sent["request"] and "safetySettings" not in sent["request"]
    assert sent["request"]["sessionId"] == session_id("conv-1") != session_id("conv-2")
    unbound = adapter.build_request(UpstreamOperation.STREAM, bundle, body(), {}, bound=False)
    assert json.loads(unbound.content)["request"]["sessionId"] != sent["request"]["sessionId"]
    assert request.headers["authorization"] == f"Bearer {bundle['access_token']}"
    assert request.headers["user-agent"].startswith("antigravity/")


async def test_gem_1_project_is_discovered_and_provisioned_when_missing(
    sim: Simulator, http: httpx.AsyncClient
) -> None:
    adapter = make(sim, http)
    account = sim.create_account("antigravity", onboarded=False)
    credentials = dict(account.credentials)
    credentials.pop("project_id")
    imported = adapter.parse_credentials(credentials)
    assert not adapter.bundle_complete(imported.bundle)
    completed = await adapter.complete_import(imported)
    assert completed.bundle["project_id"] == account.project_id
    assert completed.identity.subject == account.project_id and completed.identity.email == account.email
    assert adapter.bundle_complete(completed.bundle)
    calls = [record.endpoint for record in sim.requests()]
    assert "antigravity.loadCodeAssist" in calls and "antigravity.onboardUser" in calls


async def test_gem_3_refresh_is_form_encoded_and_keeps_the_refresh_token(
    sim: Simulator, http: httpx.AsyncClient
) -> None:
    adapter = make(sim, http)
    account = sim.create_account("antigravity")
    bundle = dict(adapter.parse_credentials(account.credentials).bundle)
    refreshed = await adapter.refresh(bundle)
    assert refreshed.bundle["refresh_token"] == bundle["refresh_token"]  # Google does not rotate it
    assert refreshed.expires_at is not None
    token_calls = [record for record in sim.requests() if record.endpoint == "google.token"]
    assert token_calls and token_calls[-1].status == 200


async def test_gem_3_login_trades_the_pasted_code_and_finds_email_and_project(
    sim: Simulator, http: httpx.AsyncClient
) -> None:
    adapter = make(sim, http)
    flow = adapter.login()
    url, state, pkce = flow.start_login()
    assert "access_type=offline" in url and "client_id=client-id" in url
    redirected = await http.get(url, follow_redirects=False)
    location = redirected.headers["location"]
    code = httpx.URL(location).params["code"]
    imported = await flow.complete_login(code, state, pkce)
    assert imported.provider == "antigravity" and imported.bundle["refresh_token"]
    assert imported.bundle["project_id"] and imported.identity.email


async def test_gem_3_a_revoked_refresh_token_is_permanent(sim: Simulator, http: httpx.AsyncClient) -> None:
    adapter = make(sim, http)
    account = sim.create_account("antigravity")
    sim.revoke_refresh_token(account.id)
    with pytest.raises(RefreshFailed) as failed:
        await adapter.refresh(dict(adapter.parse_credentials(account.credentials).bundle))
    assert failed.value.permanent and failed.value.code == "invalid_grant"


def _rpc_429(
    reason: str, model: str, delay: str = "12s", domain: str = "cloudcode-pa.googleapis.com"
) -> bytes:
    return json.dumps(
        {
            "error": {
                "code": 429,
                "status": "RESOURCE_EXHAUSTED",
                "message": "You have exhausted your capacity on this model.",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": reason,
                        "domain": domain,
                        "metadata": {"model": model, "quotaResetDelay": "479.4ms"},
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
                ],
            }
        }
    ).encode()


def test_agl_1_a_structured_model_limit_is_model_scoped() -> None:
    failure = classify_failure(429, {}, _rpc_429("RATE_LIMIT_EXCEEDED", MODEL), 0.0)
    assert failure.kind is FailureKind.MODEL_RATE_LIMITED and failure.model == MODEL
    assert failure.retry_after == 12


@pytest.mark.parametrize(
    "payload",
    [
        _rpc_429("RATE_LIMIT_EXCEEDED", MODEL, domain="googleapis.com"),
        _rpc_429("SOMETHING_ELSE", MODEL),
        json.dumps(
            {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Resource exhausted"}}
        ).encode(),
        b"<html>busy</html>",
    ],
    ids=["other-domain", "other-reason", "no-details", "not-json"],
)
def test_agl_1_any_other_429_is_account_wide(payload: bytes) -> None:
    assert classify_failure(429, {}, payload, 0.0).kind is FailureKind.RATE_LIMITED


def test_gem_4_no_capacity_is_transient_and_names_itself() -> None:
    body_503 = json.dumps(
        {"error": {"code": 503, "status": "UNAVAILABLE", "message": "No capacity available for model x"}}
    ).encode()
    failure = classify_failure(503, {}, body_503, 0.0)
    assert failure.kind is FailureKind.TRANSIENT and failure.code == "no_capacity" and failure.retryable


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0.479417207s", 0.479417207),
        ("479.4ms", 0.4794),
        ("3h2m1s", 10921.0),
        ("1m", 60.0),
        ("x", None),
        ("", None),
    ],
)
def test_go_durations_are_read(text: str, seconds: float | None) -> None:
    parsed = parse_duration(text)
    assert parsed == pytest.approx(seconds) if seconds is not None else parsed is None


async def test_gem_4_the_next_host_is_tried_after_a_connection_failure_or_no_capacity(
    sim: Simulator, http: httpx.AsyncClient
) -> None:
    adapter = make(sim, http, base_url=f"http://127.0.0.1:9, {sim.antigravity_base_url}")
    account = sim.create_account("antigravity")
    bundle = dict(adapter.parse_credentials(account.credentials).bundle)
    first = adapter.build_request(UpstreamOperation.JSON, bundle, body(), {}, bound=False)
    assert str(first.url).startswith("http://127.0.0.1:9/")
    moved = adapter.next_host(first, None)
    assert moved is not None and str(moved.url).startswith(sim.antigravity_base_url + "/v1internal:")
    assert moved.content == first.content
    # Host and Content-Length are written by the sender for the URL and body it sends: the new host's
    assert "host" not in moved.headers and "content-length" not in moved.headers
    assert moved.headers["authorization"] == first.headers["authorization"]
    assert adapter.next_host(moved, None) is None  # the last host: nothing left to try
    no_capacity = classify_failure(503, {}, b'{"error":{"code":503,"message":"No capacity available"}}', 0.0)
    assert adapter.next_host(first, no_capacity) is not None
    assert adapter.next_host(first, classify_failure(500, {}, b"{}", 0.0)) is None


def test_usage_counts_prompt_with_cache_and_thoughts_as_output() -> None:
    usage = usage_of(
        {
            "usageMetadata": {
                "promptTokenCount": 100,
                "toolUsePromptTokenCount": 5,
                "candidatesTokenCount": 7,
                "thoughtsTokenCount": 20,
                "cachedContentTokenCount": 40,
            }
        }
    )
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (
        105,
        27,
        40,
    )


def test_cat_1_quota_rows_are_per_exact_model_and_unknown_stays_unknown() -> None:
    windows = windows_from_models(
        {
            "models": {
                "gemini-3-flash": {
                    "quotaInfo": {"remainingFraction": 0.25, "resetTime": "2026-01-02T21:00:00Z"}
                },
                "claude-sonnet-4-6": {"quotaInfo": {"resetTime": "2026-01-02T21:00:00Z"}},
                "chat_20706": {"quotaInfo": {"remainingFraction": 1}},
                "gemini-3-pro-low": {},
            }
        }
    )
    by_model = {window.model: window for window in windows}
    assert set(by_model) == {"gemini-3-flash", "claude-sonnet-4-6"}
    assert by_model["gemini-3-flash"].used_percent == 75 and by_model["gemini-3-flash"].main
    assert (
        by_model["claude-sonnet-4-6"].used_percent is None and not by_model["claude-sonnet-4-6"].limit_reached
    )


async def test_a_cut_stream_has_no_outcome(sim: Simulator, http: httpx.AsyncClient) -> None:
    adapter = make(sim, http)
    sim_account = sim.create_account("antigravity")
    bundle = dict(adapter.parse_credentials(sim_account.credentials).bundle)
    sim.script(sim_account.id, Behaviour.cut(1, cut_mode="eof"))
    request = adapter.build_request(UpstreamOperation.STREAM, bundle, body(), {}, bound=False)
    observer = adapter.new_observer()
    response = await http.send(as_httpx(http, request), stream=True)
    try:
        async for chunk in response.aiter_lines():
            if chunk.startswith("data: "):
                observer.observe(None, chunk[len("data: ") :])
    except httpx.HTTPError:
        pass
    await response.aclose()
    assert observer.state.outcome is None
