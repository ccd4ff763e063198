"""What the public APIs behind SubLane's protocols are known to answer (CLIENT-7), written once.

A subscription backend and a metered API that speak the same public API share its vocabulary; each
provider builds its own :class:`~sublane_providers.UpstreamVocabulary` from one of these and adds
what only its upstream answers (:meth:`UpstreamVocabulary.adding`). The lists follow the public
API references (and PROTOCOLS.md): OpenAI's Responses API, Anthropic's Messages API and OpenAI's
Chat Completions reference — the latter's fields only, since compatible servers vary and anything
beyond the reference is worth an operator's look. ``upstream_error`` is what the kit's stream
observers report for an error naming no code.
"""

from __future__ import annotations

from typing import Final

from sublane_providers._vocabulary import UpstreamVocabulary

_of = UpstreamVocabulary.of

#: The code the kit's observers report for an error event that names none.
_OBSERVER_CODES = _of("upstream_error")

# -- OpenAI Responses ------------------------------------------------------------------------------

#: The Responses API's public streaming events.
_RESPONSES_EVENTS = _of(
    "response.created", "response.in_progress", "response.queued", "response.completed",
    "response.incomplete", "response.failed", "error",
    "response.output_item.added", "response.output_item.done",
    "response.content_part.added", "response.content_part.done",
    "response.output_text.delta", "response.output_text.done", "response.output_text.annotation.added",
    "response.refusal.delta", "response.refusal.done",
    "response.function_call_arguments.delta", "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done",
    "response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
    "response.reasoning_text.delta", "response.reasoning_text.done",
    "response.audio.delta", "response.audio.done",
    "response.audio.transcript.delta", "response.audio.transcript.done",
    "response.web_search_call.in_progress", "response.web_search_call.searching",
    "response.web_search_call.completed",
    "response.file_search_call.in_progress", "response.file_search_call.searching",
    "response.file_search_call.completed",
    "response.image_generation_call.in_progress", "response.image_generation_call.generating",
    "response.image_generation_call.partial_image", "response.image_generation_call.completed",
    "response.code_interpreter_call.in_progress", "response.code_interpreter_call.interpreting",
    "response.code_interpreter_call.completed", "response.code_interpreter_call_code.delta",
    "response.code_interpreter_call_code.done",
    "response.mcp_call.in_progress", "response.mcp_call.completed", "response.mcp_call.failed",
    "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
    "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed",
    "response.mcp_list_tools.failed",
)  # fmt: skip

#: A ``response`` object, and a compaction answer (``output`` and ``usage``).
_RESPONSES_ANSWER_FIELDS = _of(
    "id", "object", "created_at", "completed_at", "status", "background", "billing", "conversation",
    "error", "incomplete_details", "instructions", "max_output_tokens", "max_tool_calls", "model",
    "output", "output_text", "parallel_tool_calls", "previous_response_id", "prompt",
    "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier",
    "store", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p", "truncation",
    "usage", "user", "metadata",
)  # fmt: skip

#: ``response.completed``/``incomplete``/``failed`` and a top-level ``error`` event.
_RESPONSES_TERMINAL_FIELDS = _of("type", "sequence_number", "response", "code", "message", "param", "error")

#: The API's error codes and types (an error answer's ``code``, else its ``type``), and the codes
#: of a failed response's ``error`` (the reference's ``ResponseError`` codes).
_RESPONSES_ERROR_CODES = _of(
    "invalid_request_error", "invalid_api_key", "invalid_prompt", "invalid_value",
    "context_length_exceeded", "model_not_found", "not_found", "rate_limit_exceeded",
    "rate_limit_error", "insufficient_quota", "authentication_error", "permission_error",
    "unsupported_country_region_territory", "request_forbidden", "server_error",
    "server_is_overloaded", "service_unavailable_error", "timeout",
    "vector_store_timeout", "invalid_image", "invalid_image_format", "invalid_base64_image",
    "invalid_image_url", "image_too_large", "image_too_small", "image_parse_error",
    "image_content_policy_violation", "invalid_image_mode", "image_file_too_large",
    "unsupported_image_media_type", "empty_image_file", "failed_to_download_image", "image_file_not_found",
)  # fmt: skip

#: OpenAI's Responses API: its streaming events, response object, terminal events, error codes.
RESPONSES_VOCABULARY: Final = UpstreamVocabulary(
    _RESPONSES_EVENTS,
    _RESPONSES_ANSWER_FIELDS,
    _RESPONSES_TERMINAL_FIELDS,
    _RESPONSES_ERROR_CODES | _OBSERVER_CODES,
)

# -- Anthropic Messages ----------------------------------------------------------------------------

_MESSAGES_EVENTS = _of(
    "message_start", "message_delta", "message_stop", "content_block_start", "content_block_delta",
    "content_block_stop", "ping", "error",
)  # fmt: skip

#: A ``message`` object, and an error body (``type: "error"``).
_MESSAGES_ANSWER_FIELDS = _of(
    "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "stop_details", "usage",
    "container", "context_management", "error", "request_id",
)  # fmt: skip

#: ``message_stop`` (or ``message_delta``) and an ``error`` event.
_MESSAGES_TERMINAL_FIELDS = _of("type", "delta", "usage", "context_management", "error", "request_id")

#: The API's error types (``error.type``); ``billing_error`` is its 402 of an account without credit.
_MESSAGES_ERROR_CODES = _of(
    "invalid_request_error", "authentication_error", "billing_error", "permission_error", "not_found_error",
    "request_too_large", "rate_limit_error", "api_error", "overloaded_error", "timeout_error",
)  # fmt: skip

#: Anthropic's Messages API: its stream events, message object, terminal events, error types.
MESSAGES_VOCABULARY: Final = UpstreamVocabulary(
    _MESSAGES_EVENTS,
    _MESSAGES_ANSWER_FIELDS,
    _MESSAGES_TERMINAL_FIELDS,
    _MESSAGES_ERROR_CODES | _OBSERVER_CODES,
)

# -- OpenAI Chat Completions -----------------------------------------------------------------------

#: A ``chat.completion`` answer and a ``chat.completion.chunk`` (its last: the finish reason or the
#: usage); ``obfuscation`` is what ``stream_options.include_obfuscation`` adds to a chunk; ``error``
#: an error in place of a chunk.
_CHAT_FIELDS = _of(
    "id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier",
    "obfuscation", "error",
)  # fmt: skip

#: OpenAI's error codes and types, and the exception names OpenAI-style servers give as the
#: ``type`` (vLLM and its kin: ``{"error": {"type": "BadRequestError", "code": 400}}``).
_CHAT_ERROR_CODES = _of(
    "invalid_request_error", "invalid_api_key", "invalid_value", "context_length_exceeded",
    "model_not_found", "rate_limit_exceeded", "insufficient_quota", "authentication_error",
    "permission_error", "not_found_error", "server_error", "server_is_overloaded",
    "BadRequestError", "AuthenticationError", "PermissionDeniedError", "NotFoundError",
    "RateLimitError", "InternalServerError", "ServiceUnavailableError",
)  # fmt: skip

CHAT_COMPLETIONS_VOCABULARY: Final = UpstreamVocabulary(
    events=frozenset(),  # chunks are unnamed ``data:`` lines: a named event is news
    answer_fields=_CHAT_FIELDS,
    terminal_fields=_CHAT_FIELDS,
    error_codes=_CHAT_ERROR_CODES | _OBSERVER_CODES,
)
"""OpenAI's Chat Completions reference: its answer and chunk fields, its error codes."""
