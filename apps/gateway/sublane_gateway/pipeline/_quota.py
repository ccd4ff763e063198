"""An upstream "usage limit reached" answer is a quota observation, not a cooldown (QUOTA-7).

When a provider says the subscription's main limit is used up (Codex ``usage_limit_reached``, a
Claude 429 whose unified headers reject a main window), the account is not cooled: the answer's
quota headers — or, when it carries none, a reached main window until the hinted reset — are saved
and published before the caller answers, so the next selection already leaves the account out for
new conversations and a bound conversation gets 403 ``quota_exhausted`` until the observation is
no longer fresh (2 minutes, or the reset).
"""

from __future__ import annotations

from collections.abc import Mapping

from sublane_core import signals
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_providers import ProviderAdapter, UpstreamFailure
from sublane_quota import is_exhausted
from sublane_scheduler import AccountInfo

#: The window named when an exhausted answer carries no quota headers of its own.
REACHED_WINDOW = "usage_limit"


def exhaustion(
    adapter: ProviderAdapter,
    account: AccountInfo,
    headers: Mapping[str, str],
    failure: UpstreamFailure,
    now: float,
) -> signals.QuotaObserved:
    """The observation an exhausted answer makes: its headers' windows, at least one of them reached."""
    plan, windows = adapter.quota_from_headers(headers, now)
    if not any(window.main and is_exhausted(window) for window in windows):
        reset = now + failure.retry_after if failure.retry_after is not None else None
        windows = (*windows, signals.QuotaWindow(REACHED_WINDOW, None, None, reset, limit_reached=True))
    return signals.QuotaObserved(
        account_id=account.id,
        lifecycle_revision=account.lifecycle_revision,
        observed_at=now,
        plan=plan,
        windows=windows,
    )


async def record_exhaustion(
    runtime: ClientRuntime,
    adapter: ProviderAdapter,
    account: AccountInfo,
    headers: Mapping[str, str],
    failure: UpstreamFailure,
    model: str,
) -> float | None:
    """Save and publish the observation; the re-check hint (seconds) for the client, when known."""
    quota = runtime.quota
    if quota is None:
        return failure.retry_after
    now = runtime.clock.time()
    await quota.record(exhaustion(adapter, account, headers, failure, now))
    until = quota.exhausted_until(account.id, model)
    return max(1.0, until - now) if until is not None else failure.retry_after


def observe_exhaustion(
    runtime: ClientRuntime,
    adapter: ProviderAdapter,
    account: AccountInfo,
    headers: Mapping[str, str],
    failure: UpstreamFailure,
) -> None:
    """The same, queued (a WebSocket turn's error frame: the observation is saved, then published)."""
    if runtime.quota is not None:
        runtime.quota.observe(exhaustion(adapter, account, headers, failure, runtime.clock.time()))
