"""The public surface of sublane-scheduler changes only on purpose: update this list with the change."""

from __future__ import annotations

import sublane_scheduler

EXPECTED = [
    "Candidates", "Grant", "Recheck", "RouteRequest", "Scheduler", "SharedSlots",
    "CredentialHealth", "Eligibility", "MeteredCandidates", "MeteredSpend", "ModelSupport",
    "SubscriptionQuota",
    "AccountDirectory", "AccountInfo", "GroupMetering",
    "Admission", "Ticket",
    "Lease", "LeaseTable", "WaitRoom", "Waiter", "wait_for_lease",
    "AffinityStore", "RoundRobin", "binding_digest",
    "Cooldown", "CooldownBook", "CooldownPolicy",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_scheduler.__all__ == EXPECTED
    for name in EXPECTED:
        assert hasattr(sublane_scheduler, name), name


def test_public_names_are_documented() -> None:
    undocumented = [name for name in EXPECTED if not (getattr(sublane_scheduler, name).__doc__ or "").strip()]
    assert undocumented == []
