"""Usable upstream credentials for every account: on-demand refresh with the CRED rules.

- CRED-1: a token within 2 minutes of expiry is refreshed before use, one refresh at a time per
  account (the refresh token rotates: two concurrent refreshes would burn it).
- CRED-2: when that refresh fails transiently, a provider that allows it (Codex) may still use the
  old token while it has more than 30 s left and was not rejected upstream.
- CRED-3: failed refreshes back off per account (30 s, 1 min, 2 min, 4 min, then 5 min; an OAuth
  ``Retry-After`` up to 1 h wins). No background loop: the next request after the delay retries.
- CRED-4: no usable token → ``account_refresh_failed`` (503) with a ``Retry-After``.
- CRED-5: a rejection by the model endpoint is stored with the credentials, so a restart cannot
  make that token usable again; backoff delays stay in memory.
- CRED-6: only explicit token-endpoint credential errors mark the account ``reauth_required``.
- CRED-10: every credential write is fenced by the account's lifecycle revision, in the database
  (``UPDATE … WHERE lifecycle_revision = N``): a refresh that began under revision N writes
  nothing once a re-authorization, credential replacement or disable/enable made it N+1, neither
  its new tokens nor a re-authorization mark; its result is discarded and the next use reads the
  new credentials.

A refreshed bundle is encrypted and written to the database *before* it is used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col

from sublane_core import (
    AUTH_OK,
    AUTH_REAUTH_REQUIRED,
    Account,
    AlertOutbox,
    Clock,
    CredentialCipher,
    SubLaneError,
    account_ref,
    immutable,
    signals,
)
from sublane_providers._capabilities import CompletesBundles
from sublane_providers._egress import use_egress
from sublane_providers._refresh import MAX_OAUTH_RETRY_AFTER_S, RefreshedCredentials, RefreshFailed

_log = logging.getLogger("sublane.credentials")

REFRESH_MARGIN_S = 120.0
FALLBACK_MIN_REMAINING_S = 30.0
BACKOFF_STEPS_S = (30.0, 60.0, 120.0, 240.0, 300.0)
#: ALERT-2: ``account.refresh_failing`` is raised at this many failed refreshes in a row.
REFRESH_FAILING_AFTER = 3


class Refresher(Protocol):
    """What the vault needs of an adapter."""

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials: ...


class RefreshFence(Protocol):
    """The right to spend an account's refresh token, held across processes (SCALE-2)."""

    #: Larger for every later holder: a write carrying an older token than the stored one is refused.
    token: int

    async def valid(self) -> bool:
        """Still the holder (asked right before the refresh token is spent)."""
        ...


class RefreshGate(Protocol):
    """One credential refresh per account at a time across replicas (SCALE-2, CRED-1). Without one
    (a single process) the vault's own lock is enough."""

    def hold(self, account_id: int) -> AbstractAsyncContextManager[RefreshFence]: ...


def _always_complete(_bundle: Mapping[str, Any]) -> bool:
    return True


@dataclass(slots=True)
class _Entry:
    bundle: dict[str, Any]
    expires_at: float | None
    lifecycle_revision: int
    rejected: bool
    reauth_required: bool
    failures: int = 0
    retry_at: float = 0.0
    #: A refreshed bundle that could not be stored yet (OPS-2): stored again on the next use.
    unsaved: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Whether a bundle has all a request needs (the adapter's ``bundle_complete``).
    complete: Callable[[Mapping[str, Any]], bool] = _always_complete
    #: A newer lifecycle replaced this entry's credentials in the database (CRED-10): nothing of
    #: it may be written or used any more.
    stale: bool = False
    #: The account's egress proxy, else the workspace's (EGRESS-1); ``None``: the environment's.
    egress: str | None = None
    #: The fencing token the entry's bundle was refreshed under (SCALE-2), until it is stored.
    fence: int | None = None
    #: The fencing token stored with the bundle this entry holds (SCALE-2): a rejection is stored
    #: only while the stored credentials are still these.
    stored_fence: int = 0


@immutable
class Credentials:
    """A usable bundle, with the lifecycle revision it belongs to."""

    account_id: int
    bundle: Mapping[str, Any] = field(repr=False)  # the secrets: never in a repr
    lifecycle_revision: int
    #: The proxy the account's upstream calls leave through (EGRESS-1), ``None``: the environment's.
    egress: str | None = field(default=None, repr=False)  # may carry the proxy's password


def _handed(account_id: int, entry: _Entry) -> Credentials:
    return Credentials(account_id, entry.bundle, entry.lifecycle_revision, entry.egress)


class CredentialVault:
    """Hands out usable credentials per account and keeps them fresh (one per gateway process)."""

    def __init__(
        self,
        engine: Engine,
        cipher: CredentialCipher,
        clock: Clock,
        refreshers: Mapping[str, Refresher],
        *,
        fallback_providers: frozenset[str] = frozenset(),
        outbox: AlertOutbox | None = None,
        default_egress: str | None = None,
        gate: RefreshGate | None = None,
    ) -> None:
        self._gate = gate  # SCALE-2: one refresh per account across replicas
        self._default_egress = default_egress  # SUBLANE_EGRESS_PROXY (EGRESS-1)
        self._outbox = outbox  # ALERT-2: reauth_required (refresh_failing is a signal: off the path)
        self._engine = engine
        self._cipher = cipher
        self._clock = clock
        self._refreshers = refreshers
        self._fallback = fallback_providers
        self._entries: dict[int, _Entry] = {}

    def loaded(self) -> list[int]:
        """The accounts whose credentials this process holds in memory."""
        return list(self._entries)

    def forget(self, account_id: int) -> None:
        """Drop what is cached of an account (it changed, was re-authorized or deleted)."""
        self._entries.pop(account_id, None)

    def refresh_retry_at(self, account_id: int) -> float | None:
        """When the next refresh may be tried, while an account is backing off (runtime view)."""
        entry = self._entries.get(account_id)
        if entry is None or entry.failures == 0 or entry.retry_at <= self._clock.time():
            return None
        return entry.retry_at

    async def _entry(self, account_id: int) -> _Entry:
        entry = self._entries.get(account_id)
        if entry is None:
            entry = await anyio.to_thread.run_sync(self._load, account_id)
            self._entries.setdefault(account_id, entry)
            entry = self._entries[account_id]
        return entry

    def _load(self, account_id: int) -> _Entry:
        with Session(self._engine) as db:
            account = db.get(Account, account_id)
            if account is None:
                raise SubLaneError("no_account_available", "The account no longer exists.")
            return _Entry(
                bundle=self._cipher.decrypt(account.credentials),
                expires_at=account.credentials_expires_at,
                lifecycle_revision=account.lifecycle_revision,
                rejected=account.credentials_rejected_at is not None,
                reauth_required=account.auth_state == AUTH_REAUTH_REQUIRED,
                complete=self._completeness(account.provider),
                egress=self._egress_of(account),
                stored_fence=account.credentials_fence,
            )

    def _egress_of(self, account: Account) -> str | None:
        if account.proxy_url is None:
            return self._default_egress
        return str(self._cipher.decrypt(account.proxy_url)["url"])

    async def egress_changed(self, account_id: int) -> str | None:
        """The account's proxy changed (EGRESS-1): its next calls use the new one; the one it had
        before is returned (its pools may be closed). Its credentials stay as they are."""
        entry = self._entries.get(account_id)
        if entry is None:
            return None
        previous = entry.egress

        def load() -> str | None:
            with Session(self._engine) as db:
                account = db.get(Account, account_id)
                return self._egress_of(account) if account is not None else None

        entry.egress = await anyio.to_thread.run_sync(load)
        return previous

    def egress_of(self, account_id: int) -> str | None:
        """The egress the account's calls use, as far as this process has loaded it."""
        entry = self._entries.get(account_id)
        return entry.egress if entry is not None else self._default_egress

    def egresses(self) -> set[str]:
        """The proxies the accounts loaded here use now."""
        return {entry.egress for entry in self._entries.values() if entry.egress is not None}

    def _completeness(self, provider: str) -> Callable[[Mapping[str, Any]], bool]:
        refresher = self._refreshers.get(provider)
        return refresher.bundle_complete if isinstance(refresher, CompletesBundles) else _always_complete

    def _usable_without_refresh(self, entry: _Entry, now: float, margin: float) -> bool:
        bundle = entry.bundle
        # An API key (PAID-1) is used as it is: it has no expiry and nothing to refresh.
        if entry.rejected or not (bundle.get("access_token") or bundle.get("api_key")):
            return False
        if not entry.complete(entry.bundle):  # e.g. an account whose upstream still lacks a project id
            return False
        return entry.expires_at is None or entry.expires_at - now > margin

    def needs_reauth(self, account_id: int) -> bool:
        """Whether this process has seen the account's credentials die (CRED-6) since it loaded them.

        Selection reads this so an account marked mid-flight stops getting requests at once, before
        the account directory reloads the stored ``auth_state``.
        """
        entry = self._entries.get(account_id)
        return entry is not None and entry.reauth_required

    async def get(self, account_id: int, provider: str, *, margin: float = REFRESH_MARGIN_S) -> Credentials:
        """Usable credentials, refreshing first when due (CRED-1); raises the CRED-4 error when none.

        ``margin``: how long the token must still last. A model call needs the 2 minutes of CRED-1
        (a stream outlives its first byte); a metadata read (discovery, quota) needs only its own
        timeout, so it does not spend a refresh on a token that outlives it by far.
        """
        entry = await self._entry(account_id)
        if entry.reauth_required:
            raise SubLaneError("reauth_required")
        if entry.unsaved and not await self._save_refreshed(account_id, entry):
            return await self.get(account_id, provider, margin=margin)
        now = self._clock.time()
        if self._usable_without_refresh(entry, now, margin):
            return _handed(account_id, entry)
        seen = entry.bundle.get("access_token")
        async with entry.lock:  # single flight: the second caller sees the first one's result
            if entry.reauth_required:  # the refresh this caller waited for killed the credentials
                raise SubLaneError("reauth_required")
            now = self._clock.time()
            if self._usable_without_refresh(entry, now, margin):
                return _handed(account_id, entry)
            if entry.bundle.get("access_token") != seen and self._usable_without_refresh(entry, now, 0):
                # Refreshed while this caller waited: use that token, even one issued with less than
                # the margin left, rather than burning the refresh token once per waiter.
                return _handed(account_id, entry)
            if entry.retry_at <= now:
                refreshed = await self._refresh_once(account_id, provider, entry, margin)
                if entry.stale:  # re-authorized meanwhile (CRED-10): the new credentials decide
                    return await self.get(account_id, provider, margin=margin)
                now = self._clock.time()  # the attempt took time: re-check expiry (CRED-2)
                if refreshed and self._usable_without_refresh(entry, now, 0):
                    return _handed(account_id, entry)
            if entry.reauth_required:
                raise SubLaneError("reauth_required")
            # CRED-2: the old token, while it has more than 30 s, only for providers that allow the
            # fallback (Codex). Claude and Antigravity keep the plain rule: a token due for refresh
            # is not used once its refresh failed.
            if provider in self._fallback and self._usable_without_refresh(
                entry, now, FALLBACK_MIN_REMAINING_S
            ):
                return _handed(account_id, entry)
            raise SubLaneError("account_refresh_failed", retry_after=max(1.0, entry.retry_at - now))

    async def rejected(
        self, account_id: int, provider: str, used: Credentials, *, after_refresh: bool = False
    ) -> Credentials:
        """The model endpoint answered 401 to ``used``: refresh once and hand back the new token.

        ``after_refresh``: ``used`` is what the previous call here returned, within the same request,
        and was rejected too: a refreshed token still rejected means re-authorization (CRED-6).
        Raises the CRED-4/6 errors when no other token can be had.
        """
        entry = await self._entry(account_id)
        async with entry.lock:
            if entry.reauth_required:
                raise SubLaneError("reauth_required")
            if entry.bundle.get("access_token") != used.bundle.get("access_token"):
                return Credentials(
                    account_id, entry.bundle, entry.lifecycle_revision, entry.egress
                )  # refreshed meanwhile
            stored = await self._persist(
                "rejection",
                account_id,
                self._store_rejection,
                account_id,
                entry.lifecycle_revision,
                self._clock.time(),
                entry.stored_fence if self._gate is not None else None,
            )
            if stored is False:  # a newer lifecycle (CRED-10), or another replica's refresh (SCALE-2):
                # the credentials stored now were not the ones rejected
                self._discard(account_id, entry)
                return await self.get(account_id, provider)
            entry.rejected = True
            if after_refresh:
                await self._mark_reauth(account_id, entry, "rejected_after_refresh")
                if entry.stale:
                    return await self.get(account_id, provider)
                raise SubLaneError("reauth_required")
            now = self._clock.time()
            if entry.retry_at > now:  # CRED-3: a 401 during the backoff does not retry early
                raise SubLaneError("account_refresh_failed", retry_after=max(1.0, entry.retry_at - now))
            await self._refresh_once(account_id, provider, entry, REFRESH_MARGIN_S)
            if entry.stale:
                return await self.get(account_id, provider)
            if entry.reauth_required:
                raise SubLaneError("reauth_required")
            if entry.rejected:
                raise SubLaneError(
                    "account_refresh_failed", retry_after=max(1.0, entry.retry_at - self._clock.time())
                )
            return _handed(account_id, entry)

    async def _refresh_once(self, account_id: int, provider: str, entry: _Entry, margin: float) -> bool:
        """:meth:`_refresh`, with the gate across replicas held when there is one: under it the stored
        credentials are read again first — another replica may have refreshed them meanwhile, and
        then those are used and this replica's refresh token (spent there) is not."""
        gate = self._gate
        if gate is None:
            return await self._refresh(account_id, provider, entry)
        async with gate.hold(account_id) as fence:
            stored = await anyio.to_thread.run_sync(self._load, account_id)
            if stored.lifecycle_revision != entry.lifecycle_revision:
                self._discard(account_id, entry)  # re-authorized: the new credentials decide
                return False
            if stored.bundle != entry.bundle:  # refreshed (or rejected) by another replica
                entry.bundle, entry.expires_at = stored.bundle, stored.expires_at
                entry.stored_fence = stored.stored_fence
                entry.rejected, entry.reauth_required = stored.rejected, stored.reauth_required
                entry.failures, entry.retry_at = 0, 0.0
                if entry.reauth_required or self._usable_without_refresh(entry, self._clock.time(), margin):
                    return not entry.reauth_required
            return await self._refresh(account_id, provider, entry, fence)

    async def _refresh(
        self, account_id: int, provider: str, entry: _Entry, fence: RefreshFence | None = None
    ) -> bool:
        """Refresh ``entry`` (lock held); ``True`` when it now holds fresh, stored credentials."""
        refresher = self._refreshers.get(provider)
        if refresher is None:
            raise SubLaneError("account_refresh_failed")
        if fence is not None and not await fence.valid():  # lost the gate: never spend the token
            _log.warning(
                "the refresh lock of account %s expired before its refresh; not refreshing", account_id
            )
            return False
        try:
            with use_egress(entry.egress):  # EGRESS-1: the refresh leaves through the account's egress
                result = await _to_its_end(refresher.refresh(entry.bundle))
        except RefreshFailed as failure:
            if entry.stale:
                return False
            if failure.permanent:
                await self._mark_reauth(account_id, entry, failure.code)
                return False
            entry.failures += 1
            delay = BACKOFF_STEPS_S[min(entry.failures, len(BACKOFF_STEPS_S)) - 1]
            if failure.retry_after is not None:
                delay = max(delay, min(failure.retry_after, MAX_OAUTH_RETRY_AFTER_S))
            entry.retry_at = self._clock.time() + delay
            _log.warning(
                "credential refresh of account %s failed (%s); next try in %.0f s",
                account_id,
                failure.code,
                delay,
            )
            if entry.failures == REFRESH_FAILING_AFTER:  # ALERT-2: written off this path, by a receiver
                signals.refresh_failing.send(
                    signals.RefreshFailing(
                        account_id=account_id, failures=entry.failures, reason=failure.code
                    ),
                    sender=self,
                )
            return False
        if entry.stale:  # re-authorized while the refresh ran (CRED-10): its result is discarded
            return False
        # The rotated tokens go into memory first: the old refresh token is dead upstream now, so a
        # failed store must never throw the new one away (OPS-2, STORE-4). It is stored again later.
        entry.bundle, entry.expires_at = dict(result.bundle), result.expires_at
        entry.fence = fence.token if fence is not None else None
        entry.rejected = False
        entry.failures, entry.retry_at = 0, 0.0
        entry.unsaved = True
        if not await self._save_refreshed(account_id, entry):
            return False  # the lifecycle moved on while it was stored (CRED-10)
        signals.credentials_refreshed.send(
            signals.CredentialsRefreshed(account_id=account_id, expires_at=result.expires_at)
        )
        return True

    async def _save_refreshed(self, account_id: int, entry: _Entry) -> bool:
        """Store the entry's refreshed bundle; ``False`` when a newer lifecycle replaced it (the
        entry is discarded then), ``True`` otherwise (a failed store is tried again later)."""
        bundle, expires_at = entry.bundle, entry.expires_at
        stored = await self._persist(
            "refreshed credentials",
            account_id,
            self._store_refresh,
            account_id,
            entry.lifecycle_revision,
            bundle,
            expires_at,
            entry.fence,
        )
        if stored is False:
            self._discard(account_id, entry)
            return False
        if stored:
            entry.unsaved = entry.bundle is not bundle  # a newer refresh meanwhile is still to store
            if entry.fence is not None:
                entry.stored_fence = entry.fence
        return True

    def _discard(self, account_id: int, entry: _Entry) -> None:
        """The database holds a newer lifecycle than ``entry`` (CRED-10): forget it, so the next use
        loads the new credentials."""
        entry.stale = True
        entry.unsaved = False
        if self._entries.get(account_id) is entry:
            del self._entries[account_id]
        _log.info(
            "account %s was re-authorized (or refreshed by another replica) during a credential write; its"
            " result is discarded",
            account_id,
        )

    async def _persist(
        self, what: str, account_id: int, store: Callable[..., bool], *args: Any
    ) -> bool | None:
        """Run ``store`` off the loop: whether it wrote (``False``: the lifecycle moved on, CRED-10);
        ``None`` when the database failed, which is logged by type and never raised (OPS-2)."""
        try:
            return await anyio.to_thread.run_sync(store, *args)
        except SQLAlchemyError as exc:
            _log.error("could not store %s of account %s: %s", what, account_id, type(exc).__name__)
            return None

    async def _mark_reauth(self, account_id: int, entry: _Entry, code: str) -> None:
        stored = await self._persist(
            "re-authorization state",
            account_id,
            self._store_reauth,
            account_id,
            entry.lifecycle_revision,
            code,
        )
        if stored is False:  # these credentials were replaced meanwhile: the new ones are not dead
            self._discard(account_id, entry)
            return
        entry.reauth_required = True
        _log.warning("account %s needs re-authorization (%s)", account_id, code)
        signals.credentials_rejected.send(
            signals.CredentialsRejected(account_id=account_id, reauth_required=True, reason=code)
        )

    def _store_fenced(
        self,
        account_id: int,
        revision: int,
        alert: tuple[str, dict[str, Any]] | None = None,
        fence: int | None = None,
        expect_fence: int | None = None,
        **values: Any,
    ) -> bool:
        """``UPDATE accounts SET … WHERE id = ? AND lifecycle_revision = ?``: whether it wrote.

        ``alert`` (event, data) is added to the outbox in the same transaction when it wrote. With a
        ``fence`` (a refresh under the replicas' gate) it writes only over an older one, and with
        ``expect_fence`` only while the stored credentials are those of that refresh (SCALE-2)."""
        conditions = [col(Account.id) == account_id, col(Account.lifecycle_revision) == revision]
        if fence is not None:
            conditions.append(col(Account.credentials_fence) < fence)
            values["credentials_fence"] = fence
        if expect_fence is not None:
            conditions.append(col(Account.credentials_fence) == expect_fence)
        statement = sa.update(Account).where(*conditions).values(**values)
        told = None
        with self._engine.begin() as connection:
            wrote = bool(connection.execute(statement).rowcount)
            if wrote and alert is not None and self._outbox is not None:
                event, data = alert
                data = dict(data, account=account_ref(connection, account_id))
                told = self._outbox.add(connection, event, data)
        if told is not None and self._outbox is not None:
            self._outbox.added()
        return wrote

    def _store_refresh(
        self,
        account_id: int,
        revision: int,
        bundle: dict[str, Any],
        expires_at: float | None,
        fence: int | None,
    ) -> bool:
        return self._store_fenced(
            account_id,
            revision,
            fence=fence,
            credentials=self._cipher.encrypt(bundle),
            credentials_expires_at=expires_at,
            credentials_rejected_at=None,
            auth_state=AUTH_OK,
            auth_error=None,
            updated_at=self._clock.time(),
        )

    def _store_rejection(self, account_id: int, revision: int, now: float, expect_fence: int | None) -> bool:
        return self._store_fenced(
            account_id, revision, expect_fence=expect_fence, credentials_rejected_at=now
        )

    def _store_reauth(self, account_id: int, revision: int, code: str) -> bool:
        return self._store_fenced(
            account_id,
            revision,
            ("account.reauth_required", {"reason": code[:64]}),
            auth_state=AUTH_REAUTH_REQUIRED,
            auth_error=code[:64],
            updated_at=self._clock.time(),
        )


async def _to_its_end(refresh: Coroutine[Any, Any, RefreshedCredentials]) -> RefreshedCredentials:
    """Await ``refresh`` to its end even when the caller is cancelled meanwhile (a client that left,
    ADM-6): the provider rotates the refresh token when it answers, so an abandoned answer would
    leave only a spent token behind. The cancellation goes on once the answer is in memory (the
    refresh is bounded by the metadata timeout), at the caller's next wait."""
    task = asyncio.ensure_future(refresh)  # the context (the egress) goes with it
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:  # asked again, to land at the caller's next wait: after the answer is kept
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
            current.cancel()
    return task.result()
