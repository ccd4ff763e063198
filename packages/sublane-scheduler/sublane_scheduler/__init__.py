"""Admission, account leases, waiting, conversation affinity and cooldowns (SPEC §1–7)."""

from sublane_scheduler._admission import Admission, Ticket
from sublane_scheduler._affinity import AffinityStore, binding_digest
from sublane_scheduler._cooldowns import Cooldown, CooldownBook, CooldownPolicy
from sublane_scheduler._directory import AccountDirectory, AccountInfo, GroupMetering
from sublane_scheduler._eligibility import (
    Candidates,
    CredentialHealth,
    Eligibility,
    MeteredCandidates,
    MeteredSpend,
    ModelSupport,
    SubscriptionQuota,
)
from sublane_scheduler._leases import Lease, LeaseTable
from sublane_scheduler._rotation import RoundRobin
from sublane_scheduler._scheduler import Grant, Recheck, RouteRequest, Scheduler
from sublane_scheduler._shared_slots import SharedSlots
from sublane_scheduler._waiting import Waiter, WaitRoom, wait_for_lease

__version__ = "0.1.0"

__all__ = [
    # the scheduler
    "Candidates",
    "Grant",
    "Recheck",
    "RouteRequest",
    "Scheduler",
    "SharedSlots",
    # eligibility
    "CredentialHealth",
    "Eligibility",
    "MeteredCandidates",
    "MeteredSpend",
    "ModelSupport",
    "SubscriptionQuota",
    # accounts
    "AccountDirectory",
    "AccountInfo",
    "GroupMetering",
    # admission
    "Admission",
    "Ticket",
    # leases and waiting
    "Lease",
    "LeaseTable",
    "WaitRoom",
    "Waiter",
    "wait_for_lease",
    # selection
    "AffinityStore",
    "RoundRobin",
    "binding_digest",
    # cooldowns
    "Cooldown",
    "CooldownBook",
    "CooldownPolicy",
]
