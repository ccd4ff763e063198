"""The quota observer: reads and normalizes subscription quota for quota-aware selection (SPEC §9–10).

:class:`QuotaObserver` receives what providers report (response headers, stream events, "usage
limit reached" answers), saves it (:class:`QuotaStore`) before publishing it to the in-memory
:class:`QuotaBook` that selection reads, and starts background reads (:class:`QuotaRefresher`)
when model traffic needs them. It knows ``sublane-core`` only: the gateway wires its reader to the
provider adapters and hands it to the scheduler, whose ``SubscriptionQuota`` interface it meets.
"""

from sublane_quota._book import ObservedWindow, QuotaBook
from sublane_quota._freshness import FRESH_S, fresh_until, is_exhausted, is_fresh, pace_points
from sublane_quota._models import LEVEL_SUFFIXES, quota_model
from sublane_quota._observer import QuotaObserver
from sublane_quota._refresher import BACKOFF_S, QuotaReader, QuotaReadSkipped, QuotaRefresher
from sublane_quota._store import QuotaStore

__version__ = "0.1.0"

__all__ = [
    # the observer
    "QuotaObserver",
    "QuotaReader",
    "QuotaReadSkipped",
    "QuotaRefresher",
    "BACKOFF_S",
    # state
    "ObservedWindow",
    "QuotaBook",
    "QuotaStore",
    # rules
    "FRESH_S",
    "fresh_until",
    "is_exhausted",
    "is_fresh",
    "pace_points",
    # models
    "LEVEL_SUFFIXES",
    "quota_model",
]
