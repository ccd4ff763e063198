"""COST-4 in the records and the usage summaries: the cache hit rate (``null`` without cache
figures, never 0), the miss reason stored with the record, and token-weighted hit rates per
member, model, account and day. A real SQLite file on a fake clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from history_harness import HistoryDb

from sublane_core import signals
from sublane_history import (
    MISS_REASONS,
    HistoryFilter,
    HistoryReader,
    HistoryRecorder,
    Retention,
    UsageReader,
    UsageWriter,
    hit_rate,
    record_view,
)

Payload = Callable[..., signals.RequestFinished]


def _write(db: HistoryDb, payloads: list[signals.RequestFinished]) -> None:
    HistoryRecorder(db.engine, db.clock, usage=UsageWriter()).write(payloads)


def _views(db: HistoryDb) -> list[dict[str, object]]:
    reader = HistoryReader(db.engine, db.clock, Retention())
    return [record_view(row, personal=False) for row in reader.page(HistoryFilter(), viewer_id=None).items]


@pytest.mark.parametrize(
    ("input_tokens", "cached_tokens", "rate"),
    [(1000, 875, 0.875), (1000, 0, 0.0), (1000, None, None), (None, 10, None), (0, 0, None), (5, 6, None)],
)
def test_cost_4_hit_rate_is_cached_over_input(
    input_tokens: int | None, cached_tokens: int | None, rate: float | None
) -> None:
    assert hit_rate(input_tokens, cached_tokens) == rate


def test_cost_4_hit_rate_null_without_cache_figures(history_db: HistoryDb, make_payload: Payload) -> None:
    _write(
        history_db,
        [
            make_payload(cached_tokens=None),  # the upstream reported no cache figure
            make_payload(cached_tokens=0, cache_miss_reason="first_turn"),
        ],
    )
    missed, unreported = _views(history_db)  # newest first
    assert unreported["cache"] == {"hit_rate": None, "miss_reason": None}
    assert missed["cache"] == {"hit_rate": 0.0, "miss_reason": "first_turn"}
    summary = UsageReader(history_db.engine, history_db.clock).summary(1)
    assert summary["totals"]["hit_rate"] == 0.0  # only the attempt with cache figures counts


def test_cost_4_miss_reason_is_stored_only_from_the_known_set(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    _write(
        history_db,
        [make_payload(cached_tokens=1, cache_miss_reason=reason) for reason in (*MISS_REASONS, "made-up")],
    )
    stored = [view["cache"]["miss_reason"] for view in _views(history_db)]  # type: ignore[index]
    assert sorted(stored, key=str) == sorted([*MISS_REASONS, None], key=str)


def test_cost_4_summaries_token_weighted(history_db: HistoryDb, make_payload: Payload) -> None:
    """Σcached ÷ Σinput over the attempts with cache figures, per member, model, account and day —
    not the mean of the attempts' rates (which would be 0.5 here)."""
    _write(
        history_db,
        [
            make_payload(input_tokens=9000, cached_tokens=9000),  # rate 1.0
            make_payload(input_tokens=1000, cached_tokens=0, account_id=2),  # rate 0.0
            make_payload(input_tokens=5000, cached_tokens=None),  # no figures: left out
            make_payload(user_id=3, key_id=3, model="gpt-5", input_tokens=400, cached_tokens=100),
            make_payload(user_id=3, key_id=3, model="silent", cached_tokens=None),
        ],
    )
    summary = UsageReader(history_db.engine, history_db.clock).summary(7)
    assert summary["totals"]["hit_rate"] == round(9100 / 10400, 4)
    members = {row["user_id"]: row["hit_rate"] for row in summary["by_member"]}
    assert members == {2: 0.9, 3: 0.25}
    models = {row["model"]: row["hit_rate"] for row in summary["by_model"]}
    assert models == {"gpt-5-codex": 0.9, "gpt-5": 0.25, "silent": None}
    accounts = {
        row["account_name"]: (row["hit_rate"], row["input_tokens"]) for row in summary["cache_by_account"]
    }
    assert accounts == {"plus-1": (round(9100 / 9400, 4), 9400), "pro-2": (0.0, 1000)}
    days = [row["hit_rate"] for row in summary["by_day"]]
    assert days[:-1] == [None] * 6 and days[-1] == round(9100 / 10400, 4)
    personal = UsageReader(history_db.engine, history_db.clock).summary(7, viewer_id=3)
    assert personal["totals"]["hit_rate"] == 0.25 and "cache_by_account" not in personal
