"""Limits shared by several replicas through Redis (SCALE-2): needs the ``redis`` extra.

Kept out of the package's top level so a single process never imports redis-py."""

from sublane_scheduler._shared import LEASE_TTL_S, Fence, RefreshLocks, SharedLimits, unavailable

__all__ = ["LEASE_TTL_S", "Fence", "RefreshLocks", "SharedLimits", "unavailable"]
