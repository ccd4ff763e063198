"""The public surface of sublane-history changes only on purpose: update this list with the change."""

from __future__ import annotations

import sublane_history

EXPECTED = [
    "HistoryRecorder", "NOT_RECORDED_REJECTIONS", "OUTCOMES", "record_row", "routing_explanation",
    "Retention", "apply_retention",
    "UsageWriter", "AttemptUsage", "KEPT_DAYS", "MAX_MODEL_LABELS", "OTHER_MODEL", "usage_cutoff", "utc_day",
    "UsageReader", "COUNTERS", "RANGES", "weekday",
    "RecordCosts", "CostLedger", "ACCOUNT_COUNTERS", "money",
    "TimingReader", "MAX_TIMED",
    "TokenBudgets", "BudgetRule", "BudgetState", "BudgetPeriod", "MAX_RULES", "MAX_LIMIT", "budget_error",
    "period_bounds", "rule_of",
    "HistoryReader", "HistoryFilter", "InvalidFilter", "HistoryPage", "RecordRow", "FilterChoices", "Choice",
    "PAGE_SIZE", "CHOICES_LIMIT",
    "record_view", "choices_view", "personal_routing", "compact_request_id", "DELETED_ACCOUNT",
    "cache_hit_rate", "NO_RATE",
    "hit_rate", "weighted_hit_rate", "MISS_REASONS", "MISS_BELOW",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_history.__all__ == EXPECTED
    for name in EXPECTED:
        assert hasattr(sublane_history, name), name
