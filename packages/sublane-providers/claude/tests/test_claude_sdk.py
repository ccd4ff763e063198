"""The official ``anthropic`` SDK reaches the simulator through nothing but this adapter.

The SDK talks to a transport that plays a minimal gateway: it takes what the SDK sent (its own API
key, headers and body) and lets the adapter build the upstream request for a pooled OAuth account.
If the adapter dropped the OAuth beta flag, forwarded the SDK's key or mangled the body, the
simulator would refuse it, and the SDK would fail to parse a broken answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anthropic
import httpx
import httpx2
import pytest

from sublane_provider_claude import ClaudeAdapter
from sublane_providers import stream_request
from sublane_providers.testing import as_httpx
from sublane_sim import Behaviour, SimAccount, Simulator

MEMBER_KEY = "sk-sublane-member-key"


class UpstreamBody(httpx2.AsyncByteStream):
    """The upstream answer's raw bytes, as the SDK's HTTP library reads a body."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_raw():
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


class AdapterTransport(httpx2.AsyncBaseTransport):
    """Sends every SDK request upstream as the adapter builds it for ``bundle``."""

    def __init__(
        self, adapter: ClaudeAdapter, upstream: httpx.AsyncClient, bundle: Mapping[str, Any]
    ) -> None:
        self._adapter = adapter
        self._upstream = upstream
        self._bundle = bundle

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(await request.aread())
        headers = dict(request.headers)
        if request.url.path.endswith("/count_tokens"):
            built = self._adapter.count_tokens_request(self._bundle, body, headers)
        elif body.get("stream"):
            built = stream_request(self._adapter, self._bundle, body, headers, bound=True)
        else:
            built = self._adapter.json_request(self._bundle, body, headers, bound=True)
        answer = await self._upstream.send(as_httpx(self._upstream, built), stream=True)
        return httpx2.Response(
            answer.status_code, headers=answer.headers.multi_items(), stream=UpstreamBody(answer)
        )


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def account(sim: Simulator) -> SimAccount:
    return sim.create_account("claude")


@pytest.fixture
async def client(sim: Simulator, account: SimAccount) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with httpx.AsyncClient(timeout=10) as upstream:
        adapter = ClaudeAdapter(
            base_url=sim.claude_base_url, auth_url=sim.claude_auth_url, http=upstream, metadata_timeout=5
        )
        bundle = adapter.parse_credentials(account.credentials).bundle
        transport = AdapterTransport(adapter, upstream, bundle)
        async with (
            httpx2.AsyncClient(transport=transport) as sdk_http,
            anthropic.AsyncAnthropic(
                base_url="http://sublane.invalid", api_key=MEMBER_KEY, http_client=sdk_http, max_retries=0
            ) as sdk,
        ):
            yield sdk


async def test_streaming_with_thinking_and_tools(
    client: anthropic.AsyncAnthropic, sim: Simulator, account: SimAccount
) -> None:
    sim.script(account.id, Behaviour.ok(deltas=4, tool_call=True))
    tools: list[anthropic.types.ToolParam] = [
        {"name": "Read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    ]
    async with client.messages.stream(
        model="claude-opus-4-8",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        tools=tools,
        messages=[{"role": "user", "content": "read it"}],
        extra_headers={
            "anthropic-beta": "interleaved-thinking-2025-05-14",
            "x-claude-code-session-id": "s-9",
        },
    ) as stream:
        text = "".join([chunk async for chunk in stream.text_stream])
        message = await stream.get_final_message()
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[1].type == "text" and message.content[1].text == text
    assert message.stop_reason == "tool_use"
    seen = sim.requests(account_id=account.id, endpoint="claude.messages")[-1]
    assert seen.token == account.access_token and seen.token_kind == "access"
    assert "x-api-key" not in seen.headers and MEMBER_KEY not in json.dumps(seen.headers)
    # CLIENT-1: the SDK is not Claude Code: the call carries SubLane's identity, its betas kept
    betas = "claude-code-20250219,interleaved-thinking-2025-05-14,oauth-2025-04-20"
    assert seen.headers["anthropic-beta"] == betas
    assert seen.headers["x-claude-code-session-id"] == "s-9"
    assert seen.headers["user-agent"].startswith("claude-cli/") and "x-stainless-lang" not in seen.headers
    assert seen.body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert seen.body["tools"] == tools


async def test_non_streaming_and_count_tokens(client: anthropic.AsyncAnthropic) -> None:
    message = await client.messages.create(
        model="claude-sonnet-4-6", max_tokens=256, messages=[{"role": "user", "content": "hello"}]
    )
    assert message.stop_reason == "end_turn" and message.content[0].type == "text"
    assert message.usage.input_tokens > 0
    counted = await client.messages.count_tokens(
        model="claude-sonnet-4-6", messages=[{"role": "user", "content": "hello"}]
    )
    assert counted.input_tokens > 0


async def test_upstream_errors_reach_the_sdk_in_anthropics_shape(
    client: anthropic.AsyncAnthropic, sim: Simulator, account: SimAccount
) -> None:
    sim.script(account.id, Behaviour.error(529))
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        await client.messages.create(
            model="claude-opus-4-8", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
    assert overloaded.value.status_code == 529
    with pytest.raises(anthropic.NotFoundError):
        await client.messages.create(
            model="claude-9", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
