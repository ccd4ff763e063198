"""Reading Claude Messages streams: first output, token mapping, terminal outcomes, errors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sublane_provider_claude import ClaudeAdapter, ClaudeStreamObserver, usage_of_message
from sublane_providers import (
    DeltaKind,
    Outcome,
    SseFramer,
    TokenUsage,
    encode_event,
    parse_event,
    stream_request,
)
from sublane_providers.testing import as_httpx
from sublane_sim import Behaviour, Simulator

START_USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 5000,
    "output_tokens": 1,
}


def event(name: str, **data: Any) -> tuple[str, str]:
    return name, json.dumps({"type": name, **data})


def message_start(usage: dict[str, Any] | None = None) -> tuple[str, str]:
    message: dict[str, Any] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": None,
    }
    message["usage"] = START_USAGE if usage is None else usage
    return event("message_start", message=message)


def delta(kind: str, **fields: Any) -> tuple[str, str]:
    return event("content_block_delta", index=0, delta={"type": kind, **fields})


def message_delta(stop_reason: str, **usage: Any) -> tuple[str, str]:
    return event("message_delta", delta={"stop_reason": stop_reason, "stop_sequence": None}, usage=usage)


def run(*events: tuple[str, str]) -> ClaudeStreamObserver:
    observer = ClaudeStreamObserver()
    for name, data in events:
        observer.observe(name, data)
    return observer


def test_a_complete_stream() -> None:
    observer = run(
        message_start(),
        event("ping"),
        event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        delta("text_delta", text="Hel"),
        delta("text_delta", text="lo"),
        event("content_block_stop", index=0),
        message_delta("end_turn", output_tokens=42),
        event("message_stop"),
    )
    state = observer.state
    assert state.response_id == "msg_01"
    assert state.first_delta is DeltaKind.TEXT
    assert state.outcome is Outcome.SUCCESS and state.error_code is None
    # HIST: prompt = input + cache reads + cache writes; cached = cache reads.
    assert state.usage == TokenUsage(
        input_tokens=5312, output_tokens=42, cached_tokens=5000, cache_write_tokens=300
    )
    assert state.events == 8
    assert observer.stop_reason == "end_turn"


def test_input_usage_is_known_from_message_start_and_output_only_from_message_delta() -> None:
    observer = run(message_start())
    assert observer.state.usage == TokenUsage(
        input_tokens=5312, output_tokens=None, cached_tokens=5000, cache_write_tokens=300
    )
    assert not observer.state.finished


def test_message_delta_repeating_input_counts_wins() -> None:
    observer = run(
        message_start(),
        message_delta(
            "end_turn",
            input_tokens=20,
            cache_creation_input_tokens=0,
            cache_read_input_tokens=5300,
            output_tokens=7,
        ),
        event("message_stop"),
    )
    assert observer.state.usage == TokenUsage(
        input_tokens=5320, output_tokens=7, cached_tokens=5300, cache_write_tokens=0
    )


def test_usage_without_cache_fields() -> None:
    observer = run(
        message_start({"input_tokens": 9, "output_tokens": 1}), message_delta("end_turn", output_tokens=3)
    )
    assert observer.state.usage == TokenUsage(input_tokens=9, output_tokens=3, cached_tokens=None)


def test_max_tokens_is_incomplete() -> None:
    observer = run(
        message_start(), delta("text_delta", text="x"), message_delta("max_tokens", output_tokens=64)
    )
    assert observer.state.outcome is None  # not until message_stop
    observer.observe(*event("message_stop"))
    assert observer.state.outcome is Outcome.INCOMPLETE


@pytest.mark.parametrize("reason", ["end_turn", "tool_use", "stop_sequence", "pause_turn", "refusal"])
def test_other_stop_reasons_are_success(reason: str) -> None:
    assert run(message_delta(reason, output_tokens=1), event("message_stop")).state.outcome is Outcome.SUCCESS


def test_in_stream_overload_is_an_error_with_its_type() -> None:
    observer = run(
        message_start(),
        delta("text_delta", text="partial"),
        (
            "error",
            json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    )
    state = observer.state
    assert state.outcome is Outcome.ERROR
    assert state.error_code == "overloaded_error" and state.error_message == "Overloaded"
    assert state.first_delta is DeltaKind.TEXT
    assert state.usage is not None and state.usage.output_tokens is None


def test_an_error_event_without_details_still_ends_in_error() -> None:
    state = run(("error", '{"type":"error"}')).state
    assert state.outcome is Outcome.ERROR and state.error_code == "upstream_error"


def test_a_stream_cut_before_message_stop_has_no_outcome() -> None:
    observer = run(message_start(), delta("text_delta", text="a"), message_delta("end_turn", output_tokens=2))
    assert observer.state.outcome is None


@pytest.mark.parametrize(
    ("events", "kind"),
    [
        ([delta("thinking_delta", thinking="hmm"), delta("text_delta", text="a")], DeltaKind.REASONING),
        (
            [delta("input_json_delta", partial_json=""), delta("input_json_delta", partial_json='{"a"')],
            DeltaKind.TOOL_ARGUMENTS,
        ),
        ([delta("signature_delta", signature="EqSig"), delta("text_delta", text="")], None),
        ([delta("text_delta", text=""), delta("thinking_delta", thinking="x")], DeltaKind.REASONING),
        ([delta("citations_delta", citation={}), delta("text_delta", text="t")], DeltaKind.TEXT),
    ],
)
def test_first_output_is_the_first_non_empty_delta(
    events: list[tuple[str, str]], kind: DeltaKind | None
) -> None:
    assert run(message_start(), *events).state.first_delta is kind


def test_deltas_after_the_first_output_and_pings_are_not_decoded() -> None:
    observer = ClaudeStreamObserver()
    assert observer.wants("content_block_delta")
    assert not observer.wants("ping")
    assert not observer.wants("content_block_start") and not observer.wants("content_block_stop")
    assert observer.wants("message_start") and observer.wants("message_delta")
    assert observer.wants("message_stop") and observer.wants("error") and observer.wants(None)
    observer.observe(*delta("text_delta", text="a"))
    assert not observer.wants("content_block_delta")
    assert observer.observe("content_block_delta", "{not json") is None  # skipped, never parsed
    assert observer.observe("ping", '{"type":"ping"}') is None
    assert observer.state.events == 3


def test_unnamed_events_are_read_by_their_type() -> None:
    observer = ClaudeStreamObserver()
    for _name, data in (
        message_start(),
        delta("text_delta", text="a"),
        message_delta("end_turn", output_tokens=2),
    ):
        observer.observe(None, data)
    observer.observe(None, '{"type":"message_stop"}')
    assert observer.state.outcome is Outcome.SUCCESS and observer.state.first_delta is DeltaKind.TEXT


def test_garbage_is_ignored() -> None:
    observer = run(
        ("message_start", "not json"),
        ("message_start", "[1]"),
        ("message_delta", '{"type":"message_delta","usage":{"output_tokens":-1}}'),
    )
    assert observer.state.usage is None and observer.state.response_id is None


def test_usage_of_message() -> None:
    message = {"type": "message", "usage": dict(START_USAGE, output_tokens=77)}
    assert usage_of_message(message) == TokenUsage(
        input_tokens=5312, output_tokens=77, cached_tokens=5000, cache_write_tokens=300
    )
    assert usage_of_message({"type": "message"}) is None
    assert usage_of_message("nope") is None


def test_observe_message() -> None:
    observer = ClaudeStreamObserver()
    observer.observe_message(
        {"id": "msg_9", "type": "message", "stop_reason": "max_tokens", "usage": START_USAGE}
    )
    assert observer.state.outcome is Outcome.INCOMPLETE and observer.state.response_id == "msg_9"
    assert observer.state.usage == TokenUsage(
        input_tokens=5312, output_tokens=1, cached_tokens=5000, cache_write_tokens=300
    )
    failed = ClaudeStreamObserver()
    failed.observe_message({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert failed.state.outcome is Outcome.ERROR and failed.state.error_code == "overloaded_error"


def test_encoded_events_round_trip_through_the_framer() -> None:
    wire = b"".join(
        encode_event(data, name) for name, data in (message_start(), delta("text_delta", text="hi"))
    )
    wire += b'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n'
    observer = ClaudeStreamObserver()
    framer = SseFramer()
    for index in range(0, len(wire), 7):  # arbitrary chunk boundaries
        for block in framer.feed(wire[index : index + 7]):
            parsed = parse_event(block)
            observer.observe(parsed.name, parsed.data)
    assert observer.state.outcome is Outcome.SUCCESS and observer.state.first_delta is DeltaKind.TEXT


# -- against the simulator's real streams ---------------------------------------------------------


async def observe_sim(sim: Simulator, behaviour: Behaviour, **extra: Any) -> ClaudeStreamObserver:
    account = sim.create_account("claude")
    sim.script(account.id, behaviour)
    body = {"model": "claude-sonnet-4-6", "max_tokens": 512, "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(timeout=10) as http:
        adapter = ClaudeAdapter(
            base_url=sim.claude_base_url, auth_url=sim.claude_auth_url, http=http, metadata_timeout=5
        )
        bundle = adapter.parse_credentials(account.credentials).bundle
        observer = adapter.new_observer()
        framer = SseFramer()
        response = await http.send(
            as_httpx(http, stream_request(adapter, bundle, dict(body, **extra), {}, bound=False)), stream=True
        )
        try:
            assert response.status_code == 200
            async for chunk in response.aiter_raw():
                for block in framer.feed(chunk):
                    parsed = parse_event(block)
                    observer.observe(parsed.name, parsed.data)
        finally:
            await response.aclose()
    return observer


async def test_sim_thinking_comes_first(sim: Simulator) -> None:
    observer = await observe_sim(
        sim, Behaviour.ok(deltas=3), thinking={"type": "enabled", "budget_tokens": 1024}
    )
    state = observer.state
    assert state.first_delta is DeltaKind.REASONING and state.outcome is Outcome.SUCCESS
    assert state.usage is not None and state.usage.output_tokens == 5  # 3 text + 2 thinking deltas
    assert state.response_id is not None and state.response_id.startswith("msg_")


async def test_sim_scripted_token_counts_map_cache_reads_and_writes(sim: Simulator) -> None:
    observer = await observe_sim(sim, Behaviour.ok(input_tokens=1000, cached_tokens=600, output_tokens=33))
    assert observer.state.usage == TokenUsage(
        input_tokens=1000, output_tokens=33, cached_tokens=600, cache_write_tokens=0, cache_write_1h_tokens=0
    )


def test_cost_2_cache_writes_and_their_one_hour_part_are_read() -> None:
    usage = dict(
        START_USAGE, cache_creation={"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200}
    )
    observer = run(message_start(usage), message_delta("end_turn", output_tokens=5), event("message_stop"))
    assert observer.state.usage == TokenUsage(
        input_tokens=5312,
        output_tokens=5,
        cached_tokens=5000,
        cache_write_tokens=300,
        cache_write_1h_tokens=200,
    )


async def test_sim_cache_write_counts_as_input(sim: Simulator) -> None:
    observer = await observe_sim(sim, Behaviour.ok(input_tokens=1000))
    usage = observer.state.usage
    assert usage is not None and usage.input_tokens == 1000 and usage.cached_tokens == 0


async def test_sim_max_tokens_is_incomplete(sim: Simulator) -> None:
    observer = await observe_sim(sim, Behaviour(kind="incomplete"))
    assert observer.state.outcome is Outcome.INCOMPLETE and observer.stop_reason == "max_tokens"


async def test_sim_overload_after_output_is_an_error(sim: Simulator) -> None:
    observer = await observe_sim(sim, Behaviour.overload(after_deltas=2))
    state = observer.state
    assert state.outcome is Outcome.ERROR and state.error_code == "overloaded_error"
    assert state.first_delta is DeltaKind.TEXT


async def test_sim_tool_call_only_after_empty_text_counts_as_tool_arguments(sim: Simulator) -> None:
    # The simulator always opens a text block; an empty text cannot be first output.
    observer = await observe_sim(sim, Behaviour.ok(text="", deltas=1, tool_call=True))
    assert observer.state.first_delta is DeltaKind.TOOL_ARGUMENTS
    assert observer.stop_reason == "tool_use" and observer.state.outcome is Outcome.SUCCESS


def test_observe_payload_keeps_the_first_output_kind() -> None:
    # Callers that decode every event themselves (non-streaming aggregation) use observe_payload.
    observer = ClaudeStreamObserver()
    for _name, data in (delta("text_delta", text="a"), delta("thinking_delta", thinking="b")):
        observer.observe_payload(json.loads(data))
    assert observer.state.first_delta is DeltaKind.TEXT
