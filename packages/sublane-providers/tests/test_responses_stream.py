"""The shared Responses stream observer: what any upstream speaking Responses reports."""

from __future__ import annotations

from sublane_providers import DeltaKind, Outcome
from sublane_providers.kit import ResponsesStreamObserver

USAGE = {"input_tokens": 7, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 2}}


def test_a_stream_gives_its_first_delta_id_usage_and_outcome() -> None:
    observer = ResponsesStreamObserver()
    observer.observe("response.created", '{"type":"response.created","response":{"id":"resp_1"}}')
    observer.observe("response.output_text.delta", '{"type":"response.output_text.delta","delta":"hi"}')
    observer.observe("response.output_text.delta", "not even json: never decoded once a delta was seen")
    observer.observe_payload({"type": "response.completed", "response": {"usage": USAGE}})
    state = observer.state
    assert (state.response_id, state.first_delta, state.outcome) == (
        "resp_1",
        DeltaKind.TEXT,
        Outcome.SUCCESS,
    )
    assert state.usage is not None and (state.usage.input_tokens, state.usage.cached_tokens) == (7, 2)
    assert state.events == 3


def test_a_whole_response_object_gives_its_outcome() -> None:
    for status, outcome in (("completed", Outcome.SUCCESS), ("incomplete", Outcome.INCOMPLETE)):
        observer = ResponsesStreamObserver()
        observer.observe_answer({"object": "response", "id": "resp_2", "status": status, "usage": USAGE})
        assert (observer.state.outcome, observer.state.response_id) == (outcome, "resp_2")
    failed = ResponsesStreamObserver()
    error = {"code": "server_error", "message": "boom"}
    failed.observe_answer({"object": "response", "status": "failed", "error": error})
    assert (failed.state.outcome, failed.state.error_code) == (Outcome.ERROR, "server_error")


def test_a_compaction_answer_gives_usage_and_leaves_the_outcome_to_its_status_code() -> None:
    observer = ResponsesStreamObserver()
    observer.observe_answer({"object": "response.compaction", "output": [], "usage": USAGE})
    assert observer.state.outcome is None and observer.state.usage is not None
