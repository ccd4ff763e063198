"""Reading the error code of an OpenAI OAuth or backend answer."""

from __future__ import annotations

import json


def error_code(body: bytes) -> str | None:
    """``error.code``, a string ``error``, or a top-level ``code``; ``None`` when there is none."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return str(error["code"])
    if isinstance(error, str):
        return error
    code = payload.get("code")
    return code if isinstance(code, str) else None
