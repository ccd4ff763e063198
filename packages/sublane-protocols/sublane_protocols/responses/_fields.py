"""The types the OpenAI Responses API's schema fixes for the fields SubLane reads or forwards."""

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

RESPONSES_FIELDS: Final[dict[str, Field]] = {
    "model": kinds(STRING),
    # the items' own fields are the upstream's (and the translators') to check: a history of
    # hundreds of items would cost more than it protects here
    "input": arr(kinds(OBJECT), STRING),
    "instructions": kinds(STRING, NULL),
    "tools": arr(
        obj(
            {
                "type": kinds(STRING),
                "name": kinds(STRING, NULL),
                "description": kinds(STRING, NULL),
                "parameters": kinds(OBJECT, NULL),
                "strict": kinds(BOOLEAN, NULL),
                "tools": kinds(ARRAY, NULL),
            }
        ),
        NULL,
    ),
    "tool_choice": kinds(STRING, OBJECT, NULL),
    "parallel_tool_calls": kinds(BOOLEAN, NULL),
    "reasoning": obj({"effort": kinds(STRING, NULL), "summary": kinds(STRING, NULL)}, NULL),
    "text": obj({"format": kinds(OBJECT, NULL), "verbosity": kinds(STRING, NULL)}, NULL),
    "stream": kinds(BOOLEAN, NULL),
    "store": kinds(BOOLEAN, NULL),
    "background": kinds(BOOLEAN, NULL),
    "temperature": kinds(NUMBER, NULL),
    "top_p": kinds(NUMBER, NULL),
    "max_output_tokens": kinds(INTEGER, NULL),
    "max_tool_calls": kinds(INTEGER, NULL),
    "top_logprobs": kinds(INTEGER, NULL),
    "previous_response_id": kinds(STRING, NULL),
    "prompt_cache_key": kinds(STRING, NULL),
    "prompt_cache_retention": kinds(STRING, NULL),
    "include": arr(kinds(STRING), NULL),
    "metadata": kinds(OBJECT, NULL),
    "service_tier": kinds(STRING, NULL),
    "truncation": kinds(STRING, NULL),
    "user": kinds(STRING, NULL),
    "safety_identifier": kinds(STRING, NULL),
    "conversation": kinds(STRING, OBJECT, NULL),
    "prompt": kinds(OBJECT, NULL),
}
