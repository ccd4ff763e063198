"""Names that several packages share: the wire protocols, upstream operations and call outcomes.

They live in core because both sides of the provider boundary speak them: an adapter says which
protocol its upstream speaks (``sublane-providers``), the translators are keyed by protocol pairs
(``sublane-protocols``), and records store outcomes (``sublane-history``).
"""

from __future__ import annotations

from enum import StrEnum


class WireProtocol(StrEnum):
    """A request/response protocol, spoken by a client or by an upstream."""

    RESPONSES = "responses"  # OpenAI Responses (HTTP JSON, SSE, WebSocket)
    CHAT_COMPLETIONS = "chat_completions"  # OpenAI Chat Completions
    MESSAGES = "messages"  # Anthropic Messages
    GEMINI = "gemini"  # Google Gemini generateContent (the Antigravity wrapper upstream)


class UpstreamOperation(StrEnum):
    """What a call asks of an upstream."""

    STREAM = "stream"  # an inference answered as an event stream
    JSON = "json"  # an inference answered as one JSON object
    COMPACT = "compact"  # remote compaction of a conversation (Responses)
    COUNT_TOKENS = "count_tokens"  # a token count, no inference


class Outcome(StrEnum):
    """How a model attempt ended (HIST-2)."""

    SUCCESS = "success"
    INCOMPLETE = "incomplete"
    ERROR = "error"
    CANCELED = "canceled"
    REJECTED = "rejected"
