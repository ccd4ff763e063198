"""What Anthropic's Messages API is known to answer (CLIENT-7): its stream events, the fields of a
message and of an error, its error types (PROTOCOLS §2.4–2.6; ``safeguard_results`` of Claude
Code's server-side checks, CLIENT-4). Anything else is relayed as before and reported."""

from __future__ import annotations

from sublane_providers import UpstreamVocabulary

_of = UpstreamVocabulary.of

EVENTS = _of(
    "message_start", "message_delta", "message_stop", "content_block_start", "content_block_delta",
    "content_block_stop", "ping", "error",
)  # fmt: skip

#: A ``message`` object, and an error body (``type: "error"``).
ANSWER_FIELDS = _of(
    "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "stop_details", "usage",
    "container", "context_management", "safeguard_results", "error", "request_id",
)  # fmt: skip

#: ``message_stop`` (or ``message_delta``) and an ``error`` event.
TERMINAL_FIELDS = _of(
    "type", "delta", "usage", "context_management", "safeguard_results", "error", "request_id"
)

#: Anthropic's error types (``error.type``), CLIENT-3's version refusal among them.
ERROR_CODES = _of(
    "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
    "request_too_large", "rate_limit_error", "api_error", "overloaded_error", "timeout_error",
    "billing_error", "claude_code_version_too_old", "upstream_error",
)  # fmt: skip

VOCABULARY = UpstreamVocabulary(
    events=EVENTS, answer_fields=ANSWER_FIELDS, terminal_fields=TERMINAL_FIELDS, error_codes=ERROR_CODES
)
