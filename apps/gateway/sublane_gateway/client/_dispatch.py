"""Sending one model request upstream: pick an account, take its slot, call, handle refusals.

One logical request keeps one lease and one request ID across its attempts (RETRY-2). Explicit
408/500/502/503/504 answers are retried up to twice on the same account before any output
(RETRY-1); a 401 triggers one credential refresh (CRED); nothing else is replayed (RETRY-4).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import httpx

from sublane_core import SubLaneError, signals
from sublane_gateway.client._keys import Principal
from sublane_gateway.client._runtime import ClientRuntime
from sublane_providers import Credentials, FailureKind, UpstreamFailure
from sublane_scheduler import AccountInfo, Candidates, Grant, RouteRequest

_log = logging.getLogger("sublane.dispatch")

MAX_RETRIES = 2
RETRY_BACKOFF_S = (0.2, 0.6)
MAX_WAITED_HINT_S = 2.0
MAX_ERROR_BODY = 64 * 1024
PROVIDER_PREFIXES = ("codex", "claude", "antigravity")


class UpstreamRefused(Exception):
    """The upstream refused the request; relay ``failure`` to the client in its protocol."""

    def __init__(self, failure: UpstreamFailure, account_id: int) -> None:
        super().__init__(failure.code)
        self.failure = failure
        self.account_id = account_id


def split_model(model: str) -> tuple[str | None, str]:
    """``(provider, model)``, an explicit provider prefix (``codex/`` …) taken off (AFF-6)."""
    prefix, sep, rest = model.partition("/")
    if sep and prefix in PROVIDER_PREFIXES and rest:
        return prefix, rest
    return None, model


def check_policy(principal: Principal, model: str) -> None:
    """403 ``model_not_allowed`` when the group's model policy does not list ``model``."""
    if principal.model_policy is not None and model not in principal.model_policy:
        raise SubLaneError("model_not_allowed", f"The group '{principal.group_name}' may not use {model!r}.")


async def eligible_accounts(
    runtime: ClientRuntime, principal: Principal, provider: str, model: str
) -> Candidates:
    """The group's accounts of ``provider`` that may serve ``model`` now, and why others may not.

    Read again after every wait (WAIT-5): the account directory and key cache follow changes.
    """
    await runtime.directory.refresh()
    excluded: dict[str, int] = {}
    usable: list[AccountInfo] = []
    for account in runtime.directory.of_group(principal.group_id):
        if account.provider != provider:
            continue
        if not account.enabled or not account.auth_ok or runtime.vault.needs_reauth(account.id):
            excluded["unavailable"] = excluded.get("unavailable", 0) + 1
            continue
        usable.append(account)
    supported = await asyncio.gather(*(runtime.catalog.models_of(a.id, a.provider) for a in usable))
    candidates = []
    for account, models in zip(usable, supported, strict=True):
        if model in models:
            candidates.append(account)
        else:
            excluded["model_support"] = excluded.get("model_support", 0) + 1
    return Candidates(candidates, excluded)


async def schedule(
    runtime: ClientRuntime,
    principal: Principal,
    provider: str,
    model: str,
    request_id: str,
    *,
    conversation_key: str | None,
    continuation: bool,
    wait: bool = True,
) -> Grant:
    """Admit the request and take a slot on an account (waiting when needed)."""

    async def eligible() -> Candidates:
        current = await runtime.keys.authenticate_again(principal)  # WAIT-5: key, member, group
        check_policy(current, model)
        return await eligible_accounts(runtime, current, provider, model)

    request = RouteRequest(
        request_id=request_id,
        user_id=principal.user_id,
        group_id=principal.group_id,
        model=model,
        conversation_key=conversation_key,
        continuation=continuation,
        member_limit=principal.member_concurrency,
        rpm=principal.rpm,
        wait=wait,
    )
    return await runtime.scheduler.acquire(request, eligible)


async def send_with_recovery(
    runtime: ClientRuntime,
    grant: Grant,
    build: Callable[[Credentials], httpx.Request],
    recheck: Callable[[], Awaitable[object]],
) -> tuple[httpx.Response, Credentials]:
    """Send until accepted or refused for good; the caller owns the grant and releases it."""
    account = grant.account
    credentials = await runtime.vault.get(account.id, account.provider)
    retries = 0
    refreshed = False
    while True:
        try:
            response = await runtime.http.send(build(credentials))
        except httpx.TimeoutException:
            raise SubLaneError("upstream_timeout") from None
        except httpx.HTTPError as exc:
            _log.warning("upstream %s unreachable: %s", account.provider, type(exc).__name__)
            raise SubLaneError("upstream_error", "The provider could not be reached.") from None
        if response.status_code < 300:
            return response, credentials
        body = await _read_bounded(response)
        adapter = runtime.adapters[account.provider]
        failure = adapter.classify_failure(response.status_code, response.headers, body, runtime.clock.time())
        if failure.kind is FailureKind.UNAUTHORIZED:
            credentials = await runtime.vault.rejected(
                account.id, account.provider, credentials, after_refresh=refreshed
            )
            refreshed = True
            continue
        hint = failure.retry_after
        if failure.retryable and retries < MAX_RETRIES and (hint is None or hint <= MAX_WAITED_HINT_S):
            # RETRY-3: a long upstream hint goes back to the client instead of being waited out.
            await asyncio.sleep(max(RETRY_BACKOFF_S[retries], hint or 0.0))
            retries += 1
            await recheck()  # RETRY-2: access, policy and account health still hold
            continue
        report_failure(account, grant.lease.model, failure, grant.revision)
        raise UpstreamRefused(failure, account.id)


def report_failure(account: AccountInfo, model: str, failure: UpstreamFailure, revision: int) -> None:
    """Tell the scheduler's receivers what the refusal means for the account (COOL, MCOOL)."""
    if failure.kind in (FailureKind.RATE_LIMITED, FailureKind.QUOTA_EXHAUSTED):
        signals.upstream_rate_limited.send(
            signals.UpstreamRateLimited(
                account_id=account.id,
                model=None,
                runtime_revision=revision,
                retry_after_s=failure.retry_after,
                reason=failure.code,
            )
        )
    elif failure.kind is FailureKind.TRANSIENT:
        signals.upstream_failed.send(
            signals.UpstreamFailed(account.id, model, revision, failure.status, failure.code)
        )


async def _read_bounded(response: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_raw():
            chunks.append(chunk)
            size += len(chunk)
            if size >= MAX_ERROR_BODY:
                break
    except httpx.HTTPError:
        pass
    finally:
        await response.aclose()
    return b"".join(chunks)[:MAX_ERROR_BODY]
