"""Names that several packages share: the wire protocols, upstream operations and call outcomes.

They live in core because both sides of the provider boundary speak them: an adapter says which
protocol its upstream speaks (``sublane-providers``), the translators are keyed by protocol pairs
(``sublane-protocols``), and records store outcomes (``sublane-history``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class WireProtocol(StrEnum):
    """A request/response protocol, spoken by a client or by an upstream."""

    RESPONSES = "responses"  # OpenAI Responses (HTTP JSON, SSE, WebSocket)
    CHAT_COMPLETIONS = "chat_completions"  # OpenAI Chat Completions
    MESSAGES = "messages"  # Anthropic Messages
    GEMINI = "gemini"  # Google Gemini generateContent (the Antigravity wrapper upstream)


class Billing(StrEnum):
    """How an account is paid for (PAID-2): a provider's accounts all bill one way."""

    SUBSCRIPTION = "subscription"  # a flat-rate subscription signed in with OAuth
    METERED = "metered"  # an API key billed per token


class MeteredRouting(StrEnum):
    """How a group uses its metered accounts (PAID-2)."""

    OVERFLOW = "overflow"  # only when no subscription account can take the call, or it waited
    NORMAL = "normal"  # ordinary members of the rotation
    OFF = "off"  # never used


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
    #: CLIENT-3: the upstream (or its catalogue) refused the client version; not an account failure.
    CLIENT_VERSION = "client_version"


@dataclass(frozen=True, slots=True)
class Dialect:
    """What one upstream makes of the wire protocol it speaks, as data: its provider declares it
    (``ProviderAdapter.dialect``) and the generic translation (``sublane-protocols``) applies it to
    every body translated for that upstream, so no shared package needs to know the provider.

    Frozen and hashable: bodies translated for equal dialects are the same body.
    """

    #: ``(field, message)``: hub (Responses) fields the upstream cannot honour and whose loss would
    #: change what is asked; a translated request setting one is refused before any slot (XLAT-3).
    refused: tuple[tuple[str, str], ...] = ()
    #: Hub fields the upstream rejects but whose loss changes nothing a client relies on: dropped.
    dropped: frozenset[str] = frozenset()
    #: ``(field, value)`` every translated request carries.
    required: tuple[tuple[str, bool | int | str], ...] = ()
    #: A text the upstream requires to lead the system instructions (once), e.g. a client identity.
    system_prelude: str = ""


#: The dialect of an upstream that takes its protocol as documented.
PLAIN_DIALECT = Dialect()
