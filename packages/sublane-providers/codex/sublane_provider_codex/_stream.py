"""Reading a Codex stream: the backend speaks OpenAI Responses (PROTOCOLS §1.4), read by the
shared :class:`~sublane_providers.kit.ResponsesStreamObserver`."""

from __future__ import annotations

from sublane_providers.kit import ResponsesStreamObserver, responses_usage

#: Token counts of a Responses ``usage`` object (kept under the name this package always exported).
usage_of = responses_usage


class CodexStreamObserver(ResponsesStreamObserver):
    """The Codex backend's events are Responses events, read as any Responses upstream's are."""

    __slots__ = ()
