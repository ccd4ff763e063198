"""What the Codex backend is known to answer (CLIENT-7): its Responses events, the fields of its
answers and terminal events, its error codes (PROTOCOLS §1.4, §1.5). Anything else it sends is
relayed as before and reported as an upstream change."""

from __future__ import annotations

from sublane_providers import UpstreamVocabulary

_of = UpstreamVocabulary.of

#: OpenAI Responses streaming events (the public API reference) and the Codex backend's own.
EVENTS = _of(
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
    "codex.rate_limits", "codex.response.metadata", "response.processed",
)  # fmt: skip

#: A Responses ``response`` object, and a compaction answer (``output`` and ``usage``).
ANSWER_FIELDS = _of(
    "id", "object", "created_at", "completed_at", "status", "background", "billing", "conversation",
    "error", "incomplete_details", "instructions", "max_output_tokens", "max_tool_calls", "model",
    "output", "output_text", "parallel_tool_calls", "previous_response_id", "prompt",
    "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier",
    "store", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p", "truncation",
    "usage", "user", "metadata",
)  # fmt: skip

#: ``response.completed``/``incomplete``/``failed`` and a top-level ``error`` event.
TERMINAL_FIELDS = _of("type", "sequence_number", "response", "code", "message", "param", "error")

#: The codes :func:`classify_failure` and a stream's error event report (PROTOCOLS §1.5).
ERROR_CODES = _of(
    "usage_limit_reached", "usage_not_included", "rate_limit_exceeded", "rate_limit_error",
    "server_is_overloaded", "server_error", "service_unavailable_error", "timeout",
    "invalid_request_error", "invalid_prompt", "context_length_exceeded", "model_not_found",
    "unsupported_model", "insufficient_quota", "token_expired", "token_invalidated", "invalid_token",
    "authentication_error", "permission_error", "upstream_error", "invalid_value", "not_found",
)  # fmt: skip

VOCABULARY = UpstreamVocabulary(
    events=EVENTS, answer_fields=ANSWER_FIELDS, terminal_fields=TERMINAL_FIELDS, error_codes=ERROR_CODES
)
