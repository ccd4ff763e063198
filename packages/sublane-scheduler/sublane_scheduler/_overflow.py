"""Metered accounts in selection (PAID-2): why a metered account serves a call, and the refusals of
PAID-3's spend caps.

The decision itself is the scheduler's (``Scheduler._usable_metered``), among the candidates it
already has: ``normal`` routing offers metered accounts like any other; ``overflow`` offers them
only when no subscription candidate can take the call now, or once the call has waited the group's
``overflow_after_s`` in the queue; ``off`` never (the eligibility leaves them out).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sublane_core import SubLaneError

#: ``routing.overflow_reason`` of a call a metered account served (docs/metered-accounts.md).
NORMAL = "normal"  # the group's routing is ``normal``: an ordinary member of the rotation
WAITED = "waited"  # it waited ``overflow_after_s`` for busy subscription accounts
BOUND = "bound"  # its conversation is bound to the metered account (AFF-3)
NO_SUBSCRIPTION = "no_subscription"  # no subscription account of the group serves the model
ALL_UNAVAILABLE = "all_unavailable"  # every one is out for reasons that differ, or disabled/unauthorized

#: When every subscription candidate is out for one reason, the reason names it.
ALL_BY_REASON = {
    "cooldown": "all_cooling",
    "quota": "all_out_of_quota",
    "refresh_backoff": "all_refresh_backoff",
}

#: ``excluded`` counts of the routing explanation.
HELD = "metered_held"  # overflow: held back while a subscription account may take the call
EXCLUDED_BY_REFUSAL = {"metered_budget_exhausted": "metered_budget", "unpriced_model": "unpriced"}


def excluded_by(refusal: tuple[str, float | None]) -> str:
    """The ``excluded`` count a PAID-3 refusal adds to: ``metered_budget`` or ``unpriced``."""
    return EXCLUDED_BY_REFUSAL.get(refusal[0], "metered_budget")


def blocked_reason(reasons: set[str], subscriptions: int, unavailable: int) -> str:
    """Why no subscription account can take the call now, as ``routing.overflow_reason``:
    ``reasons`` are the exclusions of the group's ``subscriptions`` that list the model
    (``cooldown``, ``quota``, ``refresh_backoff``, or ``tried``: the call already failed there,
    FAIL-1); ``unavailable`` counts the disabled or unauthorized ones."""
    if subscriptions == 0:
        return ALL_UNAVAILABLE if unavailable else NO_SUBSCRIPTION
    if unavailable or len(reasons) != 1 or next(iter(reasons)) not in ALL_BY_REASON:
        return ALL_UNAVAILABLE
    return ALL_BY_REASON[next(iter(reasons))]


#: The longest ``Retry-After`` a refusal names, as for token budgets: clients back off, not wait a month.
RETRY_AFTER_CAP_S = 86_400.0


def spend_error(refusal: tuple[str, float | None], model: str, now: float) -> SubLaneError:
    """PAID-3's refusal as the client hears it when nothing else can serve the call: 429
    ``metered_budget_exhausted`` until the reset — ``Retry-After`` (at most a day) and
    ``X-Metered-Budget-Reset`` (Unix seconds), as token budgets answer (TEAM-4) — or 400
    ``unpriced_model``."""
    code, reset_at = refusal
    if code != "metered_budget_exhausted":
        return SubLaneError(
            "unpriced_model",
            f"{model!r} has no price, so no metered account serves it until an admin prices it.",
        )
    if reset_at is None:
        return SubLaneError("metered_budget_exhausted")
    when = datetime.fromtimestamp(reset_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return SubLaneError(
        "metered_budget_exhausted",
        f"This month's spending cap on metered (API-key) accounts is reached; it resets at {when}.",
        retry_after=max(1.0, min(RETRY_AFTER_CAP_S, reset_at - now)),
        headers={"X-Metered-Budget-Reset": str(int(reset_at))},
    )
