"""The openai-compatible adapter against the simulator's OpenAI-compatible server (PAID-1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

import sublane_provider_openai_compatible
from sublane_core import Billing, UpstreamOperation, json_loads
from sublane_core.sse import SseFramer, parse_event
from sublane_provider_openai_compatible import PROVIDER, CompatibleAdapter, parse_credentials
from sublane_providers import CredentialFormatError, CredentialsRefused, FailureKind, Outcome, StreamState
from sublane_sim import Behaviour, Simulator

MODEL = "qwen3-coder-30b"
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
def adapter(http: httpx.AsyncClient) -> CompatibleAdapter:
    return CompatibleAdapter(http=http, metadata_timeout=10)


def credentials(sim: Simulator, key: str, **extra: Any) -> dict[str, Any]:
    return {"api_key": key, "base_url": sim.compat_base_url, **extra}


async def stream(
    adapter: CompatibleAdapter, http: httpx.AsyncClient, bundle: dict[str, Any], body: dict[str, Any]
) -> tuple[int, StreamState, list[str]]:
    request = adapter.build_request(UpstreamOperation.STREAM, bundle, body, {}, bound=False)
    observer = adapter.new_observer()
    framer = SseFramer()
    seen: list[str] = []
    built = http.build_request(
        request.method, request.url, headers=dict(request.headers), content=request.content
    )
    response = await http.send(built, stream=True)
    try:
        if response.status_code >= 300:
            await response.aread()
            return response.status_code, observer.state, seen
        try:
            async for chunk in response.aiter_raw():
                for block in framer.feed(chunk):
                    event = parse_event(block)
                    seen.append(event.data or "")
                    observer.observe(event.name, event.data)
        except httpx.HTTPError:
            pass
    finally:
        await response.aclose()
    return response.status_code, observer.state, seen


def test_paid_1_public_api_and_plugin() -> None:
    assert sorted(sublane_provider_openai_compatible.__all__) == sorted(
        ["PROVIDER", "ChatStreamObserver", "CompatibleAdapter", "CompatibleSettings", "build_adapter",
         "chat_usage", "parse_credentials"]
    )  # fmt: skip
    assert PROVIDER.name == "openai-compatible"
    assert PROVIDER.billing is Billing.METERED


def test_paid_1_compatible_credentials_need_a_base_url() -> None:
    with pytest.raises(CredentialFormatError, match="base_url"):
        parse_credentials({"api_key": "sk-local-123456"})
    imported = parse_credentials(
        {"api_key": "sk-local-123456", "base_url": "http://127.0.0.1:8000/v1/", "models": ["a", "b"]}
    )
    assert imported.bundle == {
        "api_key": "sk-local-123456",
        "base_url": "http://127.0.0.1:8000/v1",
        "models": ["a", "b"],
    }
    assert imported.identity is not None and "sk-local" not in (imported.identity.subject or "")


async def test_paid_1_compatible_key_check(sim: Simulator, adapter: CompatibleAdapter) -> None:
    account = sim.create_account("compat")
    named = parse_credentials(credentials(sim, account.api_key, models=[MODEL]))
    assert await adapter.check_credentials(named) is named  # 404 model list, the import names them
    assert await adapter.list_models(named.bundle) == [MODEL]
    with pytest.raises(CredentialsRefused, match="lists no models"):
        await adapter.check_credentials(parse_credentials(credentials(sim, account.api_key)))
    with pytest.raises(CredentialsRefused, match="401"):
        await adapter.check_credentials(
            parse_credentials(credentials(sim, "sk-wrong-key-0000", models=[MODEL]))
        )


async def test_paid_1_compatible_stream_records_usage_after_the_finish(
    sim: Simulator, adapter: CompatibleAdapter, http: httpx.AsyncClient
) -> None:
    account = sim.create_account("compat")
    bundle = dict(parse_credentials(credentials(sim, account.api_key, models=[MODEL])).bundle)
    sim.script(account.id, Behaviour.ok(tool_call=True, reasoning_deltas=2))
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    status, state, seen = await stream(adapter, http, bundle, {**BODY, "tools": tools, "stream": False})
    assert status == 200
    assert seen[-1] == "[DONE]"
    assert state.outcome is Outcome.SUCCESS
    assert state.first_delta is not None and state.first_delta.value == "reasoning"
    assert state.usage is not None and state.usage.input_tokens and state.usage.output_tokens
    sent = sim.requests(account_id=account.id)[-1]
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}


async def test_paid_1_compatible_cut_and_overloaded_streams_never_succeed(
    sim: Simulator, adapter: CompatibleAdapter, http: httpx.AsyncClient
) -> None:
    account = sim.create_account("compat")
    bundle = dict(parse_credentials(credentials(sim, account.api_key, models=[MODEL])).bundle)
    sim.script(account.id, Behaviour.cut(2, cut_mode="eof"), Behaviour.overload(after_deltas=1))
    _, cut, _ = await stream(adapter, http, bundle, BODY)
    assert cut.outcome is None
    _, failed, _ = await stream(adapter, http, bundle, BODY)
    assert failed.outcome is Outcome.ERROR and failed.error_message is not None


async def test_paid_1_compatible_json_answer_and_failures(
    sim: Simulator, adapter: CompatibleAdapter, http: httpx.AsyncClient
) -> None:
    account = sim.create_account("compat")
    bundle = dict(parse_credentials(credentials(sim, account.api_key, models=[MODEL])).bundle)
    request = adapter.build_request(
        UpstreamOperation.JSON, bundle, {**BODY, "stream_options": {}}, {}, bound=False
    )
    assert request.headers["authorization"] == f"Bearer {account.api_key}"
    assert request.url == f"{sim.compat_base_url}/chat/completions"
    sent = json_loads(request.content)
    assert sent["stream"] is False and "stream_options" not in sent
    response = await http.post(request.url, headers=dict(request.headers), content=request.content)
    observer = adapter.new_observer()
    observer.observe_answer(response.json())
    assert observer.state.outcome is Outcome.SUCCESS and observer.state.usage is not None
    sim.script(account.id, Behaviour.error(429, retry_after="9"), Behaviour.error(503))
    for expected in (FailureKind.RATE_LIMITED, FailureKind.TRANSIENT):
        answer = await http.post(request.url, headers=dict(request.headers), content=request.content)
        failure = adapter.classify_failure(answer.status_code, dict(answer.headers), answer.content, 0.0)
        assert failure.kind is expected
        if expected is FailureKind.RATE_LIMITED:
            assert failure.retry_after == 9
    refused = await http.post(
        request.url, headers={**request.headers, "authorization": "Bearer nope"}, content=request.content
    )
    failure = adapter.classify_failure(refused.status_code, dict(refused.headers), refused.content, 0.0)
    assert failure.kind is FailureKind.UNAUTHORIZED
    bad = await http.post(
        request.url, headers=dict(request.headers), content=b'{"model": "x", "messages": []}'
    )
    failure = adapter.classify_failure(bad.status_code, dict(bad.headers), bad.content, 0.0)
    assert failure.kind is FailureKind.CLIENT_ERROR


def test_paid_1_compatible_observer_ends_on_done_when_no_usage_chunk_comes(
    adapter: CompatibleAdapter,
) -> None:
    finish = '{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}'
    observer = adapter.new_observer()
    observer.observe(None, '{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}')
    observer.observe(None, finish)
    assert observer.state.outcome is None  # the usage chunk may follow
    observer.observe(None, "[DONE]")
    assert observer.state.outcome is Outcome.INCOMPLETE and observer.state.usage is None
    cut = adapter.new_observer()
    cut.observe_data(None, b'{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}')
    cut.observe_data(None, b"[DONE]")
    assert cut.state.outcome is None  # no finish reason: the turn never ended


def test_paid_1_compatible_stream_error_text_is_relayed_without_a_key(adapter: CompatibleAdapter) -> None:
    """An ``{"error": …}`` line is relayed like an error answer: nothing shaped like a key."""
    observer = adapter.new_observer()
    observer.observe(None, '{"error":{"code":"bad","message":"token sk-live-0123456789abcdef expired"}}')
    assert observer.state.outcome is Outcome.ERROR
    assert observer.state.error_message is not None and "0123456789abcdef" not in observer.state.error_message


def test_paid_1_compat_only_a_refusal_naming_stream_options_is_resent_without_it(
    adapter: CompatibleAdapter,
) -> None:
    bundle = {"api_key": "k" * 12, "base_url": "http://127.0.0.1:9/v1"}
    request = adapter.build_request(UpstreamOperation.STREAM, bundle, BODY, {}, bound=False)
    assert json_loads(request.content)["stream_options"] == {"include_usage": True}
    other = adapter.classify_failure(400, {}, b'{"error": {"message": "bad temperature"}}', 0.0)
    assert other.kind is FailureKind.CLIENT_ERROR and adapter.next_host(request, other) is None
    assert adapter.next_host(request, None) is None  # an unreachable server has no other host
    refusal = b'{"detail": "Extra parameters [\'stream_options\'] are not allowed"}'
    failure = adapter.classify_failure(400, {}, refusal, 0.0)
    assert failure.kind is FailureKind.CLIENT_ERROR  # never the account's failure
    resent = adapter.next_host(request, failure)
    assert resent is not None and resent.url == request.url
    assert "stream_options" not in json_loads(resent.content) and json_loads(resent.content)["stream"] is True
    assert adapter.next_host(resent, failure) is None  # once: the resent call has nothing to drop
    again = adapter.build_request(UpstreamOperation.STREAM, bundle, BODY, {}, bound=False)
    assert "stream_options" not in json_loads(again.content)  # the server is remembered
    elsewhere = {**bundle, "base_url": "http://127.0.0.1:10/v1"}
    other_server = adapter.build_request(UpstreamOperation.STREAM, elsewhere, BODY, {}, bound=False)
    assert "stream_options" in json_loads(other_server.content)
