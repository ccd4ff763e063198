"""Usage summaries (TEAM-3) against a real SQLite file, on a fake clock.

The fake clock starts at 2027-01-15 08:00 UTC, a Friday.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from history_harness import HistoryDb

from sublane_core import signals
from sublane_history import (
    KEPT_DAYS,
    MAX_MODEL_LABELS,
    OTHER_MODEL,
    HistoryRecorder,
    UsageReader,
    UsageWriter,
    utc_day,
    weekday,
)

Payload = Callable[..., signals.RequestFinished]
DAY = 86_400
FRIDAY = 4


def _at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> float:
    return dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.UTC).timestamp()


def _recorder(db: HistoryDb, **options: Any) -> HistoryRecorder:
    return HistoryRecorder(db.engine, db.clock, usage=UsageWriter(), **options)


def _days(db: HistoryDb) -> list[dict[str, Any]]:
    with db.engine.connect() as connection:
        result = connection.execute(sa.text("SELECT * FROM usage_days ORDER BY day, user_id, model"))
        return [dict(row) for row in result.mappings()]


def _hours(db: HistoryDb) -> list[dict[str, Any]]:
    with db.engine.connect() as connection:
        result = connection.execute(sa.text("SELECT * FROM usage_hours ORDER BY day, hour, user_id"))
        return [dict(row) for row in result.mappings()]


def _move_to(db: HistoryDb, moment: float) -> None:
    db.clock.advance(moment - db.clock.time())


def test_team_3_the_fake_clock_starts_on_a_friday(history_db: HistoryDb) -> None:
    assert dt.datetime.fromtimestamp(history_db.clock.time(), dt.UTC) == dt.datetime(
        2027, 1, 15, 8, tzinfo=dt.UTC
    )
    assert weekday(utc_day(history_db.clock.time())) == FRIDAY


def test_team_3_daily_buckets_cross_utc_midnight(history_db: HistoryDb, make_payload: Payload) -> None:
    before, after = _at(2027, 1, 15, 23, 59, 59), _at(2027, 1, 16, 0, 0, 1)
    _move_to(history_db, after + 5)
    _recorder(history_db).write(
        [
            make_payload(started_at=before, input_tokens=100, output_tokens=10, cached_tokens=50),
            make_payload(started_at=before + 0.5, input_tokens=200, output_tokens=20, cached_tokens=0),
            make_payload(started_at=after, input_tokens=7, output_tokens=3, cached_tokens=None),
        ]
    )
    friday, saturday = _days(history_db)
    assert (friday["day"], saturday["day"]) == (_at(2027, 1, 15), _at(2027, 1, 16))
    assert (friday["requests"], friday["input_tokens"], friday["output_tokens"], friday["cached_tokens"]) == (
        2,
        300,
        30,
        50,
    )
    assert (saturday["requests"], saturday["input_tokens"], saturday["cached_tokens"]) == (1, 7, None)
    assert [(row["day"], row["hour"], row["requests"], row["tokens"]) for row in _hours(history_db)] == [
        (_at(2027, 1, 15), 23, 2, 330),
        (_at(2027, 1, 16), 0, 1, 10),
    ]
    summary = UsageReader(history_db.engine, history_db.clock).summary(7, viewer_id=2)
    assert summary["range"] == {"from": _at(2027, 1, 10), "until": _at(2027, 1, 17), "days": 7}
    assert [day["day"] for day in summary["by_day"]][-2:] == ["2027-01-15", "2027-01-16"]
    assert [day["requests"] for day in summary["by_day"]] == [0, 0, 0, 0, 0, 2, 1]
    assert summary["by_day"][0]["input_tokens"] is None  # an empty day has no known tokens
    assert summary["heatmap"][FRIDAY][23] == 2 and summary["heatmap"][FRIDAY + 1][0] == 1
    assert summary["heatmap_tokens"][FRIDAY][23] == 330
    assert sum(map(sum, summary["heatmap"])) == 3


def test_team_3_daily_buckets_cross_a_month_end(history_db: HistoryDb, make_payload: Payload) -> None:
    last, first = _at(2027, 1, 31, 23, 59, 30), _at(2027, 2, 1, 0, 0, 30)
    _move_to(history_db, last)
    recorder = _recorder(history_db)
    recorder.write([make_payload(started_at=last)])
    history_db.clock.advance(60)
    recorder.write([make_payload(started_at=first)])
    reader = UsageReader(history_db.engine, history_db.clock)
    today = reader.summary(1, viewer_id=2)
    assert [day["day"] for day in today["by_day"]] == ["2027-02-01"]
    assert today["totals"]["requests"] == 1
    week = reader.summary(7, viewer_id=2)
    assert [(day["day"], day["requests"]) for day in week["by_day"]][-2:] == [
        ("2027-01-31", 1),
        ("2027-02-01", 1),
    ]
    assert week["heatmap"][6][23] == 1 and week["heatmap"][0][0] == 1  # Sunday night, Monday morning


def test_team_3_at_most_64_model_labels_per_member_a_day(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db)
    models = [f"model-{number:02d}" for number in range(MAX_MODEL_LABELS + 6)]
    recorder.write([make_payload(model=model, input_tokens=10, output_tokens=1) for model in models])
    recorder.write([make_payload(user_id=3, key_id=3, model=model) for model in models[:3]])
    bob = [row for row in _days(history_db) if row["user_id"] == 2]
    labels = {row["model"]: row for row in bob}
    assert len(labels) == MAX_MODEL_LABELS + 1
    assert set(models[:MAX_MODEL_LABELS]) < set(labels)
    assert labels[OTHER_MODEL]["requests"] == 6 and labels[OTHER_MODEL]["input_tokens"] == 60
    # A known label keeps counting under its own name; the cap is per member.
    recorder.write([make_payload(model=models[0]), make_payload(user_id=3, key_id=3, model=models[-1])])
    assert {row["model"]: row["requests"] for row in _days(history_db) if row["user_id"] == 2}[models[0]] == 2
    assert models[-1] in {row["model"] for row in _days(history_db) if row["user_id"] == 3}
    # A new writer (a restart) learns the day's labels from the database.
    _recorder(history_db).write([make_payload(model="brand-new"), make_payload(model=models[1])])
    after = {row["model"]: row["requests"] for row in _days(history_db) if row["user_id"] == 2}
    assert "brand-new" not in after and after[OTHER_MODEL] == 7 and after[models[1]] == 2
    # The next UTC day starts with no labels.
    history_db.clock.advance(DAY)
    recorder.write([make_payload(model="brand-new")])
    tomorrow = [row for row in _days(history_db) if row["day"] == utc_day(history_db.clock.time())]
    assert [row["model"] for row in tomorrow] == ["brand-new"]


def test_team_3_buckets_are_kept_90_days_and_cleaned_lazily(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db)
    first_day = utc_day(history_db.clock.time())
    recorder.write([make_payload()])
    history_db.clock.advance((KEPT_DAYS - 1) * DAY)
    recorder.write([make_payload()])
    assert _days(history_db)[0]["day"] == first_day  # 89 days old: still kept
    reader = UsageReader(history_db.engine, history_db.clock)
    assert reader.summary(90, viewer_id=2)["totals"]["requests"] == 2
    history_db.clock.advance(DAY)
    assert reader.summary(90, viewer_id=2)["totals"]["requests"] == 1  # out of range before cleanup
    assert len(_days(history_db)) == 2  # lazily: nothing was written yet on the new day
    recorder.write([make_payload()])
    assert first_day not in {row["day"] for row in _days(history_db)}
    assert first_day not in {row["day"] for row in _hours(history_db)}
    assert reader.summary(90, viewer_id=2)["totals"]["requests"] == 2


def test_team_3_unknown_counts_stay_unknown(history_db: HistoryDb, make_payload: Payload) -> None:
    recorder = _recorder(history_db)
    recorder.write([make_payload(input_tokens=None, output_tokens=None, cached_tokens=None, outcome="error")])
    reader = UsageReader(history_db.engine, history_db.clock)
    totals = reader.summary(1, viewer_id=2)["totals"]
    assert (totals["input_tokens"], totals["output_tokens"], totals["cached_tokens"]) == (None, None, None)
    assert (totals["requests"], totals["error"], totals["unknown_usage_requests"]) == (1, 1, 1)
    recorder.write(
        [
            make_payload(input_tokens=40, output_tokens=None, cached_tokens=None),  # half known: unknown
            make_payload(input_tokens=60, output_tokens=6, cached_tokens=None),
            # Refused before routing: never sent upstream, so it used nothing, knowingly.
            make_payload(
                account_id=None, provider=None, input_tokens=None, output_tokens=None, outcome="rejected"
            ),
        ]
    )
    totals = reader.summary(1, viewer_id=2)["totals"]
    assert (totals["input_tokens"], totals["output_tokens"], totals["cached_tokens"]) == (100, 6, 0)
    assert (totals["requests"], totals["rejected"], totals["unknown_usage_requests"]) == (4, 1, 2)
    providers = {row["provider"]: row["requests"] for row in reader.summary(1)["by_provider"]}
    assert providers == {"codex": 3, None: 1}


def test_team_3_outcomes_and_breakdowns(history_db: HistoryDb, make_payload: Payload) -> None:
    recorder = _recorder(history_db)
    payloads = [make_payload(outcome=outcome) for outcome in ("success", "incomplete", "canceled", "made-up")]
    payloads += [make_payload(user_id=3, key_id=3, model="gpt-5", input_tokens=5000, output_tokens=500)]
    payloads += [
        make_payload(user_id=3, key_id=3, group_id=None, model="gpt-5", input_tokens=1, output_tokens=1)
    ]
    recorder.write(payloads)
    team = UsageReader(history_db.engine, history_db.clock).summary(30)
    assert {name: team["totals"][name] for name in ("success", "incomplete", "error", "canceled")} == {
        "success": 3,
        "incomplete": 1,
        "error": 1,  # an outcome not in HIST-2 is stored as an error
        "canceled": 1,
    }
    assert [row["model"] for row in team["by_model"]] == ["gpt-5", "gpt-5-codex"]  # most tokens first
    assert [(row["user_id"], row["username"]) for row in team["by_member"]] == [(3, "carol"), (2, "bob")]
    assert [(row["group_id"], row["group_name"], row["requests"]) for row in team["by_group"]] == [
        (1, "default", 5),
        (None, None, 1),
    ]
    assert team["totals"]["input_tokens"] == 4 * 1000 + 5001


def test_team_3_a_personal_summary_holds_only_the_viewer_and_no_members(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db)
    recorder.write([make_payload(), make_payload(user_id=3, key_id=3, model="carol-only", input_tokens=9)])
    reader = UsageReader(history_db.engine, history_db.clock)
    bob = reader.summary(30, viewer_id=2, user_id=3)  # a user_id cannot widen a personal summary
    assert "by_member" not in bob
    assert bob["totals"]["requests"] == 1 and [row["model"] for row in bob["by_model"]] == ["gpt-5-codex"]
    carol = reader.summary(30, user_id=3)
    assert carol["totals"]["input_tokens"] == 9 and [row["user_id"] for row in carol["by_member"]] == [3]
    with pytest.raises(ValueError, match="days must be one of"):
        reader.summary(14)


def test_team_3_summaries_are_added_in_the_records_transaction(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db)
    first = make_payload()
    recorder.write([first])
    # A batch with a repeated request ID fails as a whole; the writer then stores the others one by one.
    recorder._write_safely([first, make_payload(), make_payload()])
    [bucket] = _days(history_db)
    assert bucket["requests"] == 3  # the repeated attempt was neither recorded nor counted again
    with history_db.engine.connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM request_records")).scalar_one() == 3


def test_team_3_summaries_do_not_need_request_records(history_db: HistoryDb, make_payload: Payload) -> None:
    recorder = _recorder(history_db, records=False)  # SUBLANE_HISTORY_ENABLED=false
    recorder.write([make_payload(), make_payload()])
    assert _days(history_db)[0]["requests"] == 2
    with history_db.engine.connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM request_records")).scalar_one() == 0


def test_team_3_the_writer_thread_accumulates_what_the_request_path_queued(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db)
    recorder.start()
    try:
        for _ in range(25):
            recorder.record(make_payload())
        recorder.record(make_payload(outcome="rejected", error_code="workspace_busy"))  # not recorded
        assert recorder.flush()
    finally:
        recorder.close()
    assert _days(history_db)[0]["requests"] == 25
    assert _hours(history_db)[0]["requests"] == 25
