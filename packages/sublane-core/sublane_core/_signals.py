"""The event bus: every blinker signal SubLane's packages exchange, each with a typed payload.

Signals *notify*; anything that must change a request's outcome is a direct, typed call. Receivers
are connected by ``apps/gateway`` at start-up, never at import time. A receiver that raises is
logged and skipped: it never breaks the request that sent the signal.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from blinker import ANY, Namespace

from sublane_core._immutable import immutable
from sublane_core._vocabulary import Outcome

_namespace = Namespace()
_log = logging.getLogger("sublane.signals")


P = TypeVar("P")


class TypedSignal(Generic[P]):
    """A blinker signal whose senders and receivers agree on one payload type."""

    def __init__(self, name: str, payload_type: type[P], doc: str) -> None:
        self.name = name
        self.payload_type = payload_type
        self._signal = _namespace.signal(name, doc=doc)
        self.__doc__ = doc
        self._receivers: dict[Callable[..., None], Callable[[P], None]] = {}  # blinker's → ours
        # The receivers of one sender, found once per connect/disconnect instead of on every send
        # (issue #19): held by the sender itself, weakly, so an entry goes with its sender.
        self._by_sender: weakref.WeakKeyDictionary[Any, tuple[Callable[[P], None], ...]] = (
            weakref.WeakKeyDictionary()
        )
        self._without_sender: tuple[Callable[[P], None], ...] | None = None

    def connect(self, receiver: Callable[[P], None], *, sender: Any = ANY) -> Callable[[], None]:
        """Call ``receiver(payload)`` on every send (only on those of ``sender`` when given).

        Returns a function that disconnects it. A gateway runtime sends its own events with itself
        as sender, so a receiver of one app never sees another app's events in the same process.
        """

        def adapter(_sender: Any, payload: P) -> None:
            receiver(payload)

        self._receivers[adapter] = receiver
        self._signal.connect(adapter, sender=sender, weak=False)
        self._forget_senders()

        def disconnect() -> None:
            self._signal.disconnect(adapter, sender=sender)
            self._receivers.pop(adapter, None)
            self._forget_senders()

        return disconnect

    def send(self, payload: P, *, sender: Any = None) -> None:
        """Deliver ``payload`` to every receiver; a failing receiver is logged, never raised."""
        if not isinstance(payload, self.payload_type):
            raise TypeError(f"{self.name} carries {self.payload_type.__name__}, not {type(payload).__name__}")
        if not self._signal.receivers:
            return
        for receiver in self._receivers_of(sender):
            try:
                receiver(payload)
            except Exception:
                _log.exception("receiver of %s failed", self.name)

    def _forget_senders(self) -> None:
        self._by_sender.clear()
        self._without_sender = None

    def _receivers_of(self, sender: Any) -> tuple[Callable[[P], None], ...]:
        if sender is None:
            found = self._without_sender
            if found is None:
                found = self._without_sender = self._lookup(None)
            return found
        try:
            found = self._by_sender.get(sender)
        except TypeError:  # a sender that cannot be weakly held (or hashed) is looked up every time
            return self._lookup(sender)
        if found is None:
            found = self._by_sender[sender] = self._lookup(sender)
        return found

    def _lookup(self, sender: Any) -> tuple[Callable[[P], None], ...]:
        return tuple(self._receivers[adapter] for adapter in self._signal.receivers_for(sender))

    @property
    def has_receivers(self) -> bool:
        """Whether anyone listens (senders may skip building a payload when nobody does)."""
        return bool(self._signal.receivers)


# -- payloads --------------------------------------------------------------------------------------


class AccountChange(StrEnum):
    """What happened to an account."""

    CREATED = "created"
    UPDATED = "updated"
    ENABLED = "enabled"
    DISABLED = "disabled"
    DELETED = "deleted"
    LIMITS = "limits"
    REAUTHORIZED = "reauthorized"
    RESUMED = "resumed"  # Clear cooldown (COOL-6)
    EGRESS = "egress"  # its egress proxy changed (EGRESS-1)


class AccessKind(StrEnum):
    """Which kind of access object changed."""

    USER = "user"
    KEY = "key"
    GROUP = "group"
    MEMBERSHIP = "membership"


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountChanged:
    """An account was created, edited, enabled, disabled, re-authorized, deleted or had its limit set."""

    account_id: int
    change: AccountChange
    lifecycle_revision: int
    max_concurrency: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessChanged:
    """Users, keys, groups or memberships changed: cached access decisions must be re-checked."""

    kind: AccessKind
    id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseAcquired:
    """A model request took a slot on an account."""

    request_id: str
    account_id: int
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseReleased:
    """A lease ended (exactly once per lease, ADM-6)."""

    request_id: str
    account_id: int
    model: str
    outcome: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamSucceeded:
    """An upstream call finished successfully; carries the runtime revision seen at dispatch (COOL-5)."""

    account_id: int
    model: str
    runtime_revision: int


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamFailed:
    """An upstream call failed transiently (5xx, broken stream): counts toward MCOOL."""

    account_id: int
    model: str
    runtime_revision: int
    status: int | None
    error_code: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamRateLimited:
    """The upstream answered 429 (COOL-1) or a model-scoped limit (AGL-1)."""

    account_id: int
    model: str | None  # None = account-wide
    runtime_revision: int
    retry_after_s: float | None
    reason: str


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """One normalized quota window (QUOTA-2): a value inside :class:`QuotaObserved`, not a payload."""

    window: str
    used_percent: float | None
    window_seconds: int | None
    resets_at: float | None
    limit_reached: bool = False
    main: bool = True
    model: str = ""


@immutable(kw_only=True)
class QuotaObserved:
    """A provider reported quota, from a response's headers or a quota read."""

    account_id: int
    lifecycle_revision: int
    observed_at: float
    plan: str | None
    windows: tuple[QuotaWindow, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialsRefreshed:
    """An account's OAuth credentials were refreshed and persisted."""

    account_id: int
    expires_at: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialsRejected:
    """The token endpoint or the model endpoint rejected an account's credentials (CRED-6)."""

    account_id: int
    reauth_required: bool
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshFailing:
    """An account's credential refresh failed ``failures`` times in a row (ALERT-2
    ``account.refresh_failing``, at the third); ``reason`` is the last failure's code. Sent by the
    credential vault with itself as sender; the alert is written off the request's path."""

    account_id: int
    failures: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolUnavailable:
    """A group had no account that could serve a model now (every one cooling, out of quota,
    waiting to refresh, disabled or needing re-authorization); ``reason`` is the refusal's code."""

    group_id: int | None
    model: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientVersionRefused:
    """CLIENT-3: an upstream (or its model catalogue) refused a call's client version for a model.

    The seam for observers such as a list of upstream changes (CLIENT-7); ``needed`` is the version
    asked for when the upstream or catalogue named one, ``carried`` the version the call carried.
    """

    provider: str
    model: str
    needed: str | None
    carried: str | None
    request_id: str | None = None


@immutable(kw_only=True)
class RequestFinished:
    """A model attempt ended: the metadata of HIST-2, sent before its slot is handed on (WAIT-7).

    Never prompts, bodies, headers, IP addresses, session identifiers or credentials.
    """

    request_id: str
    started_at: float
    duration_ms: int
    first_token_ms: int | None
    user_id: int
    key_id: int | None
    group_id: int | None
    account_id: int | None
    provider: str | None
    model: str
    protocol: str
    operation: str
    outcome: Outcome
    error_code: str | None = None
    upstream_status: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    routing: dict[str, Any] | None = None
    served_model: str | None = None  # the model an alias in ``model`` was served as (ALIAS-1)
    #: Why a later turn of a conversation mostly missed the upstream's prompt cache (COST-4):
    #: ``first_turn``, ``account_changed``, ``prefix_changed``, ``expired`` or ``unknown``.
    cache_miss_reason: str | None = None
    cache_write_tokens: int | None = None  # COST-2: input written to the cache (part of input)
    cache_write_1h_tokens: int | None = None  # the part of those written for one hour (Claude)
    #: Where the time went (OPS-13): ``queue_ms``, ``connect_ms``, ``first_byte_ms``, ``total_ms``,
    #: ``sublane_ms``; ``None`` when no upstream answered.
    timing: dict[str, int] | None = None


# -- signals ---------------------------------------------------------------------------------------

account_changed = TypedSignal("account-changed", AccountChanged, "An account's settings changed.")
access_changed = TypedSignal("access-changed", AccessChanged, "Users, keys or groups changed.")
lease_acquired = TypedSignal("lease-acquired", LeaseAcquired, "A request took an account slot.")
lease_released = TypedSignal("lease-released", LeaseReleased, "A request gave its account slot back.")
upstream_succeeded = TypedSignal("upstream-succeeded", UpstreamSucceeded, "An upstream call succeeded.")
upstream_failed = TypedSignal("upstream-failed", UpstreamFailed, "An upstream call failed transiently.")
upstream_rate_limited = TypedSignal(
    "upstream-rate-limited", UpstreamRateLimited, "An upstream answered with a rate limit."
)
quota_observed = TypedSignal("quota-observed", QuotaObserved, "A provider reported quota.")
credentials_refreshed = TypedSignal(
    "credentials-refreshed", CredentialsRefreshed, "An account's credentials were refreshed."
)
pool_unavailable = TypedSignal(
    "pool-unavailable", PoolUnavailable, "A group had no eligible account for a model."
)
refresh_failing = TypedSignal(
    "refresh-failing", RefreshFailing, "An account's credential refresh failed again and again."
)
request_finished = TypedSignal("request-finished", RequestFinished, "A model attempt ended.")
client_version_refused = TypedSignal(
    "client-version-refused", ClientVersionRefused, "An upstream refused a call's client version."
)
credentials_rejected = TypedSignal(
    "credentials-rejected", CredentialsRejected, "An account's credentials were rejected."
)
