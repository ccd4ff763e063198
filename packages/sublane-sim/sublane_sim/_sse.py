"""A small SSE reader for tests and tools that inspect the simulator's streams."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["SseEvent", "parse_sse"]


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One event: its `event:` name (`None` for data-only streams) and decoded `data:` JSON."""

    name: str | None
    data: Any


def parse_sse(text: str) -> list[SseEvent]:
    """Split an SSE body into events; accepts `\\n` and `\\r\\n` line ends, skips comment lines."""
    events: list[SseEvent] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name: str | None = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if data:
            events.append(SseEvent(name, json.loads("\n".join(data))))
    return events
