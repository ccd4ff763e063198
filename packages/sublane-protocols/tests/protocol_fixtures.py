"""The checked-in fixtures of the protocol tests, and the golden files they are compared with.

- ``fixtures/real_client_requests.json``: requests captured from Codex CLI 0.171, Claude Code 2.1
  and Gemini CLI 0.61 (a copy of ``shared/real-clients``).
- ``fixtures/responses_streams/*.json``: Codex Responses event sequences from sublane-sim
  (``fixtures/capture_responses_streams.py`` regenerates them; the tests never run the simulator).
- ``fixtures/golden/**``: the expected outputs. ``SUBLANE_UPDATE_GOLDENS=1`` rewrites them from
  the current code instead of comparing; review the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "golden"
UPDATE_GOLDENS = os.environ.get("SUBLANE_UPDATE_GOLDENS") == "1"

#: Every captured stream, listed so a lost fixture file fails instead of shrinking the suite.
STREAMS = (
    "plain_text",
    "reasoning_summary_text",
    "parallel_function_calls",
    "incomplete_max_tokens",
    "failed_mid_stream",
    "error_event_mid_stream",
    "cut_before_terminal",
)
TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def load_json(relative: str) -> Any:
    return json.loads((FIXTURES / relative).read_text(encoding="utf-8"))


def real_client_requests() -> dict[str, Any]:
    captures: dict[str, Any] = load_json("real_client_requests.json")
    return captures


def stream_fixture(name: str) -> dict[str, Any]:
    fixture: dict[str, Any] = load_json(f"responses_streams/{name}.json")
    return fixture


def stream_events(name: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = stream_fixture(name)["events"]
    return events


def check_golden(relative: str, actual: Any) -> None:
    """Compare ``actual`` with the golden file (or rewrite it under ``SUBLANE_UPDATE_GOLDENS=1``)."""
    path = GOLDEN / relative
    if UPDATE_GOLDENS:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_json(actual) + "\n", encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"no golden file {path}; run with SUBLANE_UPDATE_GOLDENS=1 and review it")
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert actual == expected, f"differs from {path} (SUBLANE_UPDATE_GOLDENS=1 rewrites it)"


def render_json(value: Any, level: int = 0, key: str | None = None) -> str:
    """Indented JSON that keeps short values and every stream frame on one line, for review."""
    compact = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, dict | list) or len(compact) <= 100:
        return compact
    pad = "  " * (level + 1)
    if isinstance(value, list):
        items = [pad + _render_item(item, level + 1, key) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * level + "]"
    fields = [f"{pad}{json.dumps(k)}: {render_json(v, level + 1, k)}" for k, v in value.items()]
    return "{\n" + ",\n".join(fields) + "\n" + "  " * level + "}"


def _render_item(item: Any, level: int, key: str | None) -> str:
    # Items of a "frames" list are frames: one line each, whatever their length.
    if key == "frames":
        return json.dumps(item, ensure_ascii=False)
    return render_json(item, level)
