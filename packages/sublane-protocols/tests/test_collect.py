"""``ResponsesCollector`` on captured Codex streams (``fixtures/responses_streams/``).

The Codex backend may leave ``output`` empty in its terminal event and send the items only as
``response.output_item.done`` (PROTOCOLS.md §1.4): the collector back-fills them, keeps a terminal
``output`` that is present, and has no result until a terminal event arrives.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from protocol_fixtures import STREAMS, TERMINAL_EVENTS, stream_events

from sublane_core import WireProtocol
from sublane_protocols import ResponsesCollector, new_collector


def collect(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    collector = ResponsesCollector()
    for event in events:
        collector.feed(event)
    return collector.result()


def done_items(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event["item"] for event in events if event["type"] == "response.output_item.done"]


def terminal(events: list[dict[str, Any]]) -> dict[str, Any]:
    (event,) = [event for event in events if event["type"] in TERMINAL_EVENTS]
    response: dict[str, Any] = event["response"]
    return response


@pytest.mark.parametrize("name", ["reasoning_summary_text", "parallel_function_calls"])
def test_empty_terminal_output_is_back_filled_from_output_item_done(name: str) -> None:
    events = stream_events(name)
    assert terminal(events)["output"] == []  # as the Codex backend sends it
    result = collect(events)
    assert result is not None and result["status"] == "completed"
    assert result["output"] == done_items(events)
    assert [item["type"] for item in result["output"]] == (
        ["reasoning", "message"]
        if name == "reasoning_summary_text"
        else ["reasoning", *["function_call"] * 2]
    )
    assert {key: value for key, value in result.items() if key != "output"} == {
        key: value for key, value in terminal(events).items() if key != "output"
    }


@pytest.mark.parametrize("name", ["plain_text", "incomplete_max_tokens"])
def test_terminal_output_that_is_present_is_kept(name: str) -> None:
    events = stream_events(name)
    final = terminal(events)
    assert final["output"]
    assert collect(events) == final
    # Kept as sent, not rebuilt from the done items: without them the output is still the same.
    without_items = [event for event in events if event["type"] != "response.output_item.done"]
    assert collect(without_items) == final
    # … and not merged with them when they differ.
    edited = copy.deepcopy(events)
    for event in edited:
        if event["type"] == "response.output_item.done":
            event["item"]["content"][0]["text"] = "something else"
    assert collect(edited) == final


def test_incomplete_response_keeps_its_reason() -> None:
    result = collect(stream_events("incomplete_max_tokens"))
    assert result is not None
    assert result["status"] == "incomplete"
    assert result["incomplete_details"] == {"reason": "max_output_tokens"}
    assert result["usage"]["output_tokens"] == 5


def test_response_failed_gives_the_failed_response() -> None:
    events = stream_events("failed_mid_stream")
    result = collect(events)
    assert result == terminal(events)
    assert result["status"] == "failed"
    assert result["error"] == {
        "code": "server_is_overloaded",
        "message": "Our servers are currently overloaded. Please try again later.",
    }
    assert result["output"] == []  # nothing completed before the failure


@pytest.mark.parametrize("name", ["cut_before_terminal", "error_event_mid_stream"])
def test_no_terminal_event_gives_none(name: str) -> None:
    assert collect(stream_events(name)) is None


@pytest.mark.parametrize("name", STREAMS)
def test_no_result_before_the_terminal_event(name: str) -> None:
    events = stream_events(name)
    collector = ResponsesCollector()
    assert collector.result() is None
    for event in events:
        if event["type"] in TERMINAL_EVENTS:
            break
        collector.feed(event)
        assert collector.result() is None


@pytest.mark.parametrize("name", STREAMS)
def test_result_can_be_read_twice(name: str) -> None:
    collector = ResponsesCollector()
    for event in stream_events(name):
        collector.feed(event)
    assert collector.result() == collector.result()


def test_websocket_prewarm_completes_with_no_output() -> None:
    # generate:false (Codex WebSocket prewarm): created, then completed with nothing in between.
    created = stream_events("plain_text")[0]
    prewarm = [
        created,
        {"type": "response.completed", "response": dict(created["response"], status="completed")},
    ]
    result = collect(prewarm)
    assert result is not None
    assert result["status"] == "completed" and result["output"] == []


def test_malformed_events_are_ignored() -> None:
    events = stream_events("reasoning_summary_text")
    noisy: list[dict[str, Any]] = [
        {"type": "response.output_item.done", "output_index": 9},  # no item
        {"type": "codex.rate_limits", "plan_type": "plus"},  # a WebSocket extra
        {},
        *events,
    ]
    result = collect(noisy)
    assert result is not None and result["output"] == done_items(events)
    assert collect([{"type": "response.completed", "response": "not an object"}]) is None


def test_the_responses_collector_is_registered_for_responses_streams() -> None:
    first, second = new_collector(WireProtocol.RESPONSES), new_collector(WireProtocol.RESPONSES)
    assert isinstance(first, ResponsesCollector) and first is not second
    for event in stream_events("reasoning_summary_text"):
        first.feed(event)
    assert first.result() == collect(stream_events("reasoning_summary_text"))
    assert second.result() is None  # a fresh collector per stream


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_fed_only_the_events_it_wants_the_collector_gives_the_same_answer(name: str) -> None:
    """The gateway decodes only what the collector wants (issue #19): deltas are skipped."""
    events = stream_events(name)
    wanting = ResponsesCollector()
    for event in events:
        if wanting.wants(event["type"]):
            wanting.feed(event)
    assert wanting.result() == collect(events)
    assert not wanting.wants("response.output_text.delta") and wanting.wants(None)
