"""API-key authentication for the client API, without a database round-trip per request.

Keys are looked up by the SHA-256 digest of the presented secret. A verified key is cached with its
owner and group for a short time; any change to users, keys, groups or memberships (the
``access_changed`` signal, sent after the change commits) empties the cache, so a revoked key stops
working at once. Expiry is re-checked on every request from the cached ``expires_at``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from sublane_core import (
    ROLE_ADMIN,
    ApiKey,
    Clock,
    GroupMember,
    ResourceGroup,
    SubLaneError,
    User,
    sha256_hex,
)
from sublane_gateway.pipeline._networks import Network, in_networks, networks_of

KEY_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")
_KEY_HEADER_NAMES = frozenset(name.encode() for name in KEY_HEADERS)
CACHE_TTL_S = 60.0
MAX_CACHED_KEYS = 10_000


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key, its owner, its group and the owner's limits."""

    key_id: int
    key_name: str
    user_id: int
    username: str
    role: str
    group_id: int
    group_name: str
    model_policy: tuple[str, ...] | None  # None: every model
    member_concurrency: int
    rpm: int
    expires_at: float | None
    #: Client networks the key may be used from (AUTH-3); empty: any.
    allowed_networks: tuple[Network, ...] = ()

    def allows(self, address: str | None) -> bool:
        """Whether a call from ``address`` may use this key (AUTH-3)."""
        return not self.allowed_networks or in_networks(address, self.allowed_networks)

    @property
    def is_admin(self) -> bool:
        """Admins are bound only by workspace and account limits (TEAM-1): no member concurrency,
        no requests per minute, no token budget."""
        return self.role == ROLE_ADMIN


def presented_secret(
    headers: Mapping[str, str] | Sequence[tuple[bytes, bytes]], query_keys: Sequence[str] = ()
) -> str:
    """The key from ``Authorization: Bearer``, ``x-api-key``, ``x-goog-api-key`` or a ``key=`` query
    parameter (``query_keys``, Gemini); every copy of each must name the same key (API §14).

    ``headers`` is best the request's raw header list (or Starlette's ``Headers``): a mapping by
    name holds only one copy of a repeated header, and two different ``Authorization`` headers
    must be refused, not read as the first.
    """
    found: set[str] = set()
    raw: Sequence[tuple[bytes, bytes]] | None = (
        headers if isinstance(headers, (list, tuple)) else getattr(headers, "raw", None)
    )
    if raw is not None:
        for name, value in raw:  # one pass over the headers (OPS-4: every copy of a repeated one)
            lowered = name.lower()
            if lowered in _KEY_HEADER_NAMES:
                _add_presented(found, lowered.decode("latin-1"), value.decode("latin-1"))
    else:
        assert isinstance(headers, Mapping)
        for key_header in KEY_HEADERS:
            presented = headers.get(key_header)
            if presented is not None:
                _add_presented(found, key_header, presented)
    for key in query_keys:
        _add_presented(found, "key", key)
    if not found:
        raise SubLaneError(
            "invalid_api_key", "Send your SubLane key as 'Authorization: Bearer <key>' or 'x-api-key'."
        )
    if len(found) > 1:
        raise SubLaneError("invalid_api_key", "The keys sent disagree; send one key.")
    return found.pop()


def _add_presented(found: set[str], name: str, value: str) -> None:
    if name == "authorization":
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer":
            raise SubLaneError("invalid_api_key", "Use 'Authorization: Bearer <key>'.")
        value = token
    value = value.strip()
    if value:
        found.add(value)


class KeyAuthenticator:
    """Turns a presented key into a :class:`Principal`, or refuses with 401 ``invalid_api_key``."""

    def __init__(self, engine: Engine, clock: Clock, ttl_s: float = CACHE_TTL_S) -> None:
        self._engine = engine
        self._clock = clock
        self._ttl_s = ttl_s
        self._cache: dict[str, tuple[Principal, float]] = {}
        self._digests: dict[int, str] = {}
        self._generation = 0
        self._lock = threading.Lock()

    def invalidate(self, _payload: object = None) -> None:
        """Forget every cached key (connected to ``access_changed``)."""
        with self._lock:
            self._generation += 1
            self._cache.clear()

    async def authenticate(
        self,
        headers: Mapping[str, str] | Sequence[tuple[bytes, bytes]],
        query_keys: Sequence[str] = (),
        *,
        address: str | None = None,
    ) -> Principal:
        """The caller's principal; 401 for a missing, unknown, revoked, paused or expired key, or
        for keys that disagree (:func:`presented_secret`); 403 ``ip_not_allowed`` when the key is
        limited to networks ``address`` (the client's, OPS-6) is not in (AUTH-3)."""
        principal = await self._principal(sha256_hex(presented_secret(headers, query_keys)))
        if not principal.allows(address):
            raise SubLaneError("ip_not_allowed")
        return principal

    async def authenticate_again(self, principal: Principal) -> Principal:
        """Check a principal again (after a wait or before a retry, WAIT-5/RETRY-2)."""
        digest = self._digests.get(principal.key_id)
        if digest is None:
            raise SubLaneError("invalid_api_key")
        return await self._principal(digest)

    async def _principal(self, digest: str) -> Principal:
        now = self._clock.monotonic()
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > now:
            principal = cached[0]
        else:
            generation = self._generation
            found = await anyio.to_thread.run_sync(self._load, digest)
            if found is None:
                raise SubLaneError("invalid_api_key")
            principal = found
            with self._lock:
                if len(self._cache) >= MAX_CACHED_KEYS:
                    self._cache.clear()
                    self._digests.clear()
                if generation == self._generation:  # no access change raced the lookup
                    self._cache[digest] = (principal, now + self._ttl_s)
                # A key's digest never changes, so it is kept even when the principal is not cached:
                # authenticate_again (after a wait, WAIT-5) looks the key up by it.
                self._digests[principal.key_id] = digest
        if principal.expires_at is not None and principal.expires_at <= self._clock.time():
            raise SubLaneError("invalid_api_key", "The API key has expired.")
        return principal

    def _load(self, digest: str) -> Principal | None:
        with Session(self._engine) as db:
            row = db.exec(
                select(ApiKey, User, ResourceGroup)
                .join(User, col(User.id) == col(ApiKey.user_id))
                .join(ResourceGroup, col(ResourceGroup.id) == col(ApiKey.group_id))
                .join(
                    GroupMember,
                    (col(GroupMember.group_id) == col(ApiKey.group_id))
                    & (col(GroupMember.user_id) == col(ApiKey.user_id)),
                )
                .where(
                    col(ApiKey.digest) == digest,
                    col(ApiKey.revoked_at).is_(None),
                    col(ApiKey.enabled),
                    col(User.enabled),
                )
            ).first()
        if row is None:
            return None
        key, user, group = row
        assert key.id is not None and user.id is not None and group.id is not None
        policy = group.model_policy.get("allow") if isinstance(group.model_policy, dict) else None
        return Principal(
            key_id=key.id,
            key_name=key.name,
            user_id=user.id,
            username=user.username,
            role=user.role,
            group_id=group.id,
            group_name=group.name,
            model_policy=tuple(policy) if isinstance(policy, list) else None,
            member_concurrency=user.member_concurrency,
            rpm=user.rpm,
            expires_at=key.expires_at,
            allowed_networks=networks_of(tuple(key.allowed_ips or ())),
        )
