"""Every scripted behaviour, observed on the wire through real HTTP clients, for each provider."""

from __future__ import annotations

import itertools
import time
from typing import Any

import httpx
import pytest

from sublane_sim import Behaviour, RefreshOutcome, SimAccount, Simulator, parse_sse
from sublane_sim._script import ScriptBook

CODEX_BODY = {"model": "gpt-5-codex", "stream": True, "store": False, "input": []}
CLAUDE_BODY = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 64,
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
}


def antigravity_body(account: SimAccount, model: str = "gemini-3-flash") -> dict[str, Any]:
    return {
        "project": account.project_id,
        "model": model,
        "request": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    }


def call(sim: Simulator, http: httpx.Client, account: SimAccount, **body_extra: Any) -> httpx.Response:
    """One model request in the account's own protocol."""
    if account.provider == "codex":
        return http.post(
            f"{sim.codex_base_url}/codex/responses",
            json={**CODEX_BODY, **body_extra},
            headers={
                "authorization": f"Bearer {account.access_token}",
                "chatgpt-account-id": account.account_id,
            },
        )
    if account.provider == "claude":
        return http.post(
            f"{sim.claude_base_url}/v1/messages?beta=true",
            json={**CLAUDE_BODY, **body_extra},
            headers={
                "authorization": f"Bearer {account.access_token}",
                "anthropic-beta": "claude-code-20250219,oauth-2025-04-20",
                "anthropic-version": "2023-06-01",
            },
        )
    return http.post(
        f"{sim.antigravity_base_url}/v1internal:streamGenerateContent?alt=sse",
        json={**antigravity_body(account), **body_extra},
        headers={"authorization": f"Bearer {account.access_token}"},
    )


PROVIDERS = ["codex", "claude", "antigravity"]


# == unit: the queue ==============================================================================


def test_queue_order_model_queue_first_and_default() -> None:
    book = ScriptBook()
    first, second, only_model = Behaviour.error(500), Behaviour.error(502), Behaviour.error(503)
    book.push("a", [first, second])
    book.push("a", [only_model], model="m")
    assert book.take("a", "m") is only_model
    assert book.take("a", "m") is first
    assert book.take("a", "other") is second
    assert book.take("a", "m") is None
    book.set_default("a", Behaviour.ok(deltas=3))
    assert book.default("a").deltas == 3
    assert book.default("b") == Behaviour()


def test_behaviour_validation() -> None:
    with pytest.raises(ValueError, match="unknown behaviour kind"):
        Behaviour(kind="explode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown behaviour fields"):
        Behaviour.from_dict({"kind": "ok", "speed": 3})
    with pytest.raises(ValueError, match="4xx/5xx"):
        Behaviour.error(200)
    assert Behaviour.from_dict(Behaviour.stall(2, 50).as_dict()) == Behaviour.stall(2, 50)
    with pytest.raises(ValueError, match="unknown refresh outcome"):
        RefreshOutcome(kind="maybe")  # type: ignore[arg-type]


# == normal =======================================================================================


@pytest.mark.parametrize("provider", PROVIDERS)
def test_ok_with_deltas_and_token_counts(sim: Simulator, http: httpx.Client, provider: str) -> None:
    account = sim.create_account(provider)  # type: ignore[arg-type]
    sim.script(account.id, Behaviour.ok(deltas=5, input_tokens=1000, cached_tokens=600, output_tokens=77))
    events = parse_sse(call(sim, http, account).text)
    if provider == "codex":
        assert sum(e.name == "response.output_text.delta" for e in events) == 5
        usage = events[-1].data["response"]["usage"]
        assert (usage["input_tokens"], usage["input_tokens_details"]["cached_tokens"]) == (1000, 600)
        assert usage["output_tokens"] == 77
    elif provider == "claude":
        deltas = [
            e for e in events if e.name == "content_block_delta" and e.data["delta"]["type"] == "text_delta"
        ]
        assert len(deltas) == 5
        usage = next(e for e in events if e.name == "message_delta").data["usage"]
        assert usage["cache_read_input_tokens"] == 600
        assert usage["input_tokens"] + usage["cache_read_input_tokens"] == 1000
        assert usage["output_tokens"] == 77
    else:
        assert sum(1 for e in events if "finishReason" not in e.data["response"]["candidates"][0]) == 5
        usage = events[-1].data["response"]["usageMetadata"]
        assert (usage["promptTokenCount"], usage["cachedContentTokenCount"]) == (1000, 600)
        assert usage["candidatesTokenCount"] == 77


def test_default_behaviour_applies_when_queue_is_empty(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    sim.set_default(account.id, Behaviour.error(503))
    sim.script(account.id, Behaviour.ok())
    assert call(sim, http, account).status_code == 200
    assert call(sim, http, account).status_code == 503
    assert call(sim, http, account).status_code == 503


def test_per_model_script(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.script(account.id, Behaviour.error(429, error_code="QUOTA_EXHAUSTED"), model="gemini-3-pro-high")
    assert call(sim, http, account).status_code == 200
    limited = call(sim, http, account, **antigravity_body(account, "gemini-3-pro-high"))
    assert limited.status_code == 429


# == timing: slow headers, slow first delta, pacing, stall ========================================


def _timed_stream(sim: Simulator, account: SimAccount) -> tuple[float, list[tuple[float, bytes]]]:
    """Seconds until headers, and (seconds, chunk) for each body chunk."""
    with httpx.Client(timeout=10) as client:
        start = time.monotonic()
        with client.stream(
            "POST",
            f"{sim.codex_base_url}/codex/responses",
            json=CODEX_BODY,
            headers={
                "authorization": f"Bearer {account.access_token}",
                "chatgpt-account-id": account.account_id,
            },
        ) as response:
            headers_at = time.monotonic() - start
            chunks = [(time.monotonic() - start, chunk) for chunk in response.iter_raw()]
    return headers_at, chunks


def _delta_times(chunks: list[tuple[float, bytes]]) -> list[float]:
    return [at for at, chunk in chunks for _ in range(chunk.count(b"event: response.output_text.delta"))]


def test_slow_headers(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.ok(header_delay_ms=300))
    headers_at, _ = _timed_stream(sim, account)
    assert headers_at >= 0.28


def test_slow_first_delta_and_pacing(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.ok(deltas=4, first_delta_delay_ms=250, pacing_ms=60))
    headers_at, chunks = _timed_stream(sim, account)
    assert headers_at < 0.2
    times = _delta_times(chunks)
    assert len(times) == 4
    assert times[0] >= 0.24
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(0.05 <= gap < 0.5 for gap in gaps), gaps


def test_stall_mid_stream_then_resume(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.stall(after_deltas=2, stall_ms=400, deltas=4))
    _, chunks = _timed_stream(sim, account)
    times = _delta_times(chunks)
    assert len(times) == 4
    assert times[2] - times[1] >= 0.38, "no bytes while stalled"
    assert b"response.completed" in chunks[-1][1]


def test_stall_until_client_leaves_counts_a_cancellation(sim: Simulator) -> None:
    account = sim.create_account("claude")
    sim.script(account.id, Behaviour.stall(after_deltas=1))
    with (
        pytest.raises(httpx.ReadTimeout),
        httpx.Client(timeout=httpx.Timeout(10, read=0.3)) as client,
        client.stream(
            "POST",
            f"{sim.claude_base_url}/v1/messages",
            json=CLAUDE_BODY,
            headers={"x-api-key": account.api_key, "anthropic-version": "2023-06-01"},
        ) as response,
    ):
        for _ in response.iter_raw():
            pass
    deadline = time.monotonic() + 5
    while sim.counters(account.id).cancellations == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    counters = sim.counters(account.id)
    assert counters.cancellations == 1 and counters.current_streams == 0
    assert sim.requests(account_id=account.id)[-1].outcome == "canceled"


# == stream cut ===================================================================================


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cut_aborts_the_connection(sim: Simulator, provider: str) -> None:
    account = sim.create_account(provider)  # type: ignore[arg-type]
    sim.script(account.id, Behaviour.cut(after_deltas=3))
    chunks: list[bytes] = []

    def read_all(client: httpx.Client) -> None:
        response = client.send(call_request(sim, client, account), stream=True)
        try:
            assert response.status_code == 200
            chunks.extend(response.iter_raw())
        finally:
            response.close()

    with httpx.Client(timeout=10) as client, pytest.raises(httpx.RemoteProtocolError):
        read_all(client)
    received = b"".join(chunks)
    assert received.count(b"data: ") == (3 if provider == "antigravity" else received.count(b"event: "))
    assert received.count(b"data: ") >= 3
    assert b"response.completed" not in received and b"message_stop" not in received
    assert b"finishReason" not in received
    assert sim.requests(account_id=account.id)[-1].outcome == "cut"


def call_request(sim: Simulator, client: httpx.Client, account: SimAccount) -> httpx.Request:
    if account.provider == "codex":
        return client.build_request(
            "POST",
            f"{sim.codex_base_url}/codex/responses",
            json=CODEX_BODY,
            headers={"authorization": f"Bearer {account.api_key}"},
        )
    if account.provider == "claude":
        return client.build_request(
            "POST",
            f"{sim.claude_base_url}/v1/messages",
            json=CLAUDE_BODY,
            headers={"x-api-key": account.api_key, "anthropic-version": "2023-06-01"},
        )
    return client.build_request(
        "POST",
        f"{sim.antigravity_base_url}/v1internal:streamGenerateContent?alt=sse",
        json=antigravity_body(account),
        headers={"authorization": f"Bearer {account.access_token}"},
    )


def test_cut_eof_ends_cleanly_without_terminal_event(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.script(account.id, Behaviour.cut(after_deltas=2, cut_mode="eof"))
    response = call(sim, http, account)
    events = parse_sse(response.text)
    assert len(events) == 2
    assert all("finishReason" not in e.data["response"]["candidates"][0] for e in events)


# == overload inside a 200 stream =================================================================


def test_codex_overload_is_response_failed(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.overload(after_deltas=2), Behaviour.overload(top_level_error=True))
    failed = parse_sse(call(sim, http, account).text)
    assert sum(e.name == "response.output_text.delta" for e in failed) == 2
    assert failed[-1].name == "response.failed"
    assert failed[-1].data["response"]["status"] == "failed"
    assert failed[-1].data["response"]["error"]["code"] == "server_is_overloaded"
    top_level = parse_sse(call(sim, http, account).text)
    assert top_level[-1].data == {
        "type": "error",
        "code": "server_is_overloaded",
        "message": "Our servers are currently overloaded. Please try again later.",
        "param": None,
        "sequence_number": top_level[-1].data["sequence_number"],
    }


def test_claude_overload_is_an_error_event(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    sim.script(account.id, Behaviour.overload(after_deltas=1))
    response = call(sim, http, account)
    assert response.status_code == 200
    events = parse_sse(response.text)
    assert events[-1].name == "error"
    assert events[-1].data == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert "message_stop" not in [e.name for e in events]


def test_antigravity_overload_is_an_in_stream_error(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.script(account.id, Behaviour.overload(after_deltas=1))
    events = parse_sse(call(sim, http, account).text)
    assert events[-1].data["error"]["status"] == "UNAVAILABLE"


# == HTTP errors ==================================================================================


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [401, 403, 408, 500, 502, 503, 504])
def test_status_faults(sim: Simulator, http: httpx.Client, provider: str, status: int) -> None:
    account = sim.create_account(provider)  # type: ignore[arg-type]
    sim.script(account.id, Behaviour.error(status))
    response = call(sim, http, account)
    assert response.status_code == status
    if (status == 502 and provider != "antigravity") or (status == 504 and provider in ("codex", "claude")):
        assert response.headers["content-type"].startswith("text/html")
    elif provider == "codex":
        body = response.json()
        assert "error" in body
    elif provider == "claude":
        body = response.json()
        assert body["type"] == "error" and body["error"]["type"]
        assert "anthropic-ratelimit-unified-status" in response.headers
    elif status != 502:
        assert response.json()["error"]["code"] == status
    record = sim.requests(account_id=account.id)[-1]
    assert (record.status, record.outcome) == (status, "error")


def test_claude_529_overloaded(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    sim.script(account.id, Behaviour.error(529))
    response = call(sim, http, account)
    assert response.status_code == 529
    assert response.json()["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize("retry_after", ["2", None, "soon", "7200"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_retry_after_variants(
    sim: Simulator, http: httpx.Client, provider: str, retry_after: str | None
) -> None:
    account = sim.create_account(provider)  # type: ignore[arg-type]
    sim.script(account.id, Behaviour.error(429, retry_after=retry_after))
    response = call(sim, http, account)
    assert response.status_code == 429
    assert response.headers.get("retry-after") == retry_after


def test_codex_429_body_variants(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    sim.script(
        account.id,
        Behaviour.error(429, resets_in_s=60),
        Behaviour.error(429, error_code="usage_not_included"),
        Behaviour.error(429, error_code="rate_limit_exceeded"),
        Behaviour.error(503, error_code="slow_down"),
    )
    usage_limit = call(sim, http, account).json()["error"]
    assert usage_limit["type"] == "usage_limit_reached" and usage_limit["resets_in_seconds"] == 60
    assert call(sim, http, account).json()["error"]["type"] == "usage_not_included"
    assert call(sim, http, account).json()["error"]["code"] == "rate_limit_exceeded"
    assert call(sim, http, account).json()["error"]["code"] == "slow_down"


def test_error_with_slow_headers(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.error(500, header_delay_ms=250))
    with httpx.Client(timeout=10) as client:
        start = time.monotonic()
        response = call(sim, client, account)
        assert response.status_code == 500
        assert time.monotonic() - start >= 0.23


# == counters =====================================================================================


def test_concurrent_streams_are_counted(sim: Simulator) -> None:
    import threading

    account = sim.create_account("codex")
    sim.set_default(account.id, Behaviour.ok(deltas=3, pacing_ms=100))
    results: list[int] = []

    def one() -> None:
        with httpx.Client(timeout=10) as client:
            results.append(call(sim, client, account).status_code)

    threads = [threading.Thread(target=one) for _ in range(5)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 5
    while sim.counters(account.id).current_streams < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sim.counters(account.id).current_streams == 5
    for thread in threads:
        thread.join(10)
    counters = sim.counters(account.id)
    assert results == [200] * 5
    assert (counters.current_streams, counters.peak_streams, counters.completed) == (0, 5, 5)
    assert counters.model_requests == counters.requests == 5
