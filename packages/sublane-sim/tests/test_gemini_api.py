"""The simulator's Gemini API with API keys (``/gemini``), as the real API answers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sublane_sim import Behaviour, Simulator

MODEL = "gemini-2.5-flash"
BODY: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "be brief"}]},
    "contents": [{"role": "user", "parts": [{"text": "say hi"}]}],
}


def _post(sim: Simulator, key: str | None, method: str, body: Any = BODY) -> httpx.Response:
    headers = {"x-goog-api-key": key} if key else {}
    return httpx.post(f"{sim.gemini_base_url}/v1beta/models/{MODEL}:{method}", json=body, headers=headers)


def test_the_model_list_is_paged_with_names_and_methods(sim: Simulator) -> None:
    account = sim.create_account("gemini")
    headers = {"x-goog-api-key": account.api_key}
    first = httpx.get(f"{sim.gemini_base_url}/v1beta/models", params={"pageSize": 4}, headers=headers).json()
    assert len(first["models"]) == 4 and first["models"][0]["name"].startswith("models/")
    names = [entry["name"] for entry in first["models"]]
    token = first["nextPageToken"]
    while token:
        page = httpx.get(
            f"{sim.gemini_base_url}/v1beta/models",
            params={"pageSize": 4, "pageToken": token},
            headers=headers,
        ).json()
        names += [entry["name"] for entry in page["models"]]
        token = page.get("nextPageToken")
    assert f"models/{MODEL}" in names and "models/gemini-embedding-001" in names


def test_a_wrong_or_revoked_key_is_400_api_key_invalid_and_no_key_403(sim: Simulator) -> None:
    account = sim.create_account("gemini")
    wrong = _post(sim, "AIzaSyNotAKeyNotAKeyNotAKeyNotAKey0000", "generateContent")
    assert wrong.status_code == 400
    error = wrong.json()["error"]
    assert (error["status"], error["details"][0]["reason"]) == ("INVALID_ARGUMENT", "API_KEY_INVALID")
    assert _post(sim, None, "generateContent").json()["error"]["status"] == "PERMISSION_DENIED"
    sim.revoke_api_key(account.id)
    assert _post(sim, account.api_key, "generateContent").status_code == 400
    other = sim.create_account("claude")  # another provider's key is no Gemini key
    assert _post(sim, other.api_key, "generateContent").status_code == 400


def test_stream_chunks_are_bare_responses_with_usage_and_cached_tokens(sim: Simulator) -> None:
    account = sim.create_account("gemini")
    sim.set_default(account.id, Behaviour.ok(text="Hi there", deltas=2))
    sse = _post(sim, account.api_key, "streamGenerateContent?alt=sse")
    assert sse.status_code == 200 and not [h for h in sse.headers if "ratelimit" in h]
    chunks = [json.loads(line[6:]) for line in sse.text.splitlines() if line.startswith("data: ")]
    assert "response" not in chunks[0] and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert "cachedContentTokenCount" not in chunks[-1]["usageMetadata"]  # proto3 JSON: no zero counts
    again = _post(sim, account.api_key, "generateContent").json()
    assert "cachedContentTokenCount" not in again["usageMetadata"]  # under 1024 tokens: never cached
    long = {"contents": [{"role": "user", "parts": [{"text": "a long shared prefix " * 400}]}]}
    assert (
        "cachedContentTokenCount"
        not in _post(sim, account.api_key, "generateContent", long).json()["usageMetadata"]
    )
    cached = _post(sim, account.api_key, "generateContent", long).json()["usageMetadata"]
    assert 0 < cached["cachedContentTokenCount"] <= cached["promptTokenCount"]  # the same prefix
    assert [r.endpoint for r in sim.requests(account_id=account.id)] == [
        "gemini.streamGenerateContent",
        *["gemini.generateContent"] * 3,
    ]


def test_a_429_says_when_to_retry_in_retry_info(sim: Simulator) -> None:
    account = sim.create_account("gemini")
    sim.script(account.id, Behaviour.error(429, retry_after="17"))
    limited = _post(sim, account.api_key, "generateContent")
    assert limited.status_code == 429 and "retry-after" not in limited.headers
    error = limited.json()["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    kinds = {detail["@type"].rsplit(".", 1)[-1]: detail for detail in error["details"]}
    assert kinds["RetryInfo"]["retryDelay"] == "17s"
    assert kinds["QuotaFailure"]["violations"][0]["quotaDimensions"]["model"] == MODEL


def test_envelopes_and_extra_count_fields_are_refused(sim: Simulator) -> None:
    account = sim.create_account("gemini")
    wrapped = _post(sim, account.api_key, "generateContent", {"model": MODEL, "request": BODY})
    assert wrapped.status_code == 400
    counted = _post(sim, account.api_key, "countTokens", BODY)  # systemInstruction: not a field of it
    assert counted.status_code == 400
    nested = _post(
        sim, account.api_key, "countTokens", {"generateContentRequest": {"model": f"models/{MODEL}", **BODY}}
    )
    assert nested.status_code == 200 and nested.json()["totalTokens"] > 0


def test_the_google_genai_sdk_talks_to_it_directly(sim: Simulator) -> None:
    """The official SDK pointed at the simulator, as at the real API: paths, key header, shapes."""
    genai = pytest.importorskip("google.genai")
    from google.genai import errors, types

    account = sim.create_account("gemini")
    sim.set_default(account.id, Behaviour.ok(text="Hi there", deltas=2))
    options = types.HttpOptions(base_url=sim.gemini_base_url)
    client = genai.Client(api_key=account.api_key, http_options=options)
    assert client.models.generate_content(model=MODEL, contents="hi").text == "Hi there"
    streamed = list(client.models.generate_content_stream(model=MODEL, contents="hi"))
    assert "".join(chunk.text or "" for chunk in streamed) == "Hi there"
    listed = [model.name for model in client.models.list(config={"page_size": 3})]
    assert f"models/{MODEL}" in listed and len(listed) > 3  # the SDK follows nextPageToken
    wrong = genai.Client(api_key="AIzaSyNotAKeyNotAKeyNotAKeyNotAKey0000", http_options=options)
    with pytest.raises(errors.ClientError) as refused:
        wrong.models.generate_content(model=MODEL, contents="hi")
    assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
