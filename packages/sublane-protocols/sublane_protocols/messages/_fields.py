"""The types the Anthropic Messages schema fixes for the fields SubLane reads or forwards."""

from __future__ import annotations

from typing import Final

from sublane_protocols._fields import (
    ARRAY,
    BOOLEAN,
    INTEGER,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    Field,
    arr,
    kinds,
    obj,
)

MESSAGES_FIELDS: Final[dict[str, Field]] = {
    "model": kinds(STRING),
    "max_tokens": kinds(INTEGER),
    "messages": arr(kinds(OBJECT)),  # a history's items are the upstream's (or translator's) to check
    "system": kinds(STRING, ARRAY, NULL),
    "stop_sequences": arr(kinds(STRING), NULL),
    "stream": kinds(BOOLEAN, NULL),
    "temperature": kinds(NUMBER, NULL),
    "top_p": kinds(NUMBER, NULL),
    "top_k": kinds(INTEGER, NULL),
    "tools": arr(
        obj(
            {
                "name": kinds(STRING),
                "type": kinds(STRING, NULL),
                "description": kinds(STRING, NULL),
                "input_schema": kinds(OBJECT, NULL),
            }
        ),
        NULL,
    ),
    "tool_choice": obj(
        {
            "type": kinds(STRING),
            "name": kinds(STRING, NULL),
            "disable_parallel_tool_use": kinds(BOOLEAN, NULL),
        },
        NULL,
    ),
    "thinking": obj({"type": kinds(STRING), "budget_tokens": kinds(INTEGER, NULL)}, NULL),
    "metadata": obj({"user_id": kinds(STRING, NULL)}, NULL),
    "output_config": obj({"effort": kinds(STRING, NULL), "format": kinds(OBJECT, NULL)}, NULL),
    "service_tier": kinds(STRING, NULL),
    "context_management": kinds(OBJECT, NULL),
    "mcp_servers": kinds(ARRAY, NULL),
    "container": kinds(STRING, OBJECT, NULL),
}
