"""Reading history: scoping (HIST-7), filters and pages (HIST-8), cleanup on read (HIST-6), deleted
accounts (HIST-9), the compact ID (HIST-11) and the record shape, against a real SQLite file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from history_harness import HistoryDb

from sublane_core import signals
from sublane_history import (
    CHOICES_LIMIT,
    PAGE_SIZE,
    HistoryFilter,
    HistoryReader,
    HistoryRecorder,
    InvalidFilter,
    Retention,
    choices_view,
    compact_request_id,
    record_view,
)

Payload = Callable[..., signals.RequestFinished]
DAY = 86_400.0
RECORD_FIELDS = [
    "id", "request_id", "started_at", "duration_ms", "first_token_ms", "user_id", "username", "key_id",
    "key_name", "group_id", "account_id", "account_name", "provider", "model", "protocol", "operation",
    "outcome", "error_code", "upstream_status", "input_tokens", "output_tokens", "cached_tokens",
    "cache_hit_rate", "routing",
]  # fmt: skip


def _store(db: HistoryDb, payloads: list[signals.RequestFinished]) -> None:
    HistoryRecorder(db.engine, db.clock).write(payloads)


def _reader(db: HistoryDb) -> HistoryReader:
    return HistoryReader(db.engine, db.clock, Retention())


def _ids(reader: HistoryReader, viewer_id: int | None = None, **filters: Any) -> list[int]:
    return [row.id for row in reader.page(HistoryFilter(**filters), viewer_id=viewer_id).items]


def vars_of(filters: HistoryFilter) -> dict[str, Any]:
    return {name: getattr(filters, name) for name in HistoryFilter.__dataclass_fields__}


def test_hist_7_personal_scope_applies_in_sql_before_pagination(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    _store(history_db, [make_payload() for _ in range(10)])  # bob's, IDs 1-10
    _store(history_db, [make_payload(user_id=3, key_id=3) for _ in range(60)])  # carol's, newer
    reader = _reader(history_db)
    page = reader.page(HistoryFilter(), viewer_id=2)
    assert [row.id for row in page.items] == list(range(10, 0, -1)) and page.next_cursor is None
    # Neither a filter, a cursor nor a parameter reaches carol's rows.
    assert _ids(reader, 2, key_id=3) == [] and _ids(reader, 2, user_id=3) == []
    assert _ids(reader, 2, cursor=70) == list(range(10, 0, -1))
    carols = reader.page(HistoryFilter(), viewer_id=3).items[0]
    assert reader.get(carols.request_id, viewer_id=2) is None
    assert reader.get(carols.request_id, viewer_id=3) is not None
    assert reader.get(carols.request_id, viewer_id=None) is not None
    member = HistoryFilter.from_query({"user_id": "3", "account_id": "2", "scope": "all"}, admin=False)
    assert member == HistoryFilter()


def test_hist_8_pages_of_50_follow_the_cursor(history_db: HistoryDb, make_payload: Payload) -> None:
    _store(history_db, [make_payload() for _ in range(120)])
    reader = _reader(history_db)
    seen: list[int] = []
    cursor: str | None = None
    sizes = []
    while True:
        query = {"cursor": cursor} if cursor is not None else {}
        page = reader.page(HistoryFilter.from_query(query, admin=True), viewer_id=None)
        sizes.append(len(page.items))
        seen += [row.id for row in page.items]
        if page.next_cursor is None:
            break
        assert page.next_cursor == str(page.items[-1].id)
        cursor = page.next_cursor
    assert PAGE_SIZE == 50 and sizes == [50, 50, 20]
    assert seen == list(range(120, 0, -1))
    exactly = _reader(history_db).page(HistoryFilter(cursor=51), viewer_id=None)
    assert len(exactly.items) == 50 and exactly.next_cursor is None  # no empty last page


def test_hist_8_every_filter_narrows(history_db: HistoryDb, make_payload: Payload) -> None:
    clock = history_db.clock
    t0 = clock.time() - 1000
    _store(
        history_db,
        [
            make_payload(started_at=t0, request_id="req_a"),
            make_payload(started_at=t0 + 1, request_id="req_b", outcome="error", error_code="upstream_error"),
            make_payload(started_at=t0 + 2, request_id="req_c", model="gpt-5"),
            make_payload(started_at=t0 + 3, request_id="req_d", user_id=3, key_id=3, account_id=2),
            make_payload(started_at=t0 + 4, request_id="req_e", outcome="rejected", account_id=None),
        ],
    )
    reader = _reader(history_db)
    assert _ids(reader, outcome="error") == [2]
    assert _ids(reader, outcome="rejected") == [5]
    assert _ids(reader, model="gpt-5") == [3]
    assert _ids(reader, model="gpt-5-cod") == []  # exact, not a prefix
    assert _ids(reader, key_id=3) == [4]
    assert _ids(reader, request_id="req_b") == [2]
    assert _ids(reader, user_id=3) == [4]
    assert _ids(reader, account_id=2) == [4]
    assert _ids(reader, account_id=1) == [3, 2, 1]
    assert _ids(reader, 2, outcome="success", model="gpt-5-codex") == [1]


def test_hist_8_from_is_inclusive_and_until_exclusive(history_db: HistoryDb, make_payload: Payload) -> None:
    t0 = float(int(history_db.clock.time()) - 600)
    _store(history_db, [make_payload(started_at=t0 + offset) for offset in (0, 100, 200, 300)])
    reader = _reader(history_db)
    query = {"from": str(int(t0 + 100)), "until": str(int(t0 + 300))}
    assert _ids(reader, **vars_of(HistoryFilter.from_query(query, admin=False))) == [3, 2]
    assert _ids(reader, since=t0 + 100.5) == [4, 3]
    assert _ids(reader, until=t0 + 0.0) == []
    assert _ids(reader, since=t0 + 300, until=t0 + 300) == []  # an empty interval is fine


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("cursor", "abc"),
        ("cursor", "-1"),
        ("cursor", "1.5"),
        ("cursor", "0"),
        ("cursor", "99999999999999999999"),
        ("outcome", "won"),
        ("from", "yesterday"),
        ("until", "nan"),
        ("key_id", "x"),
        ("model", "m" * 129),
        ("request_id", "r" * 65),
    ],
)
def test_hist_8_bad_filter_values_are_refused(name: str, value: str) -> None:
    with pytest.raises(InvalidFilter, match=name):
        HistoryFilter.from_query({name: value}, admin=True)


def test_hist_8_empty_values_mean_any() -> None:
    query = {"cursor": "", "outcome": " ", "model": "", "from": "", "until": "", "key_id": ""}
    assert HistoryFilter.from_query(query, admin=True) == HistoryFilter()
    assert HistoryFilter.from_query({"account_id": "x"}, admin=False) == HistoryFilter()  # ignored, not read


def test_hist_6_cleanup_runs_on_read_too(history_db: HistoryDb, make_payload: Payload) -> None:
    clock = history_db.clock
    _store(history_db, [make_payload(started_at=clock.time()), make_payload(started_at=clock.time() + 5)])
    clock.advance(7 * DAY + 1)
    reader = _reader(history_db)
    assert _ids(reader) == [2]
    with history_db.engine.connect() as connection:
        assert connection.execute(sa.text("SELECT id FROM request_records")).scalars().all() == [2]
    limited = HistoryReader(history_db.engine, clock, Retention(max_records=1))
    _store(history_db, [make_payload(started_at=clock.time())])
    assert [row.id for row in limited.page(HistoryFilter(), viewer_id=None).items] == [3]


def test_record_view_has_the_spec_14_fields(history_db: HistoryDb, make_payload: Payload) -> None:
    _store(history_db, [make_payload()])
    row = _reader(history_db).page(HistoryFilter(), viewer_id=None).items[0]
    admin = record_view(row, personal=False)
    in_order = [name for name in admin if name in RECORD_FIELDS]
    assert in_order == RECORD_FIELDS  # the SPEC §14 order; extra fields come along
    assert admin["username"] == "bob" and admin["key_name"] == "bob-laptop"
    assert (admin["account_id"], admin["account_name"], admin["account_deleted"]) == (1, "plus-1", False)
    assert admin["cache_hit_rate"] == "87.5%"
    assert admin["routing"] == {"rule": "uniform_rotation", "candidates": 2, "excluded": {"cooldown": 1}}


def test_hist_7_personal_views_blank_the_account(history_db: HistoryDb, make_payload: Payload) -> None:
    _store(history_db, [make_payload()])
    row = _reader(history_db).page(HistoryFilter(), viewer_id=2).items[0]
    personal = record_view(row, personal=True)
    assert set(RECORD_FIELDS) <= set(personal)
    assert personal["account_id"] is None and personal["account_name"] is None
    assert "account_deleted" not in personal
    assert personal["routing"] == {"rule": "uniform_rotation", "candidates": 2, "excluded": {"cooldown": 1}}
    assert "plus-1" not in repr(personal)


def test_hist_9_a_deleted_account_renders_as_deleted_and_its_history_stays(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    _store(history_db, [make_payload(account_id=account_id) for account_id in (1, 2, None)])
    with history_db.engine.begin() as connection:
        connection.execute(sa.text("DELETE FROM accounts WHERE id = 1"))
    reader = _reader(history_db)
    rows = reader.page(HistoryFilter(), viewer_id=None).items
    views = {row.id: record_view(row, personal=False) for row in rows}
    assert (views[1]["account_id"], views[1]["account_name"]) == (1, "deleted")
    assert views[1]["account_deleted"] is True
    assert (views[2]["account_name"], views[2]["account_deleted"]) == ("pro-2", False)
    assert (views[3]["account_name"], views[3]["account_deleted"]) == (None, False)  # never routed
    choices = choices_view(reader.choices(viewer_id=None), personal=False)
    assert choices["accounts"] == [{"id": 1, "name": "deleted"}, {"id": 2, "name": "pro-2"}]


def test_hist_8_filter_choices_come_from_retained_history_in_scope(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    clock = history_db.clock
    _store(history_db, [make_payload(model="old-model", started_at=clock.time() - 8 * DAY)])
    _store(history_db, [make_payload(), make_payload(outcome="error", model="gpt-5")])
    _store(history_db, [make_payload(user_id=3, key_id=3, account_id=2, model="carols-model")])
    reader = _reader(history_db)
    bob = choices_view(reader.choices(viewer_id=2), personal=True)
    assert bob == {
        "models": ["gpt-5", "gpt-5-codex"],
        "keys": [{"id": 2, "name": "bob-laptop"}],
        "outcomes": ["success", "error"],
    }
    admin = choices_view(reader.choices(viewer_id=None), personal=False)
    assert admin["models"] == ["carols-model", "gpt-5", "gpt-5-codex"]
    assert admin["keys"] == [{"id": 2, "name": "bob-laptop"}, {"id": 3, "name": "carol-ci"}]
    assert admin["members"] == [{"id": 2, "username": "bob"}, {"id": 3, "username": "carol"}]
    assert admin["accounts"] == [{"id": 1, "name": "plus-1"}, {"id": 2, "name": "pro-2"}]


def test_hist_8_filter_choices_are_bounded(history_db: HistoryDb, make_payload: Payload) -> None:
    _store(history_db, [make_payload(model=f"model-{index:03d}") for index in range(CHOICES_LIMIT + 50)])
    assert len(_reader(history_db).choices(viewer_id=2).models) == CHOICES_LIMIT


def test_hist_11_the_compact_id_keeps_the_random_tail() -> None:
    full = "req_01jz8k3m9x2pq4r5s6t7v8w9xy"
    assert compact_request_id(full) == "req_…t7v8w9xy"
    assert compact_request_id("req_short") == "req_short"
