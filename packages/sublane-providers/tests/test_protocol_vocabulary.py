"""CLIENT-7: the public APIs' vocabularies, written once, and a provider's additions to one."""

from __future__ import annotations

from sublane_providers import (
    CHAT_COMPLETIONS_VOCABULARY,
    MESSAGES_VOCABULARY,
    RESPONSES_VOCABULARY,
    UpstreamVocabulary,
)
from sublane_providers.kit import classify_api_failure

NOW = 1_800_000_000.0


def test_client_7_a_provider_adds_its_names_to_a_public_vocabulary() -> None:
    base = UpstreamVocabulary(events=frozenset({"a"}), error_codes=frozenset({"x"}))
    added = base.adding(events=("b",), answer_fields=("f",), error_codes=("y",), models=("m",))
    assert added.events == {"a", "b"} and added.error_codes == {"x", "y"}
    assert added.answer_fields == {"f"} and added.models == {"m"} and added.terminal_fields == frozenset()
    assert base.events == {"a"}  # the shared vocabulary is left as it was


def test_client_7_public_vocabularies_know_what_the_kit_reports_for_their_usual_refusals() -> None:
    """An error answer of each API, classified by the kit, gives a code its vocabulary knows."""
    answers = [
        (RESPONSES_VOCABULARY, 429, b'{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}'),
        (RESPONSES_VOCABULARY, 400, b'{"error":{"type":"invalid_request_error","code":null}}'),
        (MESSAGES_VOCABULARY, 402, b'{"type":"error","error":{"type":"billing_error","message":"no"}}'),
        (MESSAGES_VOCABULARY, 529, b'{"type":"error","error":{"type":"overloaded_error","message":"o"}}'),
        (CHAT_COMPLETIONS_VOCABULARY, 429, b'{"error":{"type":"RateLimitError","code":429}}'),
    ]
    for vocabulary, status, body in answers:
        assert classify_api_failure(status, {}, body, NOW).code in vocabulary.error_codes, body
    for vocabulary in (RESPONSES_VOCABULARY, MESSAGES_VOCABULARY, CHAT_COMPLETIONS_VOCABULARY):
        assert "upstream_error" in vocabulary.error_codes  # what the kit's observers report for none
    assert CHAT_COMPLETIONS_VOCABULARY.events == frozenset()  # unnamed chunks: a named event is news
