"""``sublane serve`` with history recording switched off, to price that feature (S1).

The gateway has no setting for it (yet), so this bench-only launcher replaces
``HistoryRecorder.record`` with a no-op before the app is built: the ``request_finished`` signal
still fires, but nothing is queued for or written by the recorder thread. Everything else is
exactly ``sublane serve``. Usage: ``python bench/serve_variant.py serve --port N``.
"""

from __future__ import annotations

from sublane_gateway._cli import main
from sublane_history import HistoryRecorder


def _no_record(self: HistoryRecorder, payload: object) -> None:
    """Drop the record (history off)."""


if __name__ == "__main__":
    HistoryRecorder.record = _no_record  # type: ignore[method-assign,assignment]
    main()
