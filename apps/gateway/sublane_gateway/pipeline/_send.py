"""Sending one model request upstream on a granted account: retries, refresh, refusals.

One logical request keeps one lease and one request ID across its attempts (RETRY-2). Explicit
408/500/502/503/504 answers are retried up to twice on the same account before any output
(RETRY-1); a 401 triggers one credential refresh (CRED); nothing else is replayed (RETRY-4). What a
refusal means for the account is told to the scheduler by a direct call on the grant; observers
hear of it through the signals.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sublane_core import SubLaneError, signals
from sublane_gateway.pipeline._identity import CallIdentity, too_old_message
from sublane_gateway.pipeline._quota import record_exhaustion
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_providers import (
    Credentials,
    EgressFailed,
    FailureKind,
    HasOtherHosts,
    UpstreamConnectError,
    UpstreamError,
    UpstreamFailure,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamTimeout,
    read_error_body,
    use_egress,
)
from sublane_scheduler import Grant

_log = logging.getLogger("sublane.dispatch")

MAX_RETRIES = 2
RETRY_BACKOFF_S = (0.2, 0.6)
MAX_WAITED_HINT_S = 2.0
MAX_ERROR_BODY = 64 * 1024


class Unreached(SubLaneError):
    """No connection to the provider: nothing of the request was sent (another account may serve it,
    FAIL-1). Answered as ``upstream_error`` (502)."""

    def __init__(self) -> None:
        super().__init__("upstream_error", "The provider could not be reached.")


class EgressUnreached(Unreached):
    """The account's egress proxy could not be reached or refused the tunnel (EGRESS-2): nothing was
    sent, the account is not to blame (no cooldown), another account may serve it (FAIL-1)."""

    def __init__(self) -> None:
        SubLaneError.__init__(self, "egress_proxy_failed")


class UpstreamRefused(Exception):
    """The upstream refused the request; relay ``failure`` to the client in its protocol."""

    def __init__(self, failure: UpstreamFailure, account_id: int) -> None:
        super().__init__(failure.code)
        self.failure = failure
        self.account_id = account_id


#: Credential values shorter than this are not searched for (too likely to be ordinary words).
MIN_MASKED_CHARS = 8


def without_credentials(failure: UpstreamFailure, bundle: Mapping[str, Any]) -> UpstreamFailure:
    """``failure`` with every credential string of the account masked in its code and message.

    An upstream's error text may repeat the credential it was given, and a self-hosted server's API
    key has no shape a pattern could recognise (PAID-1): what is relayed to the client, recorded
    and watched (CLIENT-7) must not carry it."""
    code, message = failure.code, failure.message
    for value in bundle.values():
        if isinstance(value, str) and len(value) >= MIN_MASKED_CHARS:
            if value in code:
                code = code.replace(value, "***")
            if value in message:
                message = message.replace(value, "***")
    if code is failure.code and message is failure.message:
        return failure
    return dataclasses.replace(failure, code=code, message=message)


async def send_with_recovery(
    runtime: ClientRuntime,
    grant: Grant,
    build: Callable[[Credentials], UpstreamRequest],
    recheck: Callable[[], Awaitable[object]],
    identity: CallIdentity | None = None,
) -> tuple[UpstreamResponse, Credentials]:
    """Send until accepted or refused for good; the caller owns the grant and releases it.

    ``identity``: the call's client identity decision, asked again after a version refusal (CLIENT-3).
    """
    account = grant.account
    adapter = runtime.adapters[account.provider]
    credentials = await runtime.vault.get(account.id, account.provider)
    retries = 0
    refreshed = False
    moved: UpstreamRequest | None = None  # the request on another host of the provider (GEM-4)
    while True:
        request = moved if moved is not None else build(credentials)
        moved = None
        try:
            if credentials.egress is None:  # no proxy: the call pays nothing for egress (EGRESS-1)
                response = await runtime.http.send(request)
            else:
                with use_egress(credentials.egress):
                    response = await runtime.http.send(request)
        except UpstreamTimeout:
            raise SubLaneError("upstream_timeout") from None
        except EgressFailed as exc:
            runtime.egress_failed(account.id, str(exc))
            _log.warning("egress proxy of account %s failed: %s", account.id, type(exc).__name__)
            raise EgressUnreached from None
        except UpstreamError as exc:
            moved = (
                adapter.next_host(request, None)
                if isinstance(exc, UpstreamConnectError) and isinstance(adapter, HasOtherHosts)
                else None
            )
            if moved is not None:  # nothing was sent: another host may serve it
                _log.info(
                    "upstream %s host unreachable (%s): next host", account.provider, type(exc).__name__
                )
                continue
            _log.warning("upstream %s unreachable: %s", account.provider, type(exc).__name__)
            if isinstance(exc, UpstreamConnectError):
                raise Unreached from None
            raise SubLaneError("upstream_error", "The provider could not be reached.") from None
        if response.status_code < 300:
            if runtime.egress_errors:
                runtime.egress_worked(account.id)
            return response, credentials
        body = await read_error_body(response, MAX_ERROR_BODY)
        failure = adapter.classify_failure(response.status_code, response.headers, body, runtime.clock.time())
        failure = without_credentials(failure, credentials.bundle)
        runtime.watch_of(account.provider).error(
            failure.code
        )  # CLIENT-7: an error type SubLane does not know
        if failure.kind is FailureKind.UNAUTHORIZED:
            credentials = await runtime.vault.rejected(
                account.id, account.provider, credentials, after_refresh=refreshed
            )
            refreshed = True
            continue
        moved = adapter.next_host(request, failure) if isinstance(adapter, HasOtherHosts) else None
        if moved is not None:
            await recheck()  # RETRY-2 bookkeeping: the same lease, the same checks
            continue
        hint = failure.retry_after
        if failure.retryable and retries < MAX_RETRIES and (hint is None or hint <= MAX_WAITED_HINT_S):
            # RETRY-3: a long upstream hint goes back to the client instead of being waited out.
            await asyncio.sleep(max(RETRY_BACKOFF_S[retries], hint or 0.0))
            retries += 1
            await recheck()  # RETRY-2: access, policy and account health still hold
            continue
        if failure.kind is FailureKind.CLIENT_VERSION:  # CLIENT-3: no cooldown, no failure, no failover
            model = grant.lease.model
            if identity is not None and identity.resend(adapter, failure, model):
                _log.info("upstream %s refused the client version: sent again as SubLane", account.provider)
                continue
            needed = identity.needed(adapter, failure, model) if identity is not None else None
            carried = identity.carried if identity is not None else None
            message = too_old_message(account.provider, model, needed, carried)
            raise UpstreamRefused(
                dataclasses.replace(failure, needed_version=needed, message=message), account.id
            )
        failure = scoped_to_request(failure, grant.lease.model)
        if failure.kind is FailureKind.QUOTA_EXHAUSTED:  # an observation, not a cooldown (QUOTA-7)
            hint = await record_exhaustion(
                runtime, adapter, account, response.headers, failure, grant.lease.model
            )
            failure = dataclasses.replace(failure, retry_after=hint)
        report_refusal(grant, failure, sender=runtime)
        raise UpstreamRefused(failure, account.id)


def scoped_to_request(failure: UpstreamFailure, model: str) -> UpstreamFailure:
    """AGL-1: a model-scoped limit counts as such only for the requested model; a limit naming
    another model is an account-wide rate limit (COOL-1)."""
    if failure.kind is FailureKind.MODEL_RATE_LIMITED and failure.model != model:
        return dataclasses.replace(failure, kind=FailureKind.RATE_LIMITED, model=None)
    return failure


def report_refusal(
    grant: Grant, failure: UpstreamFailure, *, sender: object, model: str | None = None
) -> None:
    """What a refusal means for the account (COOL, MCOOL, AGL), told to the scheduler, then to observers.

    A subscription limit (``QUOTA_EXHAUSTED``) cools nothing: it was recorded as a quota
    observation (QUOTA-7), and counts as no failure.

    ``model`` is the model a transient failure counts for (default: the lease's).
    """
    account_id = grant.account.id
    limited: str | None = None  # the model of a model-scoped limit; None: account-wide
    if failure.kind is FailureKind.QUOTA_EXHAUSTED:
        return  # the subscription limit: a quota observation (pipeline/_quota.py), no cooldown
    if failure.kind is FailureKind.MODEL_RATE_LIMITED and failure.model is not None:
        limited = failure.model
    elif failure.kind is not FailureKind.RATE_LIMITED:
        if failure.kind is FailureKind.TRANSIENT:
            failed_model = grant.lease.model if model is None else model
            grant.report_failure(model=failed_model)
            if signals.upstream_failed.has_receivers:
                signals.upstream_failed.send(
                    signals.UpstreamFailed(
                        account_id=account_id,
                        model=failed_model,
                        runtime_revision=grant.revision,
                        status=failure.status,
                        error_code=failure.code,
                    ),
                    sender=sender,
                )
        return
    grant.report_rate_limited(failure.retry_after, failure.code, model=limited)
    if signals.upstream_rate_limited.has_receivers:
        signals.upstream_rate_limited.send(
            signals.UpstreamRateLimited(
                account_id=account_id,
                model=limited,
                runtime_revision=grant.revision,
                retry_after_s=failure.retry_after,
                reason=failure.code,
            ),
            sender=sender,
        )
