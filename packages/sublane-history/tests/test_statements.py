"""Statements compiled once per dialect and run with tuples (the history writer's batches)."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from history_harness import HistoryDb

from sublane_core import signals
from sublane_history import HistoryRecorder, UsageWriter
from sublane_history._statements import DriverStatement


def test_values_go_to_their_names_whatever_order_the_driver_wants() -> None:
    statement = DriverStatement(sa.text("SELECT :b, :a, :b"), ("a", "b"))
    for paramstyle in ("qmark", "named"):
        engine = sa.create_engine("sqlite://", paramstyle=paramstyle)
        with engine.connect() as connection:
            assert list(statement.execute(connection, [(1, 2)])) == [(2, 1, 2)]
        engine.dispose()


def test_hist_2_team_3_the_writer_works_with_a_named_paramstyle_driver(
    history_db: HistoryDb, make_payload: Callable[..., signals.RequestFinished]
) -> None:
    named = sa.create_engine(f"sqlite:///{history_db.path}", paramstyle="named")
    try:
        recorder = HistoryRecorder(named, history_db.clock, usage=UsageWriter())
        payloads = [make_payload() for _ in range(3)]
        recorder.write(payloads)
        recorder.write(payloads[:0])
        with named.connect() as connection:
            ids = connection.execute(sa.text("SELECT request_id FROM request_records ORDER BY id")).scalars()
            assert list(ids) == [payload.request_id for payload in payloads]
            requests = connection.execute(sa.text("SELECT sum(requests) FROM usage_days")).scalar_one()
            assert requests == 3
    finally:
        named.dispose()
