"""Statements the history writer runs for every batch, compiled once per dialect.

``Connection.execute`` of a Core statement looks up its compiled form, builds the parameters of
every row from dicts and runs the type processors each time: for a batch of ~20 records that was
most of the writer's CPU. A :class:`DriverStatement` is compiled once and run with
``exec_driver_sql`` and plain tuples, so the values must already be what the driver takes (JSON as
text). Errors are still wrapped by SQLAlchemy (``OperationalError`` …) with parameters hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import CursorResult, Dialect
from sqlalchemy.sql.compiler import SQLCompiler


class DriverStatement:
    """``statement`` run with tuples of values for its bound ``names``, in that order."""

    def __init__(self, statement: sa.ClauseElement, names: Sequence[str]) -> None:
        self._statement = statement
        self.names = tuple(names)
        # (dialect, paramstyle) → (SQL text, positions of the values in the driver's order; None: named)
        self._compiled: dict[tuple[str, str], tuple[str, tuple[int, ...] | None]] = {}
        self._in_order = tuple(range(len(self.names)))

    def execute(self, connection: sa.Connection, rows: Sequence[tuple[Any, ...]]) -> CursorResult[Any]:
        """Run the statement once per row (``executemany`` for several rows); ``rows`` not empty."""
        dialect = connection.dialect
        sql, order = self._compiled.get((dialect.name, dialect.paramstyle)) or self._compile(dialect)
        params: list[Any]
        if order is None:  # a named paramstyle
            params = [dict(zip(self.names, row, strict=True)) for row in rows]
        elif order == self._in_order:
            params = list(rows)
        else:
            params = [tuple(row[i] for i in order) for row in rows]
        return connection.exec_driver_sql(sql, params)

    def _compile(self, dialect: Dialect) -> tuple[str, tuple[int, ...] | None]:
        compiled = self._statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)  # what a statement (not DDL) compiles to
        order = None  # a named paramstyle: the values go by name
        if compiled.positional:
            order = tuple(self.names.index(name) for name in compiled.positiontup or ())
        self._compiled[dialect.name, dialect.paramstyle] = (compiled.string, order)
        return compiled.string, order
