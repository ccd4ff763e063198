"""The public surface of sublane-quota changes only on purpose: update this list with the change."""

from __future__ import annotations

import sublane_quota

EXPECTED = [
    "QuotaObserver", "QuotaReader", "QuotaReadSkipped", "QuotaRefresher", "BACKOFF_S",
    "ObservedWindow", "QuotaBook", "QuotaStore",
    "FRESH_S", "fresh_until", "is_exhausted", "is_fresh", "pace_points",
    "LEVEL_SUFFIXES", "quota_model",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_quota.__all__ == EXPECTED
    for name in EXPECTED:
        assert hasattr(sublane_quota, name), name
