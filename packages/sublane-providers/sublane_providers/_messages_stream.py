"""Reading an Anthropic Messages stream (PROTOCOLS §2.4) for what scheduling and records need, for
any provider whose upstream speaks Messages (a subscription's OAuth token or an API key alike).

Only a few events are decoded: ``message_start`` (message id, prompt usage), the first non-empty
content delta (HIST-5), ``message_delta`` (output usage, stop reason), ``message_stop`` and
``error``. ``ping``, block starts/stops and every delta after the first are relayed unparsed.

Token counts follow HIST semantics: the Messages API's ``input_tokens`` excludes cache reads and
writes, so the recorded input is ``input_tokens + cache_read_input_tokens +
cache_creation_input_tokens`` and the cached part is ``cache_read_input_tokens``; the cache writes are
``cache_creation_input_tokens``, of which ``cache_creation.ephemeral_1h_input_tokens`` were written
for one hour (COST-1 prices them apart). Output tokens (thinking included) come from
``message_delta`` only: the ``output_tokens`` of ``message_start`` is a placeholder, so a stream
that breaks before ``message_delta`` reports no output count rather than a made-up one.
"""

from __future__ import annotations

from typing import Any

from sublane_providers._observer import JsonStreamObserver
from sublane_providers._types import DeltaKind, Outcome, StreamState, TokenUsage

DELTA_KINDS: dict[str, tuple[str, DeltaKind]] = {
    "text_delta": ("text", DeltaKind.TEXT),
    "thinking_delta": ("thinking", DeltaKind.REASONING),
    "input_json_delta": ("partial_json", DeltaKind.TOOL_ARGUMENTS),
}
# Stop reasons that mean the answer was cut short by a length limit, not finished.
INCOMPLETE_STOP_REASONS = frozenset({"max_tokens", "model_context_window_exceeded"})
_INTERESTING = frozenset({"message_start", "message_delta", "message_stop", "error"})
_INPUT_FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_ONE_HOUR = "ephemeral_1h_input_tokens"  # in ``usage.cache_creation``: writes that last an hour


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _usage(counts: dict[str, int]) -> TokenUsage | None:
    if not counts:
        return None
    inputs = [counts[name] for name in _INPUT_FIELDS if name in counts]
    return TokenUsage(
        input_tokens=sum(inputs) if inputs else None,
        output_tokens=counts.get("output_tokens"),
        cached_tokens=counts.get("cache_read_input_tokens"),
        cache_write_tokens=counts.get("cache_creation_input_tokens"),
        cache_write_1h_tokens=counts.get(_ONE_HOUR),
    )


def _counts(usage: Any, fields: tuple[str, ...]) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {}
    counts = {}
    for name in fields:
        value = _int(usage.get(name))
        if value is not None:
            counts[name] = value
    split = usage.get("cache_creation")
    if "cache_creation_input_tokens" in counts and isinstance(split, dict):
        hour = _int(split.get(_ONE_HOUR))
        if hour is not None:
            counts[_ONE_HOUR] = hour
    return counts


def messages_usage(message: Any) -> TokenUsage | None:
    """Token counts of a whole Messages answer (non-streaming JSON); ``None`` when it has no usage."""
    usage = message.get("usage") if isinstance(message, dict) else None
    return _usage(_counts(usage, (*_INPUT_FIELDS, "output_tokens")))


def messages_error(payload: dict[str, Any]) -> tuple[str, str]:
    """``(code, message)`` of an ``error`` event or error body: the Anthropic error type and message."""
    error = payload.get("error")
    if not isinstance(error, dict):
        error = {}
    code = error.get("type") if isinstance(error.get("type"), str) else None
    message = error.get("message") if isinstance(error.get("message"), str) else None
    return (code or "upstream_error")[:64], (message or "The upstream reported an error.")[:500]


def messages_outcome(stop_reason: Any) -> Outcome:
    """How a finished answer ended: cut by a length limit (INCOMPLETE) or done (SUCCESS)."""
    return Outcome.INCOMPLETE if stop_reason in INCOMPLETE_STOP_REASONS else Outcome.SUCCESS


class MessagesStreamObserver(JsonStreamObserver):
    """Updates a :class:`StreamState` from Messages event names and data, parsing as little as possible."""

    __slots__ = ("_counts", "_stop_reason")

    def __init__(self, state: StreamState | None = None) -> None:
        super().__init__(state)
        self._counts: dict[str, int] = {}
        self._stop_reason: str | None = None

    def wants(self, name: str | None) -> bool:
        """Whether an event of this name (``None``: unnamed) needs its data decoded."""
        if name is None:
            return True
        if name == "content_block_delta":
            return self.state.first_delta is None
        return name in _INTERESTING

    def observe_payload(self, payload: dict[str, Any]) -> None:
        """Record what an already decoded event tells."""
        state = self.state
        kind = payload.get("type")
        if kind == "content_block_delta":
            if state.first_delta is None:
                self._first_delta(payload.get("delta"))
        elif kind == "message_start":
            message = payload.get("message")
            if isinstance(message, dict):
                if isinstance(message.get("id"), str):
                    state.response_id = message["id"]
                # The start's output_tokens is a placeholder (see the module docstring).
                self._update(message.get("usage"), _INPUT_FIELDS)
        elif kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self._stop_reason = delta["stop_reason"]
            # Newer API versions repeat the final input and cache counts here: they win.
            self._update(payload.get("usage"), (*_INPUT_FIELDS, "output_tokens"))
        elif kind == "message_stop":
            if state.outcome is None:
                state.outcome = messages_outcome(self._stop_reason)
        elif kind == "error" and state.outcome is None:
            state.outcome = Outcome.ERROR
            state.error_code, state.error_message = messages_error(payload)

    def observe_answer(self, payload: dict[str, Any]) -> None:
        """Record a whole JSON answer (see :meth:`observe_message`)."""
        self.observe_message(payload)

    def observe_message(self, message: dict[str, Any]) -> None:
        """Record a whole non-streaming answer: a ``message`` object or an error body."""
        state = self.state
        if message.get("type") == "error":
            state.outcome = Outcome.ERROR
            state.error_code, state.error_message = messages_error(message)
            return
        if isinstance(message.get("id"), str):
            state.response_id = message["id"]
        self._update(message.get("usage"), (*_INPUT_FIELDS, "output_tokens"))
        stop_reason = message.get("stop_reason")
        self._stop_reason = stop_reason if isinstance(stop_reason, str) else None
        state.outcome = messages_outcome(self._stop_reason)

    @property
    def stop_reason(self) -> str | None:
        """The stop reason ``message_delta`` reported (``end_turn``, ``max_tokens``, ``tool_use`` …)."""
        return self._stop_reason

    def _first_delta(self, delta: Any) -> None:
        if not isinstance(delta, dict):
            return
        found = DELTA_KINDS.get(str(delta.get("type")))
        if found is not None and delta.get(found[0]):
            self.state.first_delta = found[1]

    def _update(self, usage: Any, fields: tuple[str, ...]) -> None:
        counts = _counts(usage, fields)
        if counts:
            self._counts.update(counts)
            self.state.usage = _usage(self._counts)
