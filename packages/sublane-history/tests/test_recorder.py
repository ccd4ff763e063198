"""Recording (HIST-1, HIST-2, WAIT-7, STORE-4) and retention (HIST-6) against a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from history_harness import HistoryDb

from sublane_core import create_db_engine, signals
from sublane_history import HistoryRecorder, Retention, UsageWriter, record_row
from sublane_history._rows import _MAX_ROUTING_TEXTS, _ROUTING_TEXTS, RECORD_COLUMNS, record_values
from sublane_history._tables import RECORDS

Payload = Callable[..., signals.RequestFinished]
DAY = 86_400.0

HIST_2_COLUMNS = {
    "id", "request_id", "started_at", "duration_ms", "first_token_ms", "user_id", "key_id", "group_id",
    "account_id", "provider", "model", "protocol", "operation", "outcome", "error_code", "upstream_status",
    "input_tokens", "output_tokens", "cached_tokens", "routing",
    "served_model",  # the model an alias was served as (ALIAS-1)
    "cache_miss_reason",  # why a later turn missed the prompt cache (COST-4)
    "cache_write_tokens", "cost_usd",  # COST-2
    "timing",  # where time went (OPS-13)
}  # fmt: skip


def _rows(db: HistoryDb) -> list[dict[str, Any]]:
    with db.engine.connect() as connection:
        result = connection.execute(sa.text("SELECT * FROM request_records ORDER BY id"))
        return [dict(row) for row in result.mappings()]


def _ids(db: HistoryDb) -> list[int]:
    return [row["id"] for row in _rows(db)]


def _recorder(db: HistoryDb, **options: Any) -> HistoryRecorder:
    retention = options.pop("retention", Retention())
    return HistoryRecorder(db.engine, db.clock, retention, **options)


def test_hist_2_rows_hold_exactly_the_hist_2_fields(history_db: HistoryDb, make_payload: Payload) -> None:
    with history_db.engine.connect() as connection:
        columns = {column["name"] for column in sa.inspect(connection).get_columns("request_records")}
    assert columns == HIST_2_COLUMNS
    payload = make_payload()
    assert set(record_row(payload)) == HIST_2_COLUMNS - {"id"}
    recorder = _recorder(history_db)
    recorder.write([payload])
    [row] = _rows(history_db)
    assert row["request_id"] == payload.request_id and row["started_at"] == payload.started_at
    assert (row["user_id"], row["key_id"], row["group_id"], row["account_id"]) == (2, 2, 1, 1)
    assert (row["outcome"], row["upstream_status"], row["error_code"]) == ("success", 200, None)
    assert (row["input_tokens"], row["output_tokens"], row["cached_tokens"]) == (1000, 50, 875)
    assert row["routing"] == '{"rule": "uniform_rotation", "candidates": 2, "excluded": {"cooldown": 1}}'


def test_hist_2_counts_that_were_not_reported_stay_null(history_db: HistoryDb, make_payload: Payload) -> None:
    recorder = _recorder(history_db)
    recorder.write(
        [
            make_payload(input_tokens=None, output_tokens=None, cached_tokens=None, first_token_ms=None),
            make_payload(input_tokens=True, output_tokens=-3, cached_tokens=0),
        ]
    )
    first, second = _rows(history_db)
    assert (first["input_tokens"], first["output_tokens"], first["cached_tokens"]) == (None, None, None)
    assert first["first_token_ms"] is None
    assert (second["input_tokens"], second["output_tokens"], second["cached_tokens"]) == (None, None, 0)


def test_hist_2_error_codes_are_sanitized_and_routing_keeps_only_rule_and_counts(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    routing = {
        "rule": "kept_binding",
        "candidates": 1,
        "excluded": {"capacity": 2, "unavailable": "many"},
        "candidate_accounts": ["plus-1", "pro-2"],
        "token": "sk-secret-value-0123456789",
    }
    recorder = _recorder(history_db)
    recorder.write(
        [
            make_payload(outcome="error", error_code="Bearer abc.def ghi", routing=routing),
            make_payload(outcome="error", error_code="upstream_stream_error", model="m" * 300),
            make_payload(outcome="exploded", upstream_status=99999),
        ]
    )
    first, second, third = _rows(history_db)
    assert first["error_code"] == "unknown_error"
    assert first["routing"] == '{"rule": "kept_binding", "candidates": 1, "excluded": {"capacity": 2}}'
    assert second["error_code"] == "upstream_stream_error" and len(second["model"]) == 128
    assert third["outcome"] == "error" and third["upstream_status"] is None


def test_hist_1_workspace_admission_rejections_are_not_recorded(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db)
    recorder.start()
    for code in ("workspace_busy", "member_busy"):
        recorder.record(make_payload(outcome="rejected", error_code=code, account_id=None, routing=None))
    assert recorder.flush()
    recorder.close()
    assert [row["error_code"] for row in _rows(history_db)] == ["member_busy"]


def test_wait_7_recording_only_queues_and_the_writer_keeps_the_order(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db, batch_size=7)
    payloads = [make_payload() for _ in range(40)]
    started = time.perf_counter()
    for payload in payloads:
        recorder.record(payload)
    assert time.perf_counter() - started < 0.05
    assert _rows(history_db) == []  # nothing touched the database on the request path
    recorder.start()
    assert recorder.flush()
    rows = _rows(history_db)
    assert [row["request_id"] for row in rows] == [payload.request_id for payload in payloads]
    assert [row["id"] for row in rows] == sorted(row["id"] for row in rows)
    recorder.close()
    assert recorder.dropped == recorder.failed == 0


def test_a_full_queue_drops_records_instead_of_blocking(
    history_db: HistoryDb, make_payload: Payload, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = _recorder(history_db, queue_size=2)
    started = time.perf_counter()
    for _ in range(5):
        recorder.record(make_payload())
    assert time.perf_counter() - started < 0.05
    assert recorder.dropped == 3
    assert "history queue full" in caplog.text
    recorder.start()
    assert recorder.flush()
    recorder.close()
    assert len(_rows(history_db)) == 2


def test_records_sent_from_another_apps_event_loop_are_ignored(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db)
    mine, theirs = make_payload(), make_payload()

    async def own_loop() -> None:
        recorder.start()
        recorder.record(mine)

    async def other_loop() -> None:
        recorder.record(theirs)

    asyncio.run(own_loop())
    asyncio.run(other_loop())
    recorder.record(make_payload(request_id="req_fromathread"))  # no event loop: taken
    assert recorder.flush()
    recorder.close()
    assert [row["request_id"] for row in _rows(history_db)] == [mine.request_id, "req_fromathread"]


def test_hist_6_keeps_at_most_5000_records(history_db: HistoryDb, make_payload: Payload) -> None:
    recorder = _recorder(history_db)
    payloads = [make_payload() for _ in range(5001)]
    for start in range(0, 5001, 500):
        recorder.write(payloads[start : start + 500])
    ids = _ids(history_db)
    assert len(ids) == 5000 and ids[0] == 2 and ids[-1] == 5001  # the oldest one went


def test_hist_6_records_older_than_7_days_go_at_7_days_and_1_second(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    clock = history_db.clock
    recorder = _recorder(history_db)
    recorder.write([make_payload(started_at=clock.time())])
    clock.advance(7 * DAY)
    recorder.write([])  # cleanup on write: exactly 7 days old is still within 7 days
    assert len(_ids(history_db)) == 1
    clock.advance(1)
    recorder.write([make_payload(started_at=clock.time())])
    assert _ids(history_db) == [2]


def test_hist_6_ids_stay_monotonic_after_cleanup(history_db: HistoryDb, make_payload: Payload) -> None:
    clock = history_db.clock
    recorder = _recorder(history_db, retention=Retention(max_records=2, days=1))
    recorder.write([make_payload() for _ in range(3)])
    assert _ids(history_db) == [2, 3]
    clock.advance(DAY + 1)
    recorder.write([])
    assert _ids(history_db) == []  # everything expired: the newest IDs are gone too
    recorder.write([make_payload(started_at=clock.time())])
    assert _ids(history_db) == [4]  # never reused


def test_store_4_failed_writes_are_logged_sanitized_and_never_raised(
    history_db: HistoryDb, make_payload: Payload, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A repeated request ID costs only that record; the rest of the batch is kept.
    recorder = _recorder(history_db, batch_size=10)
    duplicate = make_payload()
    for payload in (make_payload(), duplicate, duplicate, make_payload()):
        recorder.record(payload)
    recorder.start()
    assert recorder.flush()
    recorder.close()
    assert len(_rows(history_db)) == 3 and recorder.failed == 1
    # A database that cannot take records: logged by type, nothing raised on the request path.
    broken = create_db_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    failing = HistoryRecorder(broken, history_db.clock)
    failing.start()
    failing.record(make_payload(model="sk-live-abcdefghijklmnopqrstuvwxyz"))
    assert failing.flush()
    failing.close()
    broken.dispose()
    assert failing.failed == 1
    assert "could not store 1 request record(s): OperationalError" in caplog.text
    assert "sk-live" not in caplog.text


def test_ops_1_a_lone_surrogate_costs_no_record_of_the_batch(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    # Found by probing: a model name "\ud800" failed the SQLite write and the whole batch vanished.
    recorder = _recorder(history_db, batch_size=10)
    payloads = [make_payload(), make_payload(model="gpt-\ud800", request_id="req_\udfff"), make_payload()]
    for payload in payloads:
        recorder.record(payload)
    recorder.start()
    assert recorder.flush()
    recorder.close()
    rows = _rows(history_db)
    assert len(rows) == 3 and recorder.failed == 0
    assert rows[1]["model"] == "gpt-?" and rows[1]["request_id"] == "req_?"


def test_ops_1_a_lone_surrogate_costs_no_record_or_usage_with_summaries_on(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    # Found by probing: with usage summaries on (as the gateway runs), the model label kept its
    # surrogate and the row's write failed with UnicodeEncodeError: the record was gone.
    recorder = _recorder(history_db, batch_size=10, usage=UsageWriter())
    payloads = [make_payload(), make_payload(model="claude-\ud800", request_id="req_x"), make_payload()]
    for payload in payloads:
        recorder.record(payload)
    recorder.start()
    assert recorder.flush()
    recorder.close()
    rows = _rows(history_db)
    assert len(rows) == 3 and recorder.failed == 0
    with history_db.engine.connect() as connection:
        labels = {row[0] for row in connection.execute(sa.text("SELECT model FROM usage_days"))}
    assert "claude-?" in labels


def test_ops_2_a_database_locked_for_seconds_loses_no_record(
    history_db: HistoryDb, make_payload: Payload, caplog: pytest.LogCaptureFixture
) -> None:
    # Another writer holds the database far longer than the writer's busy timeout (50 ms here, so
    # the test stays quick): the batch is kept and retried with backoff, then lands whole.
    url = f"sqlite:///{history_db.path}"
    quick = sa.create_engine(url, connect_args={"timeout": 0.05})
    recorder = HistoryRecorder(quick, history_db.clock, Retention(), batch_size=10)
    recorder.start()
    holder = sa.create_engine(url, connect_args={"timeout": 0})
    connection = holder.connect()
    connection.exec_driver_sql("BEGIN IMMEDIATE")
    try:
        for _ in range(5):
            recorder.record(make_payload())
        time.sleep(1.0)
        assert _count_rows(history_db.path) == 0  # still locked: nothing written, nothing dropped
        assert "history write failed (OperationalError); retrying 5 record(s)" in caplog.text
    finally:
        connection.exec_driver_sql("ROLLBACK")
        connection.close()
        holder.dispose()
    assert recorder.flush(timeout=10)
    recorder.close()
    quick.dispose()
    assert len(_rows(history_db)) == 5 and recorder.failed == 0 and recorder.dropped == 0


def test_ops_2_the_backlog_is_bounded_and_what_falls_past_it_is_counted(
    history_db: HistoryDb, make_payload: Payload, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = _recorder(history_db, queue_size=3)
    for _ in range(5):
        recorder.record(make_payload())
    assert recorder.dropped == 2
    assert "history queue full: 1 request record(s) dropped so far" in caplog.text
    recorder.start()
    assert recorder.flush()
    recorder.close()
    assert len(_rows(history_db)) == 3


def _count_rows(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0) as connection:
        try:
            return int(connection.execute("SELECT count(*) FROM request_records").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def test_hist_2_rows_are_stored_as_the_core_insert_and_the_json_type_store_them(
    history_db: HistoryDb, make_payload: Payload, migrated_template: Path, tmp_path: Path
) -> None:
    # The writer runs a statement compiled once with plain tuples (JSON encoded by itself): the
    # stored values and types must be what `insert(request_records)` with the JSON type writes.
    payloads = [
        make_payload(),
        make_payload(routing=None, account_id=None, provider=None, outcome="rejected", error_code="capacity"),
        make_payload(routing={"rule": "règle ✓", "candidates": 0, "excluded": {"quota ✗": 2, "policy": 0}}),
        make_payload(routing={"rule": "none", "refused": "quota_exhausted", "parent": "unknown", "x": [1]}),
        make_payload(routing={"excluded": {}}, model="gpt-\ud800", upstream_status=None, first_token_ms=None),
        make_payload(routing="not a mapping", input_tokens=True, output_tokens=-1, cached_tokens=None),
    ]
    _recorder(history_db).write(payloads)
    core_path = tmp_path / "core.db"
    core_path.write_bytes(migrated_template.read_bytes())
    core = create_db_engine(f"sqlite:///{core_path}")
    try:
        with core.begin() as connection:
            connection.execute(sa.insert(RECORDS), [record_row(payload) for payload in payloads])
        types = "typeof(started_at), typeof(routing), typeof(duration_ms)"
        query = f"SELECT *, {types} FROM request_records ORDER BY id"  # noqa: S608
        with core.connect() as connection:
            expected = [tuple(row) for row in connection.exec_driver_sql(query)]
        with history_db.engine.connect() as connection:
            stored = [tuple(row) for row in connection.exec_driver_sql(query)]
    finally:
        core.dispose()
    assert stored == expected and len(stored) == len(payloads)
    assert stored[1][-3:] == ("real", "text", "integer") and stored[1][19] == "null"


def test_hist_2_routing_json_is_remembered_within_a_bound(make_payload: Payload) -> None:
    for candidates in range(3000):
        routing = {"rule": "uniform_rotation", "candidates": candidates, "excluded": {"cooldown": 1}}
        values = dict(zip(RECORD_COLUMNS, record_values(make_payload(routing=routing)), strict=True))
        assert values["routing"] == json.dumps(routing)
    assert 0 < len(_ROUTING_TEXTS) <= _MAX_ROUTING_TEXTS
    # The same explanation with its exclusions in another order is another text, as json.dumps makes it.
    a = {"rule": "r", "excluded": {"a": 1, "b": 2}}
    b = {"rule": "r", "excluded": {"b": 2, "a": 1}}
    assert record_row(make_payload(routing=a))["routing"] == a
    at = RECORD_COLUMNS.index("routing")
    texts = [record_values(make_payload(routing=routing))[at] for routing in (a, b, a)]
    assert texts == [json.dumps(a), json.dumps(b), json.dumps(a)]


def test_hist_6_the_newest_records_are_kept_when_aged_ones_leave_gaps(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    clock = history_db.clock
    recorder = _recorder(history_db, retention=Retention(max_records=3, days=1))
    old_start = clock.time() - DAY + 10  # ages out 10 s from now
    recorder.write([make_payload(), make_payload(), make_payload(started_at=old_start), make_payload()])
    assert _ids(history_db) == [2, 3, 4]
    clock.advance(11)
    recorder.write([make_payload(started_at=clock.time()), make_payload(started_at=clock.time())])
    # Record 3 aged out (a gap in the IDs); of 2, 4, 5 and 6 the newest three stay.
    assert _ids(history_db) == [4, 5, 6]


def test_hist_6_the_writer_keeps_exactly_the_limit_batch_after_batch(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db, retention=Retention(max_records=50, days=1))
    for size in (1, 49, 1, 7, 60, 3, 0, 100):
        recorder.write([make_payload() for _ in range(size)])
        ids = _ids(history_db)
        assert len(ids) == min(50, ids[-1]) and ids == list(range(ids[-1] - len(ids) + 1, ids[-1] + 1))


def test_ops_2_the_writer_thread_holds_one_connection_and_lets_it_go(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    recorder = _recorder(history_db, batch_size=5)
    recorder.start()
    for _ in range(3):
        for _ in range(12):
            recorder.record(make_payload())
        assert recorder.flush()
    pool: Any = history_db.engine.pool
    assert pool.checkedout() == 1  # kept from batch to batch, idle between them
    recorder.close()
    assert pool.checkedout() == 0 and len(_rows(history_db)) == 36


def _webhook(db: HistoryDb, events: list[str]) -> None:
    from sqlmodel import Session

    from sublane_core import Webhook

    with Session(db.engine) as session:
        session.add(
            Webhook(url="http://hooks.test/a", events=events, secret=b"sealed", created_at=0, updated_at=0)
        )
        session.commit()


def _outbox_rows(db: HistoryDb) -> list[dict[str, Any]]:
    with db.engine.connect() as connection:
        result = connection.execute(sa.text("SELECT event, payload FROM webhook_deliveries ORDER BY id"))
        return [dict(row) for row in result.mappings()]


def test_alert_2_dropped_records_are_told_with_the_next_written_ones_at_most_every_10_minutes(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    from sublane_core import AlertOutbox
    from sublane_history._recorder import LOSS_ALERT_EVERY_S

    _webhook(history_db, ["history.dropped"])
    recorder = _recorder(history_db, queue_size=2, outbox=AlertOutbox("Team", history_db.clock))
    for _ in range(5):
        recorder.record(make_payload())
    assert _outbox_rows(history_db) == []  # the request path only counts
    recorder.start()
    assert recorder.flush()
    [told] = _outbox_rows(history_db)
    document = json.loads(told["payload"])
    assert told["event"] == "history.dropped" and document["workspace"] == "Team"
    assert document["data"] == {"dropped": 3, "dropped_total": 3}
    recorder.dropped += 2  # two more lost (as a full queue counts them) within the 10 minutes
    recorder.record(make_payload())
    assert recorder.flush()
    assert len(_outbox_rows(history_db)) == 1  # not told yet
    history_db.clock.advance(LOSS_ALERT_EVERY_S)
    recorder.record(make_payload())
    assert recorder.flush()
    recorder.close()
    rows = _outbox_rows(history_db)
    assert len(rows) == 2  # told with the first write after the 10 minutes
    assert json.loads(rows[1]["payload"])["data"] == {"dropped": 2, "dropped_total": 5}
