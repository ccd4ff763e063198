"""Request records: what happened to every model call, for admins and for each member (SPEC §13);
usage summaries and token budgets built from them (SPEC §21).

The gateway connects :meth:`HistoryRecorder.record` to ``signals.request_finished``; the history API
reads through :class:`HistoryReader` and shows rows with :func:`record_view`. The same writer adds
every record to the usage summaries (:class:`UsageWriter`), read by :class:`UsageReader`;
:class:`TokenBudgets` enforces budget rules from usage totals held in memory.
"""

from sublane_history._budgets import (
    MAX_LIMIT,
    MAX_RULES,
    BudgetPeriod,
    BudgetRule,
    BudgetState,
    TokenBudgets,
    budget_error,
    period_bounds,
    rule_of,
)
from sublane_history._cache_rate import (
    MISS_BELOW,
    MISS_REASONS,
    NO_RATE,
    cache_hit_rate,
    hit_rate,
    weighted_hit_rate,
)
from sublane_history._costs import CostLedger, RecordCosts
from sublane_history._filters import HistoryFilter, InvalidFilter
from sublane_history._queries import (
    CHOICES_LIMIT,
    PAGE_SIZE,
    Choice,
    FilterChoices,
    HistoryPage,
    HistoryReader,
    RecordRow,
)
from sublane_history._recorder import NOT_RECORDED_REJECTIONS, HistoryRecorder
from sublane_history._retention import Retention, apply_retention
from sublane_history._rows import OUTCOMES, record_row, routing_explanation
from sublane_history._timing import MAX_TIMED, TimingReader
from sublane_history._usage import (
    KEPT_DAYS,
    MAX_MODEL_LABELS,
    OTHER_MODEL,
    AttemptUsage,
    UsageWriter,
    usage_cutoff,
    utc_day,
)
from sublane_history._usage_queries import ACCOUNT_COUNTERS, COUNTERS, RANGES, UsageReader, money, weekday
from sublane_history._views import (
    DELETED_ACCOUNT,
    choices_view,
    compact_request_id,
    personal_routing,
    record_view,
)

__version__ = "0.1.0"

__all__ = [
    # recording
    "HistoryRecorder",
    "NOT_RECORDED_REJECTIONS",
    "OUTCOMES",
    "record_row",
    "routing_explanation",
    # retention
    "Retention",
    "apply_retention",
    # usage summaries (TEAM-3)
    "UsageWriter",
    "AttemptUsage",
    "KEPT_DAYS",
    "MAX_MODEL_LABELS",
    "OTHER_MODEL",
    "usage_cutoff",
    "utc_day",
    "UsageReader",
    "COUNTERS",
    "RANGES",
    "weekday",
    # cost (COST-2)
    "RecordCosts",
    "CostLedger",
    "ACCOUNT_COUNTERS",
    "money",
    # where time goes (OPS-13)
    "TimingReader",
    "MAX_TIMED",
    # token budgets (TEAM-4)
    "TokenBudgets",
    "BudgetRule",
    "BudgetState",
    "BudgetPeriod",
    "MAX_RULES",
    "MAX_LIMIT",
    "budget_error",
    "period_bounds",
    "rule_of",
    # reading
    "HistoryReader",
    "HistoryFilter",
    "InvalidFilter",
    "HistoryPage",
    "RecordRow",
    "FilterChoices",
    "Choice",
    "PAGE_SIZE",
    "CHOICES_LIMIT",
    # display
    "record_view",
    "choices_view",
    "personal_routing",
    "compact_request_id",
    "DELETED_ACCOUNT",
    "cache_hit_rate",
    "NO_RATE",
    # the prompt cache (COST-4)
    "hit_rate",
    "weighted_hit_rate",
    "MISS_REASONS",
    "MISS_BELOW",
]
