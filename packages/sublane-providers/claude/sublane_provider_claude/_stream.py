"""Reading a Claude Messages stream: the provider kit's
:class:`~sublane_providers.kit.MessagesStreamObserver` (PROTOCOLS §2.4), shared with every upstream
speaking Messages, under the names this package has always exported."""

from __future__ import annotations

from sublane_providers.kit import MessagesStreamObserver, messages_usage

__all__ = ["ClaudeStreamObserver", "usage_of_message"]

#: Token counts of a whole Messages answer (non-streaming JSON); ``None`` when it has no usage.
usage_of_message = messages_usage


class ClaudeStreamObserver(MessagesStreamObserver):
    """Updates a :class:`~sublane_providers.StreamState` from Claude event names and data."""

    __slots__ = ()
