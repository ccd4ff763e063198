"""The types the OpenAI Chat Completions schema fixes for the fields SubLane reads or translates."""

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

CHAT_FIELDS: Final[dict[str, Field]] = {
    "model": kinds(STRING),
    "messages": arr(kinds(OBJECT)),  # each message is checked where it is translated
    "temperature": kinds(NUMBER, NULL),
    "top_p": kinds(NUMBER, NULL),
    "presence_penalty": kinds(NUMBER, NULL),
    "frequency_penalty": kinds(NUMBER, NULL),
    "n": kinds(INTEGER, NULL),
    "max_tokens": kinds(INTEGER, NULL),
    "max_completion_tokens": kinds(INTEGER, NULL),
    "seed": kinds(INTEGER, NULL),
    "top_logprobs": kinds(INTEGER, NULL),
    "stream": kinds(BOOLEAN, NULL),
    "logprobs": kinds(BOOLEAN, NULL),
    "store": kinds(BOOLEAN, NULL),
    "parallel_tool_calls": kinds(BOOLEAN, NULL),
    "stop": kinds(STRING, ARRAY, NULL),
    "tools": arr(
        obj(
            {
                "type": kinds(STRING),
                "function": obj(
                    {
                        "name": kinds(STRING),
                        "description": kinds(STRING, NULL),
                        "parameters": kinds(OBJECT, NULL),
                        "strict": kinds(BOOLEAN, NULL),
                    },
                    NULL,
                ),
            }
        ),
        NULL,
    ),
    "tool_choice": kinds(STRING, OBJECT, NULL),
    "response_format": kinds(OBJECT, NULL),
    "stream_options": kinds(OBJECT, NULL),
    "user": kinds(STRING, NULL),
    "reasoning_effort": kinds(STRING, NULL),
    "service_tier": kinds(STRING, NULL),
    "prompt_cache_key": kinds(STRING, NULL),
    "verbosity": kinds(STRING, NULL),
    "metadata": kinds(OBJECT, NULL),
    "logit_bias": kinds(OBJECT, NULL),
    "modalities": arr(kinds(STRING), NULL),
}
