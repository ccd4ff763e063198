"""What every adapter reports, whatever the provider: deltas, usage, terminal outcome, failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from sublane_core import Outcome, immutable

__all__ = ["DeltaKind", "FailureKind", "Outcome", "StreamState", "TokenUsage", "UpstreamFailure"]


class DeltaKind(StrEnum):
    """The kinds of output that count as "first output" (HIST-5)."""

    TEXT = "text"
    REASONING = "reasoning"
    REASONING_SUMMARY = "reasoning_summary"
    TOOL_ARGUMENTS = "tool_arguments"


@immutable
class TokenUsage:
    """Token counts as the provider reported them; ``None`` where it reported nothing.

    ``input_tokens`` includes the cached input and the cache writes; ``cache_write_tokens`` is the
    part written to the cache, ``cache_write_1h_tokens`` the part of that written for one hour.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_1h_tokens: int | None = None


@dataclass(slots=True)
class StreamState:
    """What an adapter has learnt from a response so far. Filled in place as events arrive."""

    first_delta: DeltaKind | None = None
    usage: TokenUsage | None = None
    outcome: Outcome | None = None
    error_code: str | None = None
    error_message: str | None = None
    response_id: str | None = None
    events: int = 0
    extras: dict[str, object] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        """Whether a terminal event arrived."""
        return self.outcome is not None


class FailureKind(StrEnum):
    """How SubLane treats an upstream error answer."""

    RATE_LIMITED = "rate_limited"  # account-wide 429 (COOL-1)
    QUOTA_EXHAUSTED = "quota_exhausted"  # subscription limit reached (a 429 with a reset)
    MODEL_RATE_LIMITED = "model_rate_limited"  # a model-scoped provider limit (AGL-1)
    TRANSIENT = "transient"  # 408, 5xx, overload: may be retried (RETRY-1), counts for MCOOL
    UNAUTHORIZED = "unauthorized"  # 401: try one credential refresh (CRED)
    FORBIDDEN = "forbidden"  # 403: upstream_forbidden (CRED-8)
    CLIENT_ERROR = "client_error"  # the request itself is wrong: relay to the client
    #: CLIENT-3: the upstream refused the client identity's version for the model: no cooldown,
    #: not an account failure, no failover (``UpstreamFailure.needed_version`` when it said one).
    CLIENT_VERSION = "client_version"


RETRYABLE_STATUSES = frozenset({408, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class UpstreamFailure:
    """A classified upstream error answer.

    ``message`` is safe to show the client; raw bodies never reach records or logs.
    """

    kind: FailureKind
    status: int
    code: str
    message: str
    retry_after: float | None = None
    model: str | None = None
    needed_version: str | None = None  # CLIENT-3: the client version the upstream asked for
    param: str | None = None  # the request field an upstream's refusal names (OpenAI's ``error.param``)

    @property
    def retryable(self) -> bool:
        """Whether RETRY-1 allows replaying it on the same account before any output."""
        return self.kind is FailureKind.TRANSIENT and self.status in RETRYABLE_STATUSES
