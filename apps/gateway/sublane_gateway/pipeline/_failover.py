"""Failover before the first byte (FAIL-1…3): an unbound request whose attempt failed for a reason
of its account moves to another eligible account of its group.

What moves on (FAIL-1): an upstream 429 (rate limit, model limit, subscription limit — the account
has cooled or recorded it already), 401/403 after the credential rules ran (refresh tried; the
account marked), an explicit 5xx after the same-account retries (RETRY-1), a connection that sent
nothing (:class:`Unreached`), and an account that became unavailable between the retries on its
lease (RETRY-2). What never moves on: the request's own faults (400/404/413/422), network
uncertainty after the request was sent, the member's own limits and budgets, a bound conversation,
and anything after output reached the client — the callers only ask before their first byte.

One logical request keeps one request ID, one record and one lease at a time (FAIL-2): the
scheduler gives back the failed slot and the binding it made before taking the next, under the
same admission ticket. The attempts are kept on the :class:`~sublane_gateway.pipeline.ModelCall`
and end up in the record's routing explanation (``routing.attempts``).
"""

from __future__ import annotations

from dataclasses import replace

from sublane_core import SubLaneError
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_gateway.pipeline._schedule import Recheck, route_request
from sublane_gateway.pipeline._send import Unreached, UpstreamRefused
from sublane_providers import FailureKind, UpstreamFailure
from sublane_scheduler import Grant

__all__ = ["attempt_code", "fails_over", "move_on", "moves_on_failure"]

_ACCOUNT_FAILURES = frozenset(
    {
        FailureKind.RATE_LIMITED,
        FailureKind.MODEL_RATE_LIMITED,
        FailureKind.QUOTA_EXHAUSTED,
        FailureKind.UNAUTHORIZED,
        FailureKind.FORBIDDEN,
    }
)
#: Gateway errors raised for the account while an attempt ran: its credentials (CRED rules ran), or
#: the re-checks between retries on its lease (RETRY-2) finding it cooling, out of quota or gone.
_ACCOUNT_CODES = frozenset(
    {
        "reauth_required",
        "account_refresh_failed",
        "account_cooling",
        "model_cooling",
        "quota_exhausted",
        "no_account_available",
    }
)


def moves_on_failure(failure: UpstreamFailure) -> bool:
    """Whether an upstream refusal is the account's trouble, which another account may not share."""
    if failure.kind in _ACCOUNT_FAILURES:
        return True
    return failure.kind is FailureKind.TRANSIENT and failure.status >= 500


def attempt_code(error: SubLaneError | UpstreamRefused) -> str:
    """The code an attempt that ended with ``error`` is noted with (FAIL-2)."""
    return error.failure.code if isinstance(error, UpstreamRefused) else error.code


def fails_over(error: BaseException) -> bool:
    """Whether an attempt that ended with ``error`` before any output may move on (FAIL-1)."""
    if isinstance(error, UpstreamRefused):
        return moves_on_failure(error.failure)
    if isinstance(error, Unreached):
        return True
    return isinstance(error, SubLaneError) and error.code in _ACCOUNT_CODES


async def move_on(
    runtime: ClientRuntime,
    call: ModelCall,
    grant: Grant,
    error_code: str,
    recheck: Recheck,
    *,
    providers: tuple[str, ...],
    conversation_key: str | None,
    continuation: bool,
    parent_key: str | None = None,
) -> Grant | None:
    """Another account's grant for ``call``, whose attempt on ``grant`` failed with ``error_code``
    for a reason that moves on — or ``None``: the caller answers with that attempt's own error
    (FAIL-3), having finished nothing yet.

    ``None`` when the request may not move (bound, failover off, attempts used up) or when no other
    account can take it (none eligible, all cooling or busy past the wait).
    """
    scheduler = runtime.scheduler
    if not grant.may_fail_over:
        await scheduler.forget_binding(grant)
        return None
    tried = [*call.tried_accounts(), grant.account.id]
    if len(tried) > runtime.settings.failover_attempts:
        await scheduler.forget_binding(grant)
        return None
    request = route_request(
        call.principal,
        providers,
        call.model,
        call.request_id,
        conversation_key=conversation_key,
        continuation=continuation,
        parent_key=parent_key,
    )
    try:
        moved = await scheduler.fail_over(grant, replace(request, exclude=frozenset(tried)), recheck)
    except SubLaneError:
        return None  # FAIL-3: the failed attempt's error is the answer
    call.note_attempt(error_code)
    call.take(moved)
    return moved
