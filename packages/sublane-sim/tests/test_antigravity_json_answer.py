"""A request asking for JSON of a schema gets an object of it, as the model would write (CLIENT-8:
the Gemini CLI's routing classifier parses it)."""

from __future__ import annotations

import json
from typing import Any

from sublane_sim._antigravity_events import _answer_text

CLASSIFIER = {
    "responseMimeType": "application/json",
    "responseJsonSchema": {
        "type": "OBJECT",
        "properties": {
            "complexity_reasoning": {"type": "STRING"},
            "complexity_score": {"type": "INTEGER"},
        },
        "required": ["complexity_reasoning", "complexity_score"],
    },
}


def test_client_8_a_json_schema_request_is_answered_with_an_object_of_the_schema() -> None:
    text = _answer_text(None, CLASSIFIER)
    assert text is not None
    answer: dict[str, Any] = json.loads(text)
    assert isinstance(answer["complexity_reasoning"], str) and isinstance(answer["complexity_score"], int)


def test_scripted_text_and_plain_requests_keep_their_text() -> None:
    assert _answer_text("scripted", CLASSIFIER) == "scripted"
    assert _answer_text(None, {"temperature": 1}) is None
    assert _answer_text(None, {"response_mime_type": "text/plain"}) is None
