"""The types the Gemini API's schema fixes for the fields SubLane reads, translates or forwards."""

from __future__ import annotations

from typing import Final

from sublane_protocols._fields import (
    BOOLEAN,
    INTEGER,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    Field,
    arr,
    field_of,
    kinds,
    obj,
)

_CONTENT = obj({"role": kinds(STRING, NULL), "parts": arr(kinds(OBJECT), NULL)})
_CONTENTS = arr(kinds(OBJECT))  # each content is checked where it is read or translated

GEMINI_FIELDS: Final[dict[str, Field]] = {
    "contents": _CONTENTS,
    "systemInstruction": field_of((OBJECT, STRING, NULL), fields=_CONTENT.fields),
    "generationConfig": obj(
        {
            "temperature": kinds(NUMBER, NULL),
            "topP": kinds(NUMBER, NULL),
            "topK": kinds(NUMBER, NULL),
            "maxOutputTokens": kinds(INTEGER, NULL),
            "candidateCount": kinds(INTEGER, NULL),
            "seed": kinds(INTEGER, NULL),
            "presencePenalty": kinds(NUMBER, NULL),
            "frequencyPenalty": kinds(NUMBER, NULL),
            "stopSequences": arr(kinds(STRING), NULL),
            "responseMimeType": kinds(STRING, NULL),
            "responseSchema": kinds(OBJECT, NULL),
            "thinkingConfig": obj(
                {
                    "thinkingBudget": kinds(INTEGER, NULL),
                    "includeThoughts": kinds(BOOLEAN, NULL),
                    "thinkingLevel": kinds(STRING, NULL),
                },
                NULL,
            ),
        },
        NULL,
    ),
    "tools": arr(kinds(OBJECT), NULL),
    "toolConfig": kinds(OBJECT, NULL),
    "safetySettings": arr(kinds(OBJECT), NULL),
    "cachedContent": kinds(STRING, NULL),
    "labels": kinds(OBJECT, NULL),
}
