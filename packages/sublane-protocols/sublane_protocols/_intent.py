"""What a call asks for, read from its body and headers the way its client protocol puts it.

Selection needs only a few facts — the model, whether the answer streams, the conversation key
(AFF-1) and whether the call continues upstream state that lives on one account (AFF-4) — so each
protocol reads just those and leaves the body as it came.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sublane_core import SubLaneError, WireProtocol, immutable

MAX_MODEL_CHARS = 256
MAX_KEY_CHARS = 256


@immutable(kw_only=True)
class CallIntent:
    """The facts of a call that routing needs."""

    model: str
    stream: bool
    conversation_key: str | None
    continuation: bool  # carries an upstream continuation (``previous_response_id``)


def require_model(value: Any) -> str:
    """A model name as a non-empty string of at most 256 characters."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_MODEL_CHARS:
        raise SubLaneError("invalid_request", "'model' must be a non-empty string.")
    return value.strip()


def text_key(value: Any) -> str | None:
    """A conversation key from a header or field: a non-empty string, cut to 256 characters."""
    if isinstance(value, str) and value:
        return value[:MAX_KEY_CHARS]
    return None


IntentReader = Callable[[Mapping[str, str], Mapping[str, Any], "str | None"], CallIntent]
_READERS: dict[WireProtocol, IntentReader] = {}


def register_intent_reader(protocol: WireProtocol, reader: IntentReader) -> None:
    _READERS[protocol] = reader


def read_intent(
    protocol: WireProtocol,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    path_model: str | None = None,
) -> CallIntent:
    """The call's intent; ``path_model`` is the model named in the route (Gemini puts it there).

    ``headers`` are looked up by lower-case name (Starlette's headers and a lower-cased dict do).
    Raises :class:`~sublane_core.SubLaneError` (400) when the model is missing or malformed.
    """
    return _READERS[protocol](headers, body, path_model)
