"""What the history tests share besides fixtures."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine

from sublane_core import FakeClock


@dataclass
class HistoryDb:
    """A migrated database: users 1 (admin), 2 (bob) and 3 (carol) with keys 1, 2 and 3 (one each),
    and accounts 1 and 2."""

    engine: Engine
    clock: FakeClock
    path: Path
