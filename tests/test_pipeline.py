"""The request pipeline without a web server: a principal in, a reply out (``pipeline.serve_call``).

The database, accounts and key are set up through a running gateway (as an admin would); each test
then builds its own runtime on the test's event loop and calls the pipeline directly, against the
real simulator over loopback HTTP.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from gateway_pool import Pool

from sublane_core import UpstreamOperation, WireProtocol, signals
from sublane_gateway.pipeline import (
    CallSpec,
    ClientRuntime,
    JsonReply,
    Principal,
    StreamReply,
    build_runtime,
    serve_call,
    serving_providers,
    split_model,
)
from sublane_sim import Behaviour, parse_sse

RESPONSES_BODY = {"model": "gpt-5-codex", "input": "say hi", "store": False}
MESSAGES_BODY = {
    "model": "claude-haiku-4-5-20251001",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
}


@asynccontextmanager
async def pipeline_of(pool: Pool) -> AsyncIterator[tuple[ClientRuntime, Principal]]:
    """A runtime of its own on this loop, over the pool's database, and the pool key's principal."""
    state = pool.gateway.app.state.gateway
    runtime = build_runtime(state.settings, state.engine, state.cipher, state.clock)
    await runtime.start()
    try:
        principal = await runtime.keys.authenticate({"authorization": f"Bearer {pool.key}"})
        yield runtime, principal
    finally:
        await runtime.close()


def spec(protocol: WireProtocol, body: dict[str, Any], **fields: Any) -> CallSpec:
    defaults: dict[str, Any] = {
        "record_protocol": str(protocol),
        "record_operation": "test",
        "headers": {},
    }
    return CallSpec(protocol=protocol, body=body, **(defaults | fields))


async def read_stream(reply: StreamReply) -> str:
    return b"".join([chunk async for chunk in reply.chunks]).decode()


def test_split_model_takes_only_registered_prefixes_off() -> None:
    adapters = {"codex": object(), "claude": object()}
    assert split_model("codex/gpt-5", adapters) == ("codex", "gpt-5")
    assert split_model("openai/gpt-5", adapters) == (None, "openai/gpt-5")
    assert split_model("codex/", adapters) == (None, "codex/")


async def test_serving_providers_follow_protocol_translators_and_operations(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=0)
    async with pipeline_of(pool) as (runtime, _principal):
        adapters = runtime.adapters
        # XLAT-1: every upstream, the native ones first (PAID-1: the metered openai speaks Responses)
        every = ("codex", "openai", "claude", "antigravity")
        assert serving_providers(adapters, WireProtocol.RESPONSES, UpstreamOperation.STREAM, None) == every
        assert (
            serving_providers(adapters, WireProtocol.CHAT_COMPLETIONS, UpstreamOperation.JSON, None) == every
        )
        assert serving_providers(adapters, WireProtocol.MESSAGES, UpstreamOperation.STREAM, None) == (
            "claude",
            "codex",
            "antigravity",
            "openai",
        )
        # counting: Claude's own, Codex and openai estimated, Antigravity's countTokens
        assert serving_providers(adapters, WireProtocol.MESSAGES, UpstreamOperation.COUNT_TOKENS, None) == (
            "claude",
            "codex",
            "antigravity",
            "openai",
        )
        # compaction is Codex's own state: never translated; a prefix narrows to that provider alone
        assert serving_providers(adapters, WireProtocol.MESSAGES, UpstreamOperation.COMPACT, None) == ()
        assert serving_providers(adapters, WireProtocol.MESSAGES, UpstreamOperation.STREAM, "codex") == (
            "codex",
        )


async def test_responses_stream_passes_through_and_releases_once(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    async with pipeline_of(pool) as (runtime, principal):
        seen: list[signals.RequestFinished] = []
        disconnect = signals.request_finished.connect(seen.append, sender=runtime)
        try:
            reply = await serve_call(
                runtime, principal, spec(WireProtocol.RESPONSES, dict(RESPONSES_BODY, stream=True))
            )
            assert isinstance(reply, StreamReply)
            text = await read_stream(reply)
        finally:
            disconnect()
        types = [event.data.get("type") for event in parse_sse(text)]
        assert types[0] == "response.created" and types[-1] == "response.completed"
        assert runtime.leases.total_in_flight() == 0
        assert runtime.leases.acquired_total == runtime.leases.released_total == 1
        # the record went to this runtime's observers only, and names the account's provider
        assert [record.request_id for record in seen] == [reply.headers["x-request-id"]]
        assert seen[0].provider == "codex" and seen[0].outcome == "success"


async def test_responses_json_is_collected_from_the_stream(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    async with pipeline_of(pool) as (runtime, principal):
        reply = await serve_call(runtime, principal, spec(WireProtocol.RESPONSES, dict(RESPONSES_BODY)))
        assert isinstance(reply, JsonReply) and reply.status == 200
        answer = reply.json()
        assert answer["status"] == "completed" and answer["output"]
        assert reply.headers["x-request-id"].startswith("req_")


async def test_a_runtime_sends_call_events_through_the_receiver_cache(make_pool: Callable[..., Pool]) -> None:
    """The runtime is every call's signal sender: it can be held weakly, so the receivers it reaches
    are found once, not on every send (issue #19)."""
    pool = make_pool()
    async with pipeline_of(pool) as (runtime, principal):
        for _ in range(2):
            reply = await serve_call(runtime, principal, spec(WireProtocol.RESPONSES, dict(RESPONSES_BODY)))
            assert isinstance(reply, JsonReply) and reply.status == 200
        assert runtime in signals.request_finished._by_sender  # held weakly, by the runtime itself


async def test_chat_is_translated_to_responses_and_back(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    body = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with pipeline_of(pool) as (runtime, principal):
        reply = await serve_call(runtime, principal, spec(WireProtocol.CHAT_COMPLETIONS, body))
        assert isinstance(reply, StreamReply)
        text = await read_stream(reply)
    frames = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(frame) for frame in frames[:-1]]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_a_chat_body_that_cannot_be_translated_is_refused_before_any_slot(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    body = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}], "n": 3}
    async with pipeline_of(pool) as (runtime, principal):
        reply = await serve_call(runtime, principal, spec(WireProtocol.CHAT_COMPLETIONS, body))
        assert isinstance(reply, JsonReply) and reply.status == 400
        assert reply.json()["error"]["param"] == "n"
        assert runtime.leases.acquired_total == 0


async def test_messages_json_passes_through_with_anthropic_request_id_headers(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(provider="claude")
    async with pipeline_of(pool) as (runtime, principal):
        reply = await serve_call(runtime, principal, spec(WireProtocol.MESSAGES, dict(MESSAGES_BODY)))
        assert isinstance(reply, JsonReply) and reply.status == 200
        assert reply.json()["type"] == "message"
        assert reply.headers["request-id"] == reply.headers["x-request-id"]


async def test_an_upstream_refusal_is_answered_in_the_client_shape_and_cools_nothing_twice(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(provider="claude")
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(429, retry_after="7"))
    async with pipeline_of(pool) as (runtime, principal):
        reply = await serve_call(runtime, principal, spec(WireProtocol.MESSAGES, dict(MESSAGES_BODY)))
        assert isinstance(reply, JsonReply) and reply.status == 429
        assert reply.json()["error"]["code"] == "upstream_rate_limited"
        assert reply.headers["retry-after"] == "7"
        # the grant told the scheduler directly: the account cools, and the slot is back
        assert runtime.scheduler.cooldowns.blocking(pool.account_ids[0], MESSAGES_BODY["model"]) is not None
        assert runtime.leases.total_in_flight() == 0


async def test_a_model_on_no_reachable_provider_is_not_found_in_the_client_shape(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    async with pipeline_of(pool) as (runtime, principal):
        reply = await serve_call(
            runtime, principal, spec(WireProtocol.MESSAGES, dict(MESSAGES_BODY, model="codex/gpt-99"))
        )
        assert isinstance(reply, JsonReply) and reply.status == 404
        body = reply.json()
        assert body["type"] == "error" and body["error"]["code"] == "model_not_found"
