"""Codex auto-review requests and their parent conversation (REVIEW-1…3).

When auto-review is on, the Codex CLI sends each approval review as its own thread (what it sends is
captured in ``tests/fixtures/codex_auto_review_0.171.0.json``):

- ``x-openai-subagent: guardian`` (``review`` for ``/review``), also ``subagent_kind`` in the
  ``x-codex-turn-metadata`` JSON;
- the parent thread in ``x-codex-parent-thread-id``, in the turn metadata's ``parent_thread_id``
  and in ``client_metadata["x-codex-parent-thread-id"]``;
- its own thread in ``thread-id`` (and the turn metadata's ``thread_id``), while ``session-id``
  repeats the **parent's** session and ``prompt_cache_key`` is ``guardian:<parent>``.

Such a request is a conversation of its own, keyed by its own thread, so it never reads or moves
the parent's binding through the shared ``session-id`` (REVIEW-3). Its parent's key is offered to
the scheduler for parent preference only when every source that names a parent names the same
one, and it differs from the child's own thread; otherwise selection is normal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

REVIEW_KINDS = frozenset({"guardian", "review"})
MAX_ID = 128


@dataclass(frozen=True, slots=True)
class ReviewLink:
    """An auto-review request: its own conversation key and, when consistent, its parent's."""

    kind: str
    child_key: str | None
    parent_key: str | None


def _text(value: Any) -> str | None:
    if isinstance(value, str) and 0 < len(value.strip()) <= MAX_ID:
        return value.strip()
    return None


def _turn_metadata(headers: Mapping[str, str], client_metadata: Mapping[str, Any]) -> dict[str, Any]:
    for raw in (headers.get("x-codex-turn-metadata"), client_metadata.get("x-codex-turn-metadata")):
        if isinstance(raw, str) and len(raw) <= 64 * 1024:
            try:
                parsed = json.loads(raw)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                return parsed
    return {}


def _agreed(values: list[str | None]) -> str | None:
    """The one value every source that gives one gives; ``None`` when none does or they conflict."""
    given = {value for value in values if value is not None}
    return given.pop() if len(given) == 1 else None


def review_link(headers: Mapping[str, str], body: Mapping[str, Any]) -> ReviewLink | None:
    """The auto-review link of a request (lower-case header names), or ``None`` for any other request."""
    raw_metadata = body.get("client_metadata")
    client_metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    metadata = _turn_metadata(headers, client_metadata)
    kinds = {
        kind.lower()
        for kind in (
            _text(headers.get("x-openai-subagent")),
            _text(client_metadata.get("x-openai-subagent")),
            _text(metadata.get("subagent_kind")),
        )
        if kind is not None
    }
    review_kinds = kinds & REVIEW_KINDS
    if not review_kinds:
        return None
    kind = min(review_kinds)
    child = _agreed([_text(headers.get("thread-id")), _text(metadata.get("thread_id"))])
    if child is None:
        cache_key = _text(body.get("prompt_cache_key"))
        child = f"review:{cache_key}" if cache_key is not None else None
    parent = _agreed(
        [
            _text(headers.get("x-codex-parent-thread-id")),
            _text(metadata.get("parent_thread_id")),
            _text(client_metadata.get("x-codex-parent-thread-id")),
        ]
    )
    if len(kinds) > 1 or parent is None or parent == child:  # conflicting or ambiguous: no parent
        return ReviewLink(kind, child if child != parent else None, None)
    return ReviewLink(kind, child, parent)
