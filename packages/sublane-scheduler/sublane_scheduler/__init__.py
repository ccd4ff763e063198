"""Admission, account leases, waiting, conversation affinity and cooldowns (SPEC §1–7)."""

from sublane_scheduler._directory import AccountDirectory, AccountInfo
from sublane_scheduler._leases import Lease, LeaseTable
from sublane_scheduler._rotation import RoundRobin

__version__ = "0.1.0"

__all__ = [
    # accounts
    "AccountDirectory",
    "AccountInfo",
    # leases
    "Lease",
    "LeaseTable",
    # selection
    "RoundRobin",
]
